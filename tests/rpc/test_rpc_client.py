"""The client against four real daemons: data across all nodes, metadata,
several client processes on one shared file, and the bulk phase; once over
shared memory and once over tcp."""

from __future__ import annotations

import os
import random
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import CHUNK, Cluster

from analysis.loaders.traces import load_traces

pytestmark = pytest.mark.timeout(120)
MIB = 1024 * 1024


def payload(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def test_nodes_ping_and_stats(cluster: Cluster) -> None:
    with cluster.client() as c:
        assert [n["node_name"] for n in c.nodes] == cluster.names
        assert [n["node_id"] for n in c.nodes] == [0, 1, 2, 3]
        assert c.chunk_size == CHUNK
        assert all(c.ping(i) > 0 for i in range(4))
        s = c.stats(3)
        assert s["node_name"] == "node3"
        with pytest.raises(ValueError, match="node_id"):
            c.ping(4)
    assert not c.connected
    with pytest.raises(OSError, match=r"ping failed: .*the client is disconnected"):
        c.ping(0)


@pytest.mark.parametrize(
    ("offset", "size"),
    [
        (0, 1),
        (0, CHUNK),
        (1, CHUNK),
        (CHUNK - 7, 13),
        (12_345, 300_001),
        (5 * CHUNK + 3, 1_048_573),
    ],
)
def test_files_spanning_all_nodes_read_back_byte_for_byte(
    cluster: Cluster, offset: int, size: int
) -> None:
    path = f"span/{cluster.transport}-{offset}-{size}"
    data = payload(size, size)
    with cluster.client() as c:
        c.mkdir("span", parents=True)
        h = c.create(path)
        assert c.write(h, offset, data) == size
        assert c.read(h, offset, size) == data
        # Unaligned sub-ranges, a hole before the data, and reads past the end.
        assert c.read(h, offset + 3, size // 2) == data[3 : 3 + size // 2]
        assert c.read(h, 0, offset) == bytes(offset)
        assert c.read(h, offset + size - 1, 10) == data[-1:]
        assert c.read(h, offset + size + 5, 10) == b""
        assert c.stat(path)["size"] == offset + size
        c.close(h)
        # Where the chunks landed: each one in exactly one daemon's data directory.
        logical = bytes(offset) + data
        ino = c.stat(path)["ino"]
        stored = backing_files(cluster, ino)
        first, chunks = offset // CHUNK, (offset + size + CHUNK - 1) // CHUNK
        holders = {}
        for k in range(first, chunks):
            piece = logical[k * CHUNK : (k + 1) * CHUNK]
            found = [
                node for node, held in stored.items() if held[k * CHUNK :][: len(piece)] == piece
            ]
            assert len(found) == 1, (k, found)
            holders[k] = found[0]
        if chunks - first >= 4:
            assert set(holders.values()) == {0, 1, 2, 3}, holders
        c.unlink(path)
        assert backing_files(cluster, ino) == {}


def test_a_reused_read_buffer_never_shows_an_earlier_reads_bytes(cluster: Cluster) -> None:
    # Chunk k of a file lives on daemon (start + k) % 4: chunk 2 is a hole in
    # a backing file (chunk 6 lies beyond it), chunk 3's daemon holds nothing
    # of the file (ENOENT), chunk 4 ends 10 bytes in, chunk 5's backing file
    # ends before it. Each read follows one that filled the client's buffer.
    path = f"reuse/{cluster.transport}"
    full = payload(7, 2 * CHUNK)
    with cluster.client() as c:
        c.mkdir("reuse", parents=True)
        h = c.create(path)
        c.write(h, 0, full)
        c.write(h, 4 * CHUNK, b"x" * 10)
        c.write(h, 6 * CHUNK, b"end")
        for offset, expected in (
            (2 * CHUNK, bytes(2 * CHUNK)),
            (4 * CHUNK, b"x" * 10 + bytes(2 * CHUNK - 10)),
        ):
            assert c.read(h, 0, 2 * CHUNK) == full
            assert c.read(h, offset, 2 * CHUNK) == expected
        c.close(h)
        c.unlink(path)


def backing_files(cluster: Cluster, ino: int) -> dict[int, bytes]:
    """The backing file of the file with id ``ino`` in each daemon's data directory that
    has one (named ``@`` and the id in 16 hex digits, docs/NAMESPACE.md)."""
    name = f"@{ino:016x}"
    found = {}
    for index, node in enumerate(cluster.names):
        files = [p for p in (cluster.root / "data" / node).rglob(name) if p.is_file()]
        assert len(files) <= 1, files
        if files:
            found[index] = files[0].read_bytes()
    return found


def test_metadata_operations(cluster: Cluster) -> None:
    root = f"meta-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(root)
        c.mkdir(f"{root}/sub")
        with pytest.raises(FileNotFoundError, match=f"{root}/missing"):
            c.open(f"{root}/missing", os.O_RDONLY)
        with pytest.raises(FileNotFoundError, match=f"{root}/missing"):
            c.stat(f"{root}/missing")
        h = c.create(f"{root}/a", exclusive=True)
        with pytest.raises(FileExistsError, match=f"{root}/a"):
            c.create(f"{root}/a", exclusive=True)
        with pytest.raises(FileExistsError, match=f"{root}/a"):
            c.open(f"{root}/a", os.O_CREAT | os.O_EXCL | os.O_RDWR)
        c.write(h, 0, payload(1, 3 * CHUNK + 17))
        c.close(h)
        h2 = c.open(f"{root}/sub/b", os.O_CREAT | os.O_WRONLY)
        c.write(h2, 10, b"x")
        with pytest.raises(OSError, match="write-only"):
            c.read(h2, 0, 1)
        c.close(h2)
        with pytest.raises(OSError, match=r"close failed: .*'handle \d+'"):
            c.close(h2)
        a = c.stat(f"{root}/a")
        assert a["size"] == 3 * CHUNK + 17
        assert stat.S_ISREG(a["mode"])
        assert a["mtime_unix_ns"] > 0
        entries = c.readdir(root)
        assert [(e["name"], e["kind"]) for e in entries] == [("a", "file"), ("sub", "dir")]
        assert entries[0]["ino"] == a["ino"]
        assert stat.S_ISDIR(entries[1]["mode"])
        assert [e["name"] for e in c.readdir(f"{root}/sub")] == ["b"]
        assert root in [e["name"] for e in c.readdir()]
        # Shrink across chunk borders, then extend: the new bytes are zeros.
        c.truncate(f"{root}/a", CHUNK + 5)
        assert c.stat(f"{root}/a")["size"] == CHUNK + 5
        h = c.open(f"{root}/a", os.O_RDONLY)
        assert c.read(h, 0, 4 * CHUNK) == payload(1, 3 * CHUNK + 17)[: CHUNK + 5]
        c.truncate(f"{root}/a", 2 * CHUNK)
        assert c.read(h, CHUNK, 2 * CHUNK) == payload(1, 3 * CHUNK + 17)[CHUNK : CHUNK + 5] + bytes(
            CHUNK - 5
        )
        c.close(h)
        with pytest.raises(FileNotFoundError, match=f"{root}/missing"):
            c.truncate(f"{root}/missing", 1)
        # O_TRUNC empties a file.
        h = c.open(f"{root}/a", os.O_RDWR | os.O_TRUNC)
        assert c.stat(f"{root}/a")["size"] == 0
        c.close(h)
        c.unlink(f"{root}/a")
        c.unlink(f"{root}/sub/b")
        with pytest.raises(FileNotFoundError, match=f"{root}/a"):
            c.unlink(f"{root}/a")
        with pytest.raises(FileNotFoundError, match=f"{root}/a"):
            c.stat(f"{root}/a")
        assert [e["name"] for e in c.readdir(root)] == ["sub"]
        c.rmdir(f"{root}/sub")
        c.rmdir(root)
        assert root not in [e["name"] for e in c.readdir()]
        with pytest.raises(ValueError, match="invalid path"):
            c.create("../escape")


WRITER = textwrap.dedent(
    """
    import os, random, sys
    import benchfs_native as bn
    registry, transport, rank, region, pieces = sys.argv[1:6]
    rank, region, pieces = int(rank), int(region), int(pieces)
    data = random.Random(rank).randbytes(region)
    c = bn.Client(registry, 4, transport=transport, connect_deadline_s=60, name=f"writer{rank}")
    h = c.open("shared.bin", os.O_CREAT | os.O_WRONLY)
    step = -(-region // pieces)
    for at in range(0, region, step):
        c.write(h, rank * region + at, data[at : at + step])
    c.close(h)
    c.disconnect()
    """
)


def test_shared_file_written_by_several_processes(cluster: Cluster, tmp_path: Path) -> None:
    region, writers = 100_003, 3
    name = "shared.bin"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                str(cluster.registry),
                cluster.transport,
                str(r),
                str(region),
                "7",
            ],
            stderr=subprocess.PIPE,
        )
        for r in range(writers)
    ]
    for p in procs:
        _, err = p.communicate(timeout=90)
        assert p.returncode == 0, err.decode(errors="replace")
    want = b"".join(payload(r, region) for r in range(writers))
    with cluster.client() as c:
        h = c.open(name, os.O_RDONLY)
        assert c.stat(name)["size"] == len(want)
        assert c.read(h, 0, len(want) + 100) == want
        c.close(h)
        c.unlink(name)


@pytest.mark.core_claim
@pytest.mark.parametrize("file_per_process", [True, False])
def test_run_phase_write_then_verified_read(
    cluster: Cluster, file_per_process: bool, tmp_path: Path
) -> None:
    name = f"ior-{cluster.transport}-{'fpp' if file_per_process else 'shared'}"
    ranks, transfer, block, segments = 3, 40_000, 120_000, 2
    common: dict[str, Any] = dict(
        file_name=name,
        ranks=ranks,
        transfer_size=transfer,
        block_size=block,
        segments=segments,
        file_per_process=file_per_process,
        seed=11,
    )
    progress = tmp_path / "progress.bin"
    with cluster.client(max_in_flight=4, trace_dir=str(tmp_path / "traces"), name="ior") as c:
        for rank in range(ranks):
            r = c.run_phase(phase="write", rank=rank, progress_path=str(progress), **common)
            assert (r["ops"], r["bytes"], r["errors"]) == (6, 6 * transfer, 0)
            assert r["ops_reached"] == r["total_ops"] == 6
            assert not r["stonewalled"]
            lat = np.frombuffer(r["latency_ns"], dtype="<u8")
            assert lat.size == 6 and int(lat.min()) == r["min_ns"] and int(lat.max()) == r["max_ns"]
            assert r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"]
            assert r["start_unix_ns"] < r["end_unix_ns"]
            done = np.frombuffer(progress.read_bytes(), dtype="<u8")
            assert done.tolist() == [6 * transfer, 6]
        size = ranks * block * segments
        if file_per_process:
            assert c.stat(f"{name}.00000001")["size"] == block * segments
        else:
            assert c.stat(name)["size"] == size
        for shift in (0, 1):
            for rank in range(ranks):
                r = c.run_phase(
                    phase="read", rank=rank, verify=True, read_rank_shift=shift, **common
                )
                assert (r["ops"], r["verify_errors"], r["errors"]) == (6, 0, 0), r
                assert r["first_bad_offset"] is None
        # Another seed is other data: every transfer is reported bad.
        bad = c.run_phase(phase="read", rank=1, verify=True, **{**common, "seed": 12})
        assert bad["verify_errors"] == 6
        # The stamps (offset, rank) still match; the seeded template does not.
        assert bad["first_bad_offset"] == (16 if file_per_process else block)
        counters = c.counters()
        assert counters["failed"] == 0 and counters["rpcs"] > 0
    traces = load_traces([tmp_path / "traces"])
    client = traces.kind("rpc_client")
    assert len(client) == counters["rpcs"]
    assert {"lookup", "read", "write"} <= set(client["op"].astype(str))
    assert (client["status"] == 0).all()


def test_run_phase_stonewall_then_wear_out(cluster: Cluster) -> None:
    # 64 transfers of 1 MiB cannot all be written within the 1 ms stonewall (memory copies
    # alone take longer), so the stonewall always stops the phase; how far it got depends on
    # the machine (none at all on a preempted client), the rest is exact.
    ops = 64
    common: dict[str, Any] = dict(
        file_name=f"wear-{cluster.transport}",
        transfer_size=MIB,
        block_size=MIB * ops,
        segments=1,
    )
    with cluster.client() as c:
        first = c.run_phase(phase="write", stonewall_s=0.001, **common)
        reached = first["ops_reached"]
        assert first["stonewalled"] and 0 <= reached < ops, first
        assert first["ops"] == reached
        rest = c.run_phase(phase="write", first_op=reached, **common)
        assert (rest["ops"], rest["ops_reached"], rest["stonewalled"]) == (
            ops - reached,
            ops,
            False,
        )
        some = c.run_phase(phase="read", verify=True, max_ops=10, **common)
        assert (some["ops"], some["ops_reached"], some["verify_errors"]) == (10, 10, 0)
        every = c.run_phase(phase="read", verify=True, **common)
        assert (every["ops"], every["verify_errors"]) == (ops, 0)


def test_close_fsyncs_when_the_daemons_say_fsync_on_close(fresh_cluster: Cluster) -> None:
    fresh_cluster.durability = "fsync_on_close"
    fresh_cluster.start()
    with fresh_cluster.client() as c:
        h = c.create("durable")
        c.write(h, 0, payload(3, 3 * CHUNK))
        c.close(h)
        fsyncs = sum(c.stats(n)["requests"].get("fsync", 0) for n in range(4))
        assert fsyncs == 4
        # A file opened read-only is closed without an fsync.
        h = c.open("durable", os.O_RDONLY)
        c.close(h)
        assert sum(c.stats(n)["requests"].get("fsync", 0) for n in range(4)) == 4
    with fresh_cluster.client(fsync_on_close=False) as c:
        h = c.open("durable", os.O_WRONLY)
        c.write(h, 0, b"x")
        c.close(h)
        assert sum(c.stats(n)["requests"].get("fsync", 0) for n in range(4)) == 4
