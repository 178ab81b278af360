"""A real store's trace parses per docs/TRACE_FORMAT.md, record by record,
with the layout the analysis reads it with (``analysis.loaders.trace_format``)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import numpy as np

import benchfs_native as bn
from analysis.loaders.trace_format import FORMAT_VERSION, MAGIC, read_header
from analysis.loaders.trace_format import RECORD_DTYPE as RECORD


def read_trace(path: Path) -> tuple[dict[str, Any], np.ndarray]:
    raw = path.read_bytes()
    assert raw[:8] == MAGIC
    header = read_header(path)  # checks the prefix, the version and the record size
    assert header.raw["version"] == FORMAT_VERSION == 1
    body = raw[header.data_offset :]
    assert len(body) % header.raw["record_size"] == 0, "whole records only"
    return header.raw, np.frombuffer(body, dtype=RECORD)


def test_store_trace_matches_the_ops_done(tmp_path: Path) -> None:
    assert RECORD.itemsize == 48
    trace_dir = tmp_path / "trace"
    writes, reads = 25, 17
    with bn.ChunkStore(
        str(tmp_path / "store"),
        chunk_size=1 << 20,
        buffer_size=1 << 16,
        trace_dir=str(trace_dir),
        node="node03",
        node_id=3,
    ) as s:
        for i in range(writes):
            s.write("t/file", i * 8192, bytes([i]) * 8192)
        for i in range(reads):
            s.read("t/file", i * 8192, 4096)
        s.stat("t/file")
        s.fsync("t/file")
        s.truncate("t/file", 4096)
        s.write("gone", 0, b"x")
        s.remove("gone")
        with contextlib.suppress(FileNotFoundError):
            s.remove("gone")  # reaches the ring and fails with ENOENT

    files = list(trace_dir.iterdir())
    assert [f.name for f in files] == [f"trace-node03-{os.getpid()}.bftrace"]
    header, rec = read_trace(files[0])
    assert header["format"] == "benchfs-trace"
    assert header["version"] == 1
    assert header["record_size"] == 48
    assert header["node"] == "node03"
    assert header["node_id"] == 3
    assert header["pid"] == os.getpid()
    assert header["start_unix_ns"] > 1_600_000_000 * 10**9
    kinds = {int(k): v["name"] for k, v in header["kinds"].items()}
    ops = {int(k): v for k, v in header["ops"].items()}
    assert kinds == {
        1: "storage_op",
        2: "submit",
        3: "rpc_client",
        4: "rpc_server",
        5: "foreign_signal",
    }
    assert header["kinds"]["2"] == {
        "name": "submit",
        "d0": "sqes",
        "d1": "in_flight",
        "d2": "submit_ns",
    }

    kind = np.array([kinds[k] for k in rec["kind"]])
    storage = rec[kind == "storage_op"]
    submit = rec[kind == "submit"]
    assert len(storage) + len(submit) == len(rec)
    names = np.array([ops[o] for o in storage["op"]])
    counts = {n: int((names == n).sum()) for n in set(names)}
    assert counts == {
        "write": writes + 1,
        "read": reads,
        "stat": 1,
        "fsync": 1,
        "truncate": 1,
        "remove": 2,
    }
    # Every storage op was submitted exactly once.
    assert int(submit["d0"].sum()) == len(storage)
    assert (submit["op"] == 0).all()
    assert (rec["node"] == 3).all()
    # Status: 0, except the second remove (ENOENT).
    failed = storage[storage["status"] != 0]
    assert len(failed) == 1
    assert ops[int(failed["op"][0])] == "remove"
    assert int(failed["status"][0]) == 2
    assert int(storage["bytes"][names == "write"].sum()) == writes * 8192 + 1
    assert int(storage["bytes"][names == "read"].sum()) == reads * 4096
    write_offsets = sorted(storage["d2"][names == "write"].tolist())
    assert write_offsets == [0] + [i * 8192 for i in range(writes)]
    assert (storage["d0"] > 0).all(), "latency_ns"
    assert np.all(np.diff(rec["t_ns"].astype(np.int64)) >= 0)


def test_bench_trace_counts(tmp_path: Path) -> None:
    r = bn.bench_storage(
        str(tmp_path / "data"),
        pattern="randwrite",
        block_size=4096,
        queue_depth=8,
        total_bytes=1 << 20,
        direct=False,
        trace_dir=str(tmp_path / "trace"),
        node="benchnode",
        node_id=9,
    )
    (f,) = (tmp_path / "trace").iterdir()
    header, rec = read_trace(f)
    assert header["process"] == "bench"
    assert int((rec["kind"] == 1).sum()) == r["ops"] == 256
    assert int(rec["d0"][rec["kind"] == 2].sum()) == r["ops"]
    assert (rec["node"] == 9).all()
