"""How the cost of a cluster's set-up grows with its number of daemons.

For each size N, on this machine (the local launcher, small buffer pools),
the steps every `benchfs run` takes are timed one by one:

- ``spawn_s``: the launcher starting N daemon processes;
- ``membership_s``: from the last spawn until all N are in the registry
  (the members file written after it is the hosts' bench's step,
  ``benchfs.bench.scale_hosts``);
- ``read_registry_s``: reading the N registry records once;
- ``connect_s``: one client connecting to all N (a session with each);
- ``first_rpc_s``: that client's first RPC (a ping) to every node, in turn;
- ``placement_s``: placing every chunk of 64 files of 1,024 chunks;
- ``stop_s``: stopping the N daemons gracefully.

Growth is the exponent ``k`` of ``t ~ N**k``, fitted over every size
(1.0: linear). A client must talk to every node once, so its
connect and first RPCs are linear at best; anything above ~1.2 grows faster
than linear and would not hold at 1,024 nodes. The extrapolation to 1,024
nodes scales the largest size's time by that exponent. On one machine the
daemons share its cores, so per-node costs here are upper bounds of a real
cluster's; the exponent is what to read.
"""

from __future__ import annotations

import math
import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import benchfs_native
from benchfs.bench.scope import bench_scope
from benchfs.cluster.hostfile import resolve_nodes
from benchfs.cluster.lifecycle import SHM_DIR, Lifecycle
from benchfs.config.plan import apply_overrides, load_config
from benchfs.launchers.select import launcher_for
from benchfs.run.cluster import STOP_MARGIN_S, Cluster, Scratch
from benchfs.run.observer import RunObserver

DEFAULT_SIZES = (8, 16, 32, 64)
PLACEMENT_FILES = 64
PLACEMENT_CHUNKS_PER_FILE = 1024
TARGET_NODES = 1024
STEPS = (
    "spawn_s",
    "membership_s",
    "read_registry_s",
    "connect_s",
    "first_rpc_s",
    "placement_s",
    "stop_s",
)
# Above this exponent a step grows faster than linearly in N.
SUPERLINEAR = 1.2


@dataclass(frozen=True)
class ScaleRow:
    """The timed steps of one cluster size, in seconds."""

    nodes: int
    spawn_s: float
    membership_s: float
    read_registry_s: float
    connect_s: float
    first_rpc_s: float
    placement_s: float
    stop_s: float

    def step(self, name: str) -> float:
        return float(getattr(self, name))


@dataclass(frozen=True)
class Growth:
    """How one step grows from the smallest to the largest size."""

    step: str
    exponent: float
    at_target_s: float

    @property
    def superlinear(self) -> bool:
        return self.exponent > SUPERLINEAR


@dataclass(frozen=True)
class ScaleReport:
    rows: list[ScaleRow]
    growth: list[Growth]
    buffer_pool_size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [asdict(row) for row in self.rows],
            "growth": [
                {**asdict(g), "superlinear": g.superlinear, "target_nodes": TARGET_NODES}
                for g in self.growth
            ],
            "buffer_pool_size": self.buffer_pool_size,
            "cpus": os.cpu_count(),
        }


class _StepClock(RunObserver):
    """Times the cluster's own steps from the messages it reports."""

    def __init__(self, on_progress: Callable[[str], None]) -> None:
        self.on_progress = on_progress
        self.marks: dict[str, float] = {}

    def step(self, message: str) -> None:
        self.marks[message.split(" ", 1)[0]] = time.perf_counter()
        self.on_progress(message)


def growth_of(rows: Sequence[ScaleRow], step: str) -> Growth:
    """The exponent of ``t ~ N**k`` of one step over the rows (``fit``)."""
    return fit([(row.nodes, row.step(step)) for row in rows], step)


def fit(points: Sequence[tuple[int, float]], step: str, target: int = TARGET_NODES) -> Growth:
    """The exponent of ``t ~ N**k``, a least-squares fit of log t on log N
    over every (N, t) point (1.0 where one size only), and t at ``target``
    scaled from the largest N by it."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(t, 1e-9)) for _, t in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    exponent = (
        sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
        if spread > 0
        else 1.0
    )
    last_n, last_t = max(points)
    return Growth(step, round(exponent, 2), last_t * (target / last_n) ** exponent)


def _measure(
    nodes: int,
    buffer_pool_size: int,
    root: Path,
    env: Mapping[str, str],
    on_progress: Callable[[str], None],
) -> ScaleRow:
    overrides = {
        "cluster.local_nodes": nodes,
        "cluster.data_dir": str(root / "data"),
        "cluster.buffer_pool_size": buffer_pool_size,
        "cluster.deadlines.register_s": max(60.0, nodes * 2.0),
    }
    config = apply_overrides(load_config(None), overrides).base
    hosts = resolve_nodes(None, env, local_nodes=nodes)
    launcher = launcher_for(config.launcher, None)
    token = secrets.token_hex(6)
    scratch_root = root / f".benchfs-{token}"
    shm_dir = SHM_DIR / f"benchfs-{token}" if SHM_DIR.is_dir() else None
    scratch = Scratch(token, scratch_root, shm_dir)
    clock = _StepClock(on_progress)
    grace = config.cluster.deadlines.shutdown_s + STOP_MARGIN_S
    with Lifecycle(grace_s=grace, shm_prefix=f"benchfs-{token}") as life:
        scratch_root.mkdir(parents=True)
        life.remove_at_exit(scratch_root)
        cluster = Cluster(life, scratch, clock, env, sys.executable)
        try:
            cluster.start(config, hosts, launcher)
            group = cluster.group
            assert group is not None
            spawn_s = clock.marks["waiting"] - clock.marks["starting"]
            membership_s = clock.marks["publishing"] - clock.marks["waiting"]
            t = time.perf_counter()
            records = benchfs_native.read_registry(str(group.registry_dir))
            read_registry_s = time.perf_counter() - t
            if len(records) != nodes:
                raise RuntimeError(f"{len(records)} of {nodes} daemons in the registry")
            on_progress(f"{nodes} daemons: connecting")
            t = time.perf_counter()
            client = benchfs_native.Client(
                str(group.registry_dir), nodes, transport=config.cluster.transport, name="scale"
            )
            connect_s = time.perf_counter() - t
            try:
                t = time.perf_counter()
                for node_id in range(nodes):
                    client.ping(node_id)
                first_rpc_s = time.perf_counter() - t
            finally:
                client.disconnect()
            files = [(f"scale/file.{i}", PLACEMENT_CHUNKS_PER_FILE) for i in range(PLACEMENT_FILES)]
            t = time.perf_counter()
            loads = benchfs_native.chunk_loads(files, nodes)
            placement_s = time.perf_counter() - t
            if len(loads) != nodes:
                raise RuntimeError(f"placement gave {len(loads)} loads for {nodes} nodes")
            t = time.perf_counter()
            cluster.stop()
            stop_s = time.perf_counter() - t
        finally:
            cluster.stop()
    return ScaleRow(
        nodes=nodes,
        spawn_s=spawn_s,
        membership_s=membership_s,
        read_registry_s=read_registry_s,
        connect_s=connect_s,
        first_rpc_s=first_rpc_s,
        placement_s=placement_s,
        stop_s=stop_s,
    )


def run_scale_bench(
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    buffer_pool_size: int = 8 << 20,
    directory: Path | None = None,
    env: Mapping[str, str] | None = None,
    on_progress: Callable[[str], None] = lambda _: None,
) -> ScaleReport:
    """Each size in turn, smallest first, in a fresh directory under ``directory``."""
    env = dict(os.environ if env is None else env)
    rows = []
    with bench_scope(directory, "benchfs-scale-") as (_, root):
        for nodes in sorted(set(sizes)):
            on_progress(f"{nodes} daemons")
            rows.append(_measure(nodes, buffer_pool_size, root, env, on_progress))
    return ScaleReport(rows, [growth_of(rows, step) for step in STEPS], buffer_pool_size)
