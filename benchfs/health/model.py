"""What a diagnose run measures and concludes, as JSON-able dataclasses.

A node's measurement travels as JSON from the node (worker mode) to the
coordinator, which assesses it; ``to_dict``/``from_dict`` are exact inverses
(pydantic validates what arrives against the dataclasses themselves).
Metric names carry their unit: ``read_bw_MiB_s``, ``write_p99_ns``,
``create_ops_s``, ``r_await_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from benchfs.errors import ToolError

Level = Literal["ok", "warn", "degraded"]
NodeStatus = Literal["healthy", "degraded", "error"]
DATA_VERSION = 1


@dataclass(frozen=True)
class TestResult:
    """One diagnose test on one node."""

    __test__ = False  # not a pytest class

    name: str
    title: str
    metrics: dict[str, float] = field(default_factory=dict)
    iostat: dict[str, float] = field(default_factory=dict)  # r_await_ms, w_await_ms, util_pct...
    error: str | None = None
    duration_s: float = 0.0


@dataclass(frozen=True)
class NodeMeasurement:
    """Everything one node measured (or why it could not)."""

    node: str
    hostname: str
    directory: str
    quick: bool
    started_at: str
    duration_s: float = 0.0
    filesystem: dict[str, Any] | None = None
    filesystem_text: str = ""
    tests: tuple[TestResult, ...] = ()
    error: str | None = None
    data_version: int = DATA_VERSION

    def test(self, name: str) -> TestResult | None:
        return next((test for test in self.tests if test.name == name), None)

    def metric(self, test: str, metric: str) -> float | None:
        result = self.test(test)
        if result is None or result.error:
            return None
        return result.metrics.get(metric, result.iostat.get(metric))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = _MEASUREMENT.dump_python(self)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str) -> NodeMeasurement:
        try:
            return _MEASUREMENT.validate_python(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the document"
            raise ToolError(
                f"{source}: not a diagnose node result: {where}: {first['msg']}"
            ) from exc


@dataclass(frozen=True)
class Finding:
    """One conclusion, with the figure and the limit that led to it."""

    level: Level
    test: str
    metric: str
    message: str
    value: float | None = None
    limit: float | None = None
    kind: str = ""  # limit, asymmetry, tail, unstable, outlier, error, network, contention

    def label(self) -> str:
        """A few words for a table cell: ``asymmetry seq_read_direct``."""
        return f"{self.kind} {self.test}".strip() if self.test else self.kind


@dataclass(frozen=True)
class NodeAssessment:
    node: str
    status: NodeStatus
    findings: tuple[Finding, ...] = ()

    @property
    def problems(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.level != "ok"]


_MEASUREMENT = TypeAdapter(NodeMeasurement)
