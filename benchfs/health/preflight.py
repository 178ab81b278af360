"""Preflight: a few seconds of the workload's own I/O pattern on every node at once.

Not one sequential file (a slow-read node passed such a check in the field):
fio writes, then reads back, several files round-robin with the workload's
transfer size, each phase capped in time, with iostat watching the device.
The exclusion policy then decides on the figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchfs.cluster.hostfile import Host
from benchfs.health.fanout import run_on_nodes
from benchfs.health.model import NodeMeasurement
from benchfs.health.plan import Plan, PlanStep
from benchfs.health.policy import PolicyMetric, PolicyResult, decide_exclusions
from benchfs.health.thresholds import Thresholds
from benchfs.launchers.base import Launcher
from benchfs.launchers.programs import PreflightArgs
from benchfs.tools.fio import FioJob

NS_PER_MS = 1e6
MIB = 1024 * 1024

PREFLIGHT_METRICS: tuple[PolicyMetric, ...] = (
    PolicyMetric("write_bw_MiB_s", "low", "seq_write_min_MiB_s"),
    PolicyMetric("read_bw_MiB_s", "low", "seq_read_min_MiB_s"),
    PolicyMetric("write_p99_ns", "high", "rand_write_p99_max_ms", NS_PER_MS),
    PolicyMetric("read_p99_ns", "high", "rand_read_p99_max_ms", NS_PER_MS),
    PolicyMetric("w_await_ms", "high", "w_await_max_ms"),
    PolicyMetric("r_await_ms", "high", "r_await_max_ms"),
)


@dataclass(frozen=True)
class PreflightPattern:
    """The workload's I/O pattern, scaled down to a few seconds."""

    transfer_size: int = MIB
    files: int = 8
    file_size: int = 16 * MIB
    iodepth: int = 4
    direct: bool = True
    runtime_s: float = 3.0

    def plan(self) -> Plan:
        common: dict[str, Any] = {
            "bs": self.transfer_size,
            "iodepth": self.iodepth,
            "size": self.files * self.file_size,
            "nrfiles": self.files,
            "direct": self.direct,
            # runtime without time_based: stop at the cap or when the files are done.
            "extra": {
                "filename_format": "benchfs-preflight.$filenum",
                "runtime": f"{int(self.runtime_s * 1000)}ms",
            },
        }
        write = FioJob(name="preflight_write", rw="write", unlink=False, **common)
        read = FioJob(name="preflight_read", rw="read", unlink=True, **common)
        steps = (
            PlanStep("preflight_write", "Preflight write", "The workload's writes.", write),
            PlanStep("preflight_read", "Preflight read", "The workload's reads.", read),
        )
        return Plan(steps=steps, runtime_s=self.runtime_s, space_bytes=self.files * self.file_size)

    def worker_args(self) -> PreflightArgs:
        """What the diagnose worker on each node is told (it builds ``plan()`` from it)."""
        return PreflightArgs(self.transfer_size, self.files, self.file_size, self.runtime_s)


@dataclass(frozen=True)
class PreflightResult:
    nodes: tuple[NodeMeasurement, ...]
    policy: PolicyResult

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": [node.to_dict() for node in self.nodes],
            "policy": self.policy.to_dict(),
        }


def preflight_values(node: NodeMeasurement) -> dict[str, float]:
    """The policy's per-node figures from a preflight measurement."""
    values: dict[str, float] = {}
    for test, direction, await_key in (
        ("preflight_write", "write", "w_await_ms"),
        ("preflight_read", "read", "r_await_ms"),
    ):
        for metric in (f"{direction}_bw_MiB_s", f"{direction}_p99_ns", await_key):
            value = node.metric(test, metric)
            if value is not None:
                values[metric] = value
    return values


def node_errors(nodes: Sequence[NodeMeasurement]) -> dict[str, str]:
    errors = {}
    for node in nodes:
        if node.error:
            errors[node.node] = node.error
        else:
            failed = [f"{test.name}: {test.error}" for test in node.tests if test.error]
            if failed:
                errors[node.node] = "; ".join(failed)
    return errors


def preflight(
    hosts: Sequence[Host],
    launcher: Launcher,
    directory: Path,
    pattern: PreflightPattern,
    *,
    thresholds: Thresholds | None = None,
    deadline_s: float | None = None,
    env: Mapping[str, str] | None = None,
    raw_dir: Path | None = None,
    scratch: str | None = None,
) -> PreflightResult:
    """Run the pattern on every host at once and apply the exclusion policy;
    ``scratch`` names the workers' test directory in each node's directory."""
    thresholds = thresholds or Thresholds()
    deadline = deadline_s if deadline_s is not None else pattern.runtime_s * 4 + 30
    nodes = run_on_nodes(
        hosts,
        launcher,
        directory,
        preflight=pattern.worker_args(),
        deadline_s=deadline,
        env=env,
        raw_dir=raw_dir,
        scratch=scratch,
    )
    errors = node_errors(nodes)
    values = {node.node: preflight_values(node) for node in nodes if node.node not in errors}
    policy = decide_exclusions(values, PREFLIGHT_METRICS, thresholds, errors=errors)
    return PreflightResult(nodes=tuple(nodes), policy=policy)
