"""``diagnose.json``'s model: a ``benchfs-diagnose`` document, its nodes'
measurements and findings, the thresholds and the preflight policy.

Written by ``benchfs diagnose`` (``benchfs.health.report``, its one writer;
each node's worker prints one of one node), read back by the coordinator
(``benchfs.health.fanout``), the history (``benchfs.history``) and the
report (``analysis.loaders.diagnose``): one model for all, here beneath
them. Metric names carry their unit: ``read_bw_MiB_s``, ``write_p99_ns``,
``create_ops_s``, ``r_await_ms``. What the policy module owns in detail (a
decision's evidence) stays a JSON object inside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from analysis.errors import DataFormatError

KIND: Literal["benchfs-diagnose"] = "benchfs-diagnose"
DATA_VERSION = 1
Level = Literal["ok", "warn", "degraded"]
NodeStatus = Literal["healthy", "degraded", "error"]


class DiagnoseFormatError(DataFormatError, ValueError):
    """A benchfs-diagnose document (or a node's part of one) that cannot be read."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(source, "document", reason)


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
    def from_dict(cls, data: object, source: str) -> NodeMeasurement:
        return _validated(_MEASUREMENT, data, source, "a diagnose node result")


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


_T = TypeVar("_T")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DiagnoseNode(_Record):
    """One node of the document: its verdict, findings and measurement."""

    node: str
    status: NodeStatus
    findings: tuple[Finding, ...]
    measurement: NodeMeasurement


class DiagnosePolicy(_Record):
    """Which nodes a preflight policy would exclude (``benchfs.health.policy``)."""

    kept: tuple[str, ...]
    excluded: tuple[str, ...]
    minimum_nodes: int
    decisions: tuple[dict[str, Any], ...]


class DiagnoseDocument(_Record):
    data_version: int = DATA_VERSION
    kind: Literal["benchfs-diagnose"] = KIND
    status: NodeStatus
    exit_code: int
    directory: str
    quick: bool
    started_at: str
    finished_at: str
    # Every threshold by its key (``benchfs.health.thresholds``); counts stay whole.
    thresholds: dict[str, int | float]
    nodes: tuple[DiagnoseNode, ...]
    preflight_policy: DiagnosePolicy | None

    @classmethod
    def read(cls, data: object, source: str) -> DiagnoseDocument:
        """``data`` (decoded JSON) as a document; an error names ``source`` and the field."""
        return _validated(_DOCUMENT, data, source, f"a {KIND} document")


def _validated(adapter: TypeAdapter[_T], data: object, source: str, what: str) -> _T:
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the document"
        raise DiagnoseFormatError(source, f"not {what}: {where}: {first['msg']}") from exc


_MEASUREMENT = TypeAdapter(NodeMeasurement)
_DOCUMENT = TypeAdapter(DiagnoseDocument)
