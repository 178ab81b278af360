"""Turn figures into plain-word findings: absolute limits, relative checks, cross-node outliers.

Absolute limits and lopsided O_DIRECT read/write make a node "degraded".
Cross-node outliers, long tails and unstable bandwidth are warnings (they
deserve a look; on a busy machine they also happen to healthy nodes) unless
extreme: an outlier ten times worse than the median, a p99 200x the p50.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchfs.health.layers import LayerSample, busy_with_others
from benchfs.health.model import Finding, Level, NodeAssessment, NodeMeasurement, NodeStatus
from benchfs.health.robust import Bad, robust_outliers
from benchfs.health.thresholds import Thresholds

NS_PER_MS = 1e6
MIB = 1 << 20
MB = 1e6
# O_DIRECT tests: the device moves what the test moves (buffered ones write back later).
_CONTENTION_TESTS = ("seq_write_direct", "seq_read_direct", "rand_rw")


@dataclass(frozen=True)
class Limit:
    test: str
    metric: str  # a key of TestResult.metrics or .iostat; "rw_iops" is read + write IOPS
    threshold: str  # a Thresholds field
    bad: Bad
    label: str
    scale: float = 1.0  # metric units per threshold unit (ns per ms for latencies)


LIMITS: tuple[Limit, ...] = (
    Limit("seq_write_direct", "write_bw_MiB_s", "seq_write_min_MiB_s", "low", "write bandwidth"),
    Limit("seq_read_direct", "read_bw_MiB_s", "seq_read_min_MiB_s", "low", "read bandwidth"),
    Limit("seq_write_buffered", "write_bw_MiB_s", "seq_write_min_MiB_s", "low", "write bandwidth"),
    Limit("seq_read_buffered", "read_bw_MiB_s", "seq_read_min_MiB_s", "low", "read bandwidth"),
    Limit("rand_rw", "rw_iops", "rand_iops_min", "low", "read+write IOPS"),
    Limit("rand_rw", "read_p99_ns", "rand_read_p99_max_ms", "high", "read p99 latency", NS_PER_MS),
    Limit(
        "rand_rw", "write_p99_ns", "rand_write_p99_max_ms", "high", "write p99 latency", NS_PER_MS
    ),
    Limit("fsync_write", "write_iops", "fsync_iops_min", "low", "fsync'd write IOPS"),
    Limit("fsync_write", "sync_p99_ns", "fsync_p99_max_ms", "high", "fsync p99 latency", NS_PER_MS),
    Limit("metadata", "create_ops_s", "create_min_ops_s", "low", "file creates per second"),
    Limit("metadata", "stat_ops_s", "stat_min_ops_s", "low", "stats per second"),
    Limit("metadata", "delete_ops_s", "delete_min_ops_s", "low", "deletes per second"),
    # Awaits judged on small I/O only: 1 MiB requests at QD8 queue by design; the
    # sequential tests' awaits are compared across nodes instead.
    Limit("rand_rw", "r_await_ms", "r_await_max_ms", "high", "device read await"),
    Limit("rand_rw", "w_await_ms", "w_await_max_ms", "high", "device write await"),
)

# Tests whose latency tails and bandwidth stability say something about the device
# (buffered writes measure the page cache).
_TAIL_CHECKS = (
    ("seq_write_direct", "write"),
    ("seq_read_direct", "read"),
    ("rand_rw", "read"),
    ("rand_rw", "write"),
    ("fsync_write", "sync"),
)
# Metrics compared across nodes, with the side that is bad.
CROSS_NODE_METRICS: tuple[tuple[str, str, Bad], ...] = (
    ("seq_write_direct", "write_bw_MiB_s", "low"),
    ("seq_read_direct", "read_bw_MiB_s", "low"),
    ("seq_write_buffered", "write_bw_MiB_s", "low"),
    ("seq_read_buffered", "read_bw_MiB_s", "low"),
    ("rand_rw", "rw_iops", "low"),
    ("rand_rw", "read_p99_ns", "high"),
    ("rand_rw", "write_p99_ns", "high"),
    ("fsync_write", "write_iops", "low"),
    ("metadata", "create_ops_s", "low"),
    ("seq_read_direct", "r_await_ms", "high"),
    ("seq_write_direct", "w_await_ms", "high"),
)


def metric_value(node: NodeMeasurement, test: str, metric: str) -> float | None:
    if metric == "rw_iops":
        reads = node.metric(test, "read_iops")
        writes = node.metric(test, "write_iops")
        return None if reads is None and writes is None else (reads or 0.0) + (writes or 0.0)
    return node.metric(test, metric)


def assess_node(node: NodeMeasurement, thresholds: Thresholds) -> list[Finding]:
    """Findings of one node on its own (no comparison with other nodes)."""
    if node.error:
        return [Finding("degraded", "", "", f"could not run: {node.error}", kind="error")]
    findings = [
        Finding(
            "degraded", test.name, "", f"{test.title}: could not run: {test.error}", kind="error"
        )
        for test in node.tests
        if test.error
    ]
    findings += _absolute(node, thresholds)
    findings += _asymmetry(node, thresholds)
    findings += _tails(node, thresholds)
    findings += _contention(node)
    if node.filesystem and node.filesystem.get("network"):
        findings.append(
            Finding(
                "warn",
                "",
                "filesystem",
                node.filesystem_text or "network file system",
                kind="network",
            )
        )
    return findings


def assess_nodes(nodes: Sequence[NodeMeasurement], thresholds: Thresholds) -> list[NodeAssessment]:
    """Assess every node, plus cross-node outliers when there are three or more."""
    per_node = {node.node: assess_node(node, thresholds) for node in nodes}
    for finding_node, finding in cross_node_findings(nodes, thresholds):
        per_node[finding_node].append(finding)
    assessments = []
    for node in nodes:
        findings = per_node[node.node]
        status: NodeStatus
        if node.error or any(test.error for test in node.tests):
            status = "error"
        elif any(finding.level == "degraded" for finding in findings):
            status = "degraded"
        else:
            status = "healthy"
        assessments.append(NodeAssessment(node.node, status, tuple(findings)))
    return assessments


def cross_node_findings(
    nodes: Sequence[NodeMeasurement], thresholds: Thresholds
) -> list[tuple[str, Finding]]:
    ran = [node for node in nodes if not node.error]
    found: list[tuple[str, Finding]] = []
    for test, metric, bad in CROSS_NODE_METRICS:
        values = {
            node.node: value
            for node in ran
            if (value := metric_value(node, test, metric)) is not None
        }
        for outlier in robust_outliers(
            values,
            f"{test}.{metric}",
            bad,
            z_limit=thresholds.outlier_z,
            min_relative=thresholds.outlier_min_relative,
        ):
            message = f"cross-node outlier: {outlier.describe()}"
            degraded = outlier.times_worse >= thresholds.outlier_degraded_factor
            level: Level = "degraded" if degraded else "warn"
            finding = Finding(
                level, test, metric, message, outlier.value, outlier.median, kind="outlier"
            )
            found.append((outlier.node, finding))
    return found


def overall_status(assessments: Sequence[NodeAssessment]) -> NodeStatus:
    statuses = {assessment.status for assessment in assessments}
    if "error" in statuses:
        return "error"
    return "degraded" if "degraded" in statuses else "healthy"


def exit_code(assessments: Sequence[NodeAssessment]) -> int:
    """0 healthy, 1 degraded, 2 some node could not run."""
    return {"healthy": 0, "degraded": 1, "error": 2}[overall_status(assessments)]


def _absolute(node: NodeMeasurement, thresholds: Thresholds) -> list[Finding]:
    findings = []
    for limit in LIMITS:
        value = metric_value(node, limit.test, limit.metric)
        if value is None:
            continue
        bound = float(getattr(thresholds, limit.threshold))
        scaled = bound * limit.scale
        shown = value / limit.scale
        unit = _unit(limit.threshold)
        if limit.bad == "low" and value < scaled:
            findings.append(
                Finding(
                    "degraded",
                    limit.test,
                    limit.metric,
                    f"{limit.label} {shown:,.1f} {unit} is below the minimum {bound:g} {unit} "
                    f"({limit.threshold})",
                    value,
                    scaled,
                    kind="limit",
                )
            )
        elif limit.bad == "high" and value > scaled:
            findings.append(
                Finding(
                    "degraded",
                    limit.test,
                    limit.metric,
                    f"{limit.label} {shown:,.1f} {unit} is above the maximum {bound:g} {unit} "
                    f"({limit.threshold})",
                    value,
                    scaled,
                    kind="limit",
                )
            )
    return findings


def _asymmetry(node: NodeMeasurement, thresholds: Thresholds) -> list[Finding]:
    findings = []
    pairs = (
        ("seq_write_direct", "seq_read_direct", "O_DIRECT"),
        ("seq_write_buffered", "seq_read_buffered", "buffered"),
    )
    for write_test, read_test, mode in pairs:
        write = node.metric(write_test, "write_bw_MiB_s")
        read = node.metric(read_test, "read_bw_MiB_s")
        if not write or not read:
            continue
        if write >= read:
            ratio, slow, fast, test, metric = write / read, "reads", "writes", read_test, "read"
        else:
            ratio, slow, fast, test, metric = read / write, "writes", "reads", write_test, "write"
        if ratio <= thresholds.asymmetry_ratio_warn:
            continue
        # Buffered figures include the page cache: never more than a warning.
        degraded = ratio > thresholds.asymmetry_ratio and mode == "O_DIRECT"
        level: Level = "degraded" if degraded else "warn"
        limit = thresholds.asymmetry_ratio if degraded else thresholds.asymmetry_ratio_warn
        slow_bw, fast_bw = min(read, write), max(read, write)
        message = (
            f"{mode} {slow} ({slow_bw:,.1f} MiB/s) are {ratio:,.1f}x slower than {fast} "
            f"({fast_bw:,.1f} MiB/s); limit {limit:g}x"
        )
        findings.append(
            Finding(level, test, f"{metric}_bw_MiB_s", message, ratio, limit, kind="asymmetry")
        )
    return findings


def _tails(node: NodeMeasurement, thresholds: Thresholds) -> list[Finding]:
    findings = []
    for test, prefix in _TAIL_CHECKS:
        p50 = node.metric(test, f"{prefix}_p50_ns")
        p99 = node.metric(test, f"{prefix}_p99_ns")
        if p50 and p99:
            ratio = p99 / p50
            if ratio > thresholds.tail_ratio_warn:
                level: Level = "degraded" if ratio > thresholds.tail_ratio_degraded else "warn"
                message = (
                    f"{prefix} p99 {p99 / NS_PER_MS:,.2f} ms is {ratio:,.0f}x the p50 "
                    f"{p50 / NS_PER_MS:,.3f} ms: a long tail of slow operations"
                )
                findings.append(
                    Finding(level, test, f"{prefix}_p99_ns", message, ratio, kind="tail")
                )
        variation = node.metric(test, f"{prefix}_bw_cv")
        if variation is not None and variation > thresholds.bw_cv_warn:
            message = (
                f"{prefix} bandwidth is unstable over time: stdev is {variation:.0%} of the mean "
                f"(limit {thresholds.bw_cv_warn:.0%}, bw_cv_warn)"
            )
            findings.append(
                Finding("warn", test, f"{prefix}_bw_cv", message, variation, kind="unstable")
            )
    return findings


def _contention(node: NodeMeasurement) -> list[Finding]:
    """The device busy with I/O that is not the test's (iostat's total well
    above the test's own bandwidth), in the tests whose I/O goes straight to it."""
    findings = []
    for test in node.tests:
        if test.name not in _CONTENTION_TESTS:
            continue
        device = test.iostat.get("device_MiB_s")
        own = sum(test.metrics.get(f"{op}_bw_MiB_s", 0.0) for op in ("read", "write"))
        if device is None or not own:
            continue
        busy = busy_with_others(
            LayerSample(ops=0, device_mb_s=device * MIB / MB, job_mb_s=own * MIB / MB,
                        util_pct=test.iostat.get("util_pct")),
            "the test's",
        )  # fmt: skip
        if busy is not None:
            message = f"{test.title}: {busy.lines[0]}: contention from outside the test"
            findings.append(Finding("warn", test.name, "device_MiB_s", message, device,
                                    kind="contention"))  # fmt: skip
    return findings


def _unit(threshold: str) -> str:
    if threshold.endswith("_MiB_s"):
        return "MiB/s"
    if threshold.endswith("_ms"):
        return "ms"
    if threshold.endswith("_ops_s"):
        return "ops/s"
    return "IOPS"
