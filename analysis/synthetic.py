"""Write trace files in the engine's format: for tests of the readers and for
the analysis speed benchmark, where 10 million realistic events are needed
without a cluster. The engine itself is the authority on the format; this
writer follows docs/TRACE_FORMAT.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from analysis.layout import TRACE_SUFFIX, RunLayout
from analysis.loaders.trace_format import FORMAT_VERSION, MAGIC, PREFIX, RECORD_DTYPE, RECORD_SIZE

KINDS: dict[str, dict[str, str]] = {
    "1": {"name": "storage_op", "d0": "latency_ns", "d1": "queue_ns", "d2": "offset"},
    "2": {"name": "submit", "d0": "sqes", "d1": "in_flight", "d2": "submit_ns"},
    "3": {"name": "rpc_client", "d0": "send_ns", "d1": "wait_ns", "d2": "total_ns"},
    "4": {"name": "rpc_server", "d0": "queue_ns", "d1": "storage_ns", "d2": "reply_ns"},
}
OPS: dict[str, str] = {
    "1": "write", "2": "read", "3": "fsync", "4": "remove", "5": "stat", "6": "truncate",
    "7": "create", "8": "lookup", "9": "unlink", "10": "readdir", "11": "ping",
    "12": "stats", "13": "shutdown", "14": "mkdir", "15": "rmdir", "16": "check_parent",
    "17": "link", "18": "setattr", "19": "statfs", "20": "symlink", "21": "readlink",
    "22": "link_count",
}  # fmt: skip
KIND_ID = {spec["name"]: int(key) for key, spec in KINDS.items()}
OP_ID = {name: int(key) for key, name in OPS.items()}
MS = 1_000_000


def trace_header(
    node: str, node_id: int, pid: int, start_unix_ns: int, process: str = "daemon"
) -> dict[str, Any]:
    return {
        "format": "benchfs-trace",
        "version": FORMAT_VERSION,
        "record_size": RECORD_SIZE,
        "node": node,
        "node_id": node_id,
        "pid": pid,
        "process": process,
        "start_unix_ns": start_unix_ns,
        "clock": "monotonic, t_ns counts from start_unix_ns",
        "kinds": KINDS,
        "ops": OPS,
    }


def empty_records(count: int) -> npt.NDArray[np.void]:
    return np.zeros(count, dtype=RECORD_DTYPE)


def write_trace(path: Path, header: dict[str, Any], records: npt.NDArray[np.void]) -> Path:
    """Write one trace file: prefix, JSON header, records."""
    text = json.dumps(header).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        stream.write(PREFIX.pack(MAGIC, FORMAT_VERSION, len(text)))
        stream.write(text)
        records.astype(RECORD_DTYPE, copy=False).tofile(stream)
    return path


def generate_run_traces(
    directory: Path,
    events: int,
    *,
    nodes: int = 16,
    duration_s: float = 300.0,
    slow_nodes: Sequence[int] = (3, 11),
    start_unix_ns: int = 1_763_800_000_000_000_000,
    seed: int = 0,
) -> list[Path]:
    """One daemon trace per node with a realistic mix of every event kind.

    Healthy storage ops take ~0.65 ms; on ``slow_nodes`` most reads take
    seconds while writes stay normal (the pattern seen in the field).
    """
    rng = np.random.default_rng(seed)
    per_node = np.full(nodes, events // nodes)
    per_node[: events % nodes] += 1
    paths = []
    for node_id in range(nodes):
        records = _node_records(rng, int(per_node[node_id]), node_id, nodes, duration_s,
                                node_id in slow_nodes)  # fmt: skip
        header = trace_header(f"node{node_id:02d}", node_id, 10_000 + node_id, start_unix_ns)
        path = directory / f"trace-node{node_id:02d}-{10_000 + node_id}{TRACE_SUFFIX}"
        paths.append(write_trace(path, header, records))
    return paths


def _node_records(
    rng: np.random.Generator, count: int, node_id: int, nodes: int, duration_s: float, slow: bool
) -> npt.NDArray[np.void]:
    records = empty_records(count)
    records["t_ns"] = np.sort(rng.integers(0, int(duration_s * 1e9), count, dtype=np.uint64))
    kind = rng.choice(
        np.array([KIND_ID["storage_op"], KIND_ID["submit"], KIND_ID["rpc_client"],
                  KIND_ID["rpc_server"]], dtype=np.uint8),
        size=count, p=[0.4, 0.2, 0.2, 0.2],
    )  # fmt: skip
    records["kind"] = kind
    is_read = rng.random(count) < 0.5
    op = np.where(is_read, OP_ID["read"], OP_ID["write"]).astype(np.uint8)
    records["op"] = np.where(kind == KIND_ID["submit"], 0, op)
    records["bytes"] = np.where(kind == KIND_ID["submit"], 0, 1 << 20)
    latency = rng.lognormal(np.log(0.65 * MS), 0.25, count)
    if slow:
        slow_read = is_read & (rng.random(count) < 0.9)
        latency = np.where(slow_read, rng.lognormal(np.log(2500 * MS), 0.5, count), latency)
    peers = rng.integers(0, nodes, count)
    records["node"] = np.where(
        (kind == KIND_ID["rpc_client"]) | (kind == KIND_ID["rpc_server"]), peers, node_id
    )
    sqes = np.minimum(rng.geometric(0.45, count), 64)
    in_flight = sqes + rng.integers(0, 16, count)
    send = rng.lognormal(np.log(0.02 * MS), 0.3, count)
    queue = rng.lognormal(np.log(0.01 * MS), 0.5, count)
    storage = np.where(kind == KIND_ID["rpc_server"], latency, 0)
    d0 = np.select(
        [kind == KIND_ID["storage_op"], kind == KIND_ID["submit"], kind == KIND_ID["rpc_client"]],
        [latency, sqes, send], queue,
    )  # fmt: skip
    d1 = np.select(
        [kind == KIND_ID["storage_op"], kind == KIND_ID["submit"], kind == KIND_ID["rpc_client"]],
        [queue, in_flight, latency + 0.05 * MS], storage,
    )  # fmt: skip
    d2 = np.select(
        [kind == KIND_ID["storage_op"], kind == KIND_ID["submit"], kind == KIND_ID["rpc_client"]],
        [rng.integers(0, 1 << 30, count) & ~((1 << 20) - 1), rng.integers(2000, 9000, count),
         send + latency + 0.05 * MS],
        rng.lognormal(np.log(0.015 * MS), 0.3, count),
    )  # fmt: skip
    records["d0"] = d0.astype(np.uint64)
    records["d1"] = d1.astype(np.uint64)
    records["d2"] = d2.astype(np.uint64)
    records["retries"] = np.where(
        (kind == KIND_ID["rpc_client"]) & (rng.random(count) < 0.01), 1, 0
    )
    return records


def write_run_dir(
    root: Path,
    *,
    manifest: dict[str, Any] | None = None,
    phases: list[dict[str, Any]] | None = None,
    tool_outputs: dict[str, str] | None = None,
) -> Path:
    """Write the non-trace files of a results directory (``analysis.layout``).

    ``tool_outputs`` maps relative paths (``iostat/node00.json``) to raw text.
    """
    root.mkdir(parents=True, exist_ok=True)
    paths = RunLayout(root)
    document = {"data_version": 1, "label": root.name, **(manifest or {})}
    paths.manifest.write_text(json.dumps(document, indent=2))
    paths.workload_dir.mkdir(exist_ok=True)
    summary = {"phases": phases or [{"phase": "write"}, {"phase": "read"}]}
    paths.summary.write_text(json.dumps(summary, indent=2))
    for relative, text in (tool_outputs or {}).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
