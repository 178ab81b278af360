"""Builders of real analysis inputs for the analysis, CLI and notebook tests.

Traces come from the engine (a real ChunkStore with trace_dir) when the
extension is built, else from the format-following writer; iostat and fio
output comes from running the real tools briefly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analysis.synthetic import (
    KIND_ID,
    OP_ID,
    empty_records,
    generate_run_traces,
    trace_header,
    write_run_dir,
    write_trace,
)

REPO = Path(__file__).resolve().parents[1]


def engine_trace_support() -> str | None:
    """None when the engine can write traces here, else the reason it cannot."""
    try:
        import benchfs_native
    except ImportError as error:
        return f"benchfs_native is not importable: {error}"
    store = getattr(benchfs_native, "ChunkStore", None)
    if store is None:
        return "benchfs_native has no ChunkStore (the extension is not built)"
    return None


def write_engine_traces(
    trace_dir: Path, data_dir: Path, node: str = "node00", node_id: int = 0
) -> int:
    """Write and read back data through a real ChunkStore that records a trace."""
    import benchfs_native

    block = os.urandom(256 * 1024)
    count = 0
    with benchfs_native.ChunkStore(
        str(data_dir), trace_dir=str(trace_dir), node=node, node_id=node_id, buffered=True
    ) as store:
        for index in range(8):
            store.write(f"file{index % 2}", index * len(block), block)
            count += 1
        for index in range(8):
            assert store.read(f"file{index % 2}", index * len(block), len(block)) == block
            count += 1
        store.fsync("file0")
    return count


def capture_iostat() -> str | None:
    """Two 1-second reports of real ``iostat -x -t -o JSON``, or None without iostat."""
    if shutil.which("iostat") is None:
        return None
    env = {**os.environ, "S_TIME_FORMAT": "ISO", "LC_ALL": "C"}
    done = subprocess.run(
        ["iostat", "-x", "-t", "-o", "JSON", "-d", "1", "2"],
        capture_output=True, text=True, check=True, env=env, timeout=30,
    )  # fmt: skip
    return done.stdout


def capture_fio(work: Path) -> str | None:
    """A one-second real fio run (4 KiB random reads) as JSON, or None without fio."""
    if shutil.which("fio") is None:
        return None
    work.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["fio", "--name=preflight", f"--directory={work}", "--size=8m", "--bs=4k",
         "--rw=randread", "--ioengine=psync", "--runtime=1", "--time_based=0",
         "--output-format=json"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout


def record(**fields: Any) -> np.void:
    """One trace record with the given fields (kind and op by name)."""
    row = empty_records(1)
    for name, value in fields.items():
        if name == "kind":
            value = KIND_ID[value]
        elif name == "op":
            value = OP_ID[value] if isinstance(value, str) else value
        row[name] = value
    return row


def write_records(path: Path, rows: list[dict[str, Any]], *, node: str = "n0", node_id: int = 0,
                  pid: int = 100, start_unix_ns: int = 1_000_000_000_000) -> Path:  # fmt: skip
    records = empty_records(len(rows))
    for index, fields in enumerate(rows):
        records[index] = record(**fields)[0]
    return write_trace(path, trace_header(node, node_id, pid, start_unix_ns), records)


def now_ns() -> int:
    return time.time_ns()


def build_run(root: Path, iostat: str, fio: str, *, slow_nodes: tuple[int, ...] = (3,),
              config: dict[str, object] | None = None, bw: float = 1000.0) -> Path:  # fmt: skip
    """A 4-node run around now: 40,000 events in the engine format (with node03's reads
    slow) plus, when the engine is built, a trace the engine itself wrote on node00;
    real iostat and fio output.
    """
    start = time.time_ns() - 100 * 1_000_000_000
    generate_run_traces(root / "traces", 40_000, nodes=4, slow_nodes=slow_nodes,
                        start_unix_ns=start, duration_s=200.0)  # fmt: skip
    if engine_trace_support() is None:
        data = root.parent / f"{root.name}-engine-data"
        write_engine_traces(root / "traces", data, node="node00", node_id=0)
        shutil.rmtree(data)
    return write_run_dir(
        root,
        manifest={  # the shape benchfs.results.manifest writes
            "command_line": ["benchfs", "run", "--nodes", "hosts.txt"],
            "hosts": {
                "given": [{"name": f"node{i:02d}", "slots": 2} for i in range(5)],
                "used": [{"name": f"node{i:02d}", "slots": 2} for i in range(4)],
                "excluded": [
                    {
                        "name": "node04",
                        "reason": "preflight read p99 40x the median",
                        "evidence": {"read_p99_ms": 812.0},
                    }
                ],
            },
            "effective_config": config
            or {
                "storage": {"fsync": "on_close", "direct": True},
                "workload": {"transfer_size": "1MiB"},
            },
            "start_time": "2026-11-22T16:00:00Z",
            "status": "ok",
        },
        phases=[
            {
                "phase": "write",
                "bwMaxMIB": bw * 1.1,
                "bwMinMIB": bw * 0.9,
                "bwMeanMIB": bw,
                "OPsMean": bw,
                "MeanTime": 2.0,
                "latency_p99_s": 0.01,
            },
            {
                "phase": "read",
                "bwMaxMIB": bw / 4,
                "bwMinMIB": bw / 5,
                "bwMeanMIB": bw / 4.5,
                "OPsMean": bw / 4.5,
                "MeanTime": 9.0,
                "latency_p99_s": 2.5,
            },
        ],
        tool_outputs={
            "iostat/node00.json": iostat,
            "iostat/node03.json": iostat,
            "preflight/node00.fio.json": fio,
            "preflight/summary.json": '{"excluded": []}',
        },
    )


@pytest.fixture(scope="session")
def iostat_text() -> str:
    """Real iostat output, captured once per session."""
    text = capture_iostat()
    if text is None:
        pytest.skip("iostat (sysstat) is not installed")
    return text


@pytest.fixture(scope="session")
def fio_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Real fio output, captured once per session."""
    text = capture_fio(tmp_path_factory.mktemp("fio"))
    if text is None:
        pytest.skip("fio is not installed")
    return text


@pytest.fixture
def run_dir(tmp_path: Path, iostat_text: str, fio_text: str) -> Path:
    """A 4-node results directory whose node03 has slow reads all run long."""
    return build_run(tmp_path / "20261122T160000Z-test", iostat_text, fio_text)
