"""What a diagnose run measures and concludes.

A node's measurement travels as JSON from the node (worker mode) to the
coordinator, which assesses it; its shape and the document's are
``analysis.diagnose``'s (``to_dict``/``from_dict`` are exact inverses).
Metric names carry their unit: ``read_bw_MiB_s``, ``write_p99_ns``,
``create_ops_s``, ``r_await_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.diagnose import DATA_VERSION, Finding, Level, NodeMeasurement, NodeStatus, TestResult

__all__ = [
    "DATA_VERSION",
    "Finding",
    "Level",
    "NodeAssessment",
    "NodeMeasurement",
    "NodeStatus",
    "TestResult",
]


@dataclass(frozen=True)
class NodeAssessment:
    node: str
    status: NodeStatus
    findings: tuple[Finding, ...] = ()

    @property
    def problems(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.level != "ok"]
