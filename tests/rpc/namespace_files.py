"""Files and names on a real cluster, shared by the namespace tests."""

from __future__ import annotations

import os
import random
from pathlib import Path

from conftest import Cluster

import benchfs_native as bn


def payload(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def names(c: bn.Client, path: str) -> list[str]:
    return [e["name"] for e in c.readdir(path)]


def write_file(c: bn.Client, path: str, data: bytes) -> None:
    h = c.create(path)
    c.write(h, 0, data)
    c.close(h)


def read_file(c: bn.Client, path: str) -> bytes:
    h = c.open(path, os.O_RDONLY)
    try:
        return c.read(h, 0, c.stat(path)["size"] + 1)
    finally:
        c.close(h)


def backing_files(cluster: Cluster, ino: int) -> list[Path]:
    """The backing files of the file with id ``ino`` over the daemons' data dirs."""
    name = f"@{ino:016x}"
    return [p for n in cluster.names if (p := cluster.root / "data" / n / name).exists()]
