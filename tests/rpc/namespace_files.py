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


def owned_by(prefix: str, node: int, nodes: int, stem: str = "n") -> str:
    """The first name ``{prefix}/{stem}{i}`` whose record daemon ``node`` holds."""
    return next(
        p for i in range(1000) if bn.metadata_owner(p := f"{prefix}/{stem}{i}", nodes) == node
    )


#: Bits of a file id below its home daemon's part (namespace/ids.rs).
ID_LOCAL_BITS = 43


def home(ino: int) -> int:
    """The daemon that handed out ``ino`` and keeps its link count."""
    return (ino >> ID_LOCAL_BITS) - 1


def backing_files(cluster: Cluster, ino: int) -> list[Path]:
    """The backing files of the file with id ``ino`` over the daemons' data dirs."""
    name = f"@{ino:016x}"
    return [p for n in cluster.names if (p := cluster.root / "data" / n / name).exists()]
