#!/usr/bin/env python3
"""What the namespace costs (docs/NAMESPACE.md), on local daemons: RPCs and time of

- a readdir of one directory holding `--entries` files (and the creates that fill it);
- a stat of a file, and of a directory, 10 levels deep;
- a create in a directory whose metadata owner is another daemon vs the same one
  (the create's own owner is what the name hashes to; the parent check goes to the
  directory's owner);
- a mkdir, an rmdir of an empty directory and a rename across directories;
- a symlink, readlink, stat, rename across directories and unlink of a symbolic link;
- a hard link across directories, a stat of a file with two names, a chmod of a file
  with two names and of one with one name, an unlink of one of two names and of the
  last name (which removes the data).

Starts `--nodes` daemons (`benchfs daemon --config`, shared memory transport, 1 MiB
chunks) in a temporary directory, runs every measure from one client, prints one JSON
object, and stops the daemons.

Usage: .venv/bin/python benchmarks/namespace_costs.py [--nodes 4] [--entries 100000]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchfs_native as bn


def start(root: Path, nodes: int) -> list[subprocess.Popen[bytes]]:
    procs = []
    for i in range(nodes):
        config = root / f"node{i}.toml"
        config.write_text(
            f'node_name = "node{i}"\nnode_id = {i}\n'
            f'data_dir = "{root}/data/node{i}"\nregistry_dir = "{root}/registry"\n'
            'chunk_size = 1048576\nbuffer_pool_size = 16777216\ntransport = "shm"\n'
        )
        log = (root / f"node{i}.log").open("ab")
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "benchfs", "daemon", "--config", str(config)],
                stdout=log,
                stderr=log,
            )
        )
        log.close()
    return procs


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def measure(c: bn.Client, fn: Callable[[int], object], count: int) -> dict[str, float]:
    """Median and p99 latency (us) and RPCs per call of `count` calls of fn(i)."""
    rpcs0 = c.counters()["rpcs"]
    times = []
    for i in range(count):
        t = time.perf_counter_ns()
        fn(i)
        times.append((time.perf_counter_ns() - t) / 1000)
    times.sort()
    return {
        "calls": count,
        "rpcs_per_call": (c.counters()["rpcs"] - rpcs0) / count,
        "p50_us": round(statistics.median(times), 1),
        "p99_us": round(times[int(0.99 * (count - 1))], 1),
    }


def names_by_owner(parent: str, nodes: int, same: bool, count: int) -> list[str]:
    owner = bn.metadata_owner(parent, nodes)
    out: list[str] = []
    i = 0
    while len(out) < count:
        path = f"{parent}/f{i}"
        if (bn.metadata_owner(path, nodes) == owner) == same:
            out.append(path)
        i += 1
    return out


def run(c: bn.Client, nodes: int, entries: int) -> dict[str, Any]:
    out: dict[str, Any] = {"nodes": nodes}
    c.mkdir("big")
    out["create_to_fill"] = measure(
        c, lambda i: c.close(c.create(f"big/f{i:07}", exclusive=True)), entries
    )
    rpcs0 = c.counters()["rpcs"]
    t = time.perf_counter()
    listed = c.readdir("big")
    out["readdir"] = {
        "entries": len(listed),
        "seconds": round(time.perf_counter() - t, 3),
        "rpcs": c.counters()["rpcs"] - rpcs0,
    }
    assert len(listed) == entries

    deep = "/".join(f"l{i}" for i in range(10))
    c.mkdir(deep, parents=True)
    h = c.create(f"{deep}/file")
    c.write(h, 0, b"x" * 4096)
    c.close(h)
    out["stat_file_10_deep"] = measure(c, lambda _: c.stat(f"{deep}/file"), 2000)
    out["stat_dir_10_deep"] = measure(c, lambda _: c.stat(deep), 2000)

    for where, same in (("other_node", False), ("same_node", True)):
        c.mkdir(f"cr-{where}")
        paths = names_by_owner(f"cr-{where}", nodes, same, 2000)
        out[f"create_parent_on_{where}"] = measure(
            c, lambda i, p=paths: c.close(c.create(p[i], exclusive=True)), len(paths)
        )

    out["mkdir"] = measure(c, lambda i: c.mkdir(f"big/d{i}"), 2000)
    out["rmdir_empty"] = measure(c, lambda i: c.rmdir(f"big/d{i}"), 2000)
    c.mkdir("ren")
    for i in range(2000):
        c.close(c.create(f"ren/a{i}"))
    c.mkdir("ren2")
    out["rename_across_dirs"] = measure(c, lambda i: c.rename(f"ren/a{i}", f"ren2/b{i}"), 2000)
    c.mkdir("links")
    c.mkdir("links2")
    out["symlink"] = measure(c, lambda i: c.symlink(f"../ren2/b{i}", f"links/l{i}"), 2000)
    out["readlink"] = measure(c, lambda i: c.readlink(f"links/l{i}"), 2000)
    out["stat_symlink"] = measure(c, lambda i: c.stat(f"links/l{i}"), 2000)
    out["rename_symlink_across_dirs"] = measure(
        c, lambda i: c.rename(f"links/l{i}", f"links2/m{i}"), 2000
    )
    out["unlink_symlink"] = measure(c, lambda i: c.unlink(f"links2/m{i}"), 2000)
    c.mkdir("hard")
    out["link_across_dirs"] = measure(c, lambda i: c.link(f"ren2/b{i}", f"hard/h{i}"), 2000)
    out["stat_linked_file"] = measure(c, lambda i: c.stat(f"hard/h{i}"), 2000)
    out["chmod_linked_file"] = measure(
        c, lambda i: c.setattr(f"hard/h{i}", mode=0o600 | (i & 0o77)), 2000
    )
    c.mkdir("plain")
    for i in range(2000):
        c.close(c.create(f"plain/p{i}"))
    out["chmod_one_name_file"] = measure(
        c, lambda i: c.setattr(f"plain/p{i}", mode=0o600 | (i & 0o77)), 2000
    )
    out["unlink_one_of_two_names"] = measure(c, lambda i: c.unlink(f"ren2/b{i}"), 2000)
    out["unlink_last_name"] = measure(c, lambda i: c.unlink(f"hard/h{i}"), 2000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--entries", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchfs-nscost-") as tmp:
        root = Path(tmp)
        procs = start(root, args.nodes)
        try:
            names = [f"node{i}" for i in range(args.nodes)]
            with bn.Client(str(root / "registry"), names, transport="shm") as c:
                result = run(c, args.nodes, args.entries)
        finally:
            stop(procs)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
