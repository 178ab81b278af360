"""``benchfs diagnose`` as a library: measure one node or all nodes, then assess.

One node: the plan runs in this process. Several nodes: a worker per node
(``python -m benchfs.node.diagnose``) through the launcher (see ``fanout``),
then this process assesses them all
together, flags cross-node outliers and says which nodes a preflight policy
would exclude.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from analysis.diagnose import DiagnoseDocument, DiagnoseNode, DiagnosePolicy, NodeStatus
from benchfs.cluster.hostfile import Host
from benchfs.health.assess import assess_nodes, exit_code, metric_value, overall_status
from benchfs.health.fanout import failed_node, run_on_nodes
from benchfs.health.measure import measure_node
from benchfs.health.model import NodeAssessment, NodeMeasurement
from benchfs.health.plan import Plan
from benchfs.health.policy import PolicyMetric, PolicyResult, decide_exclusions
from benchfs.health.preflight import NS_PER_MS, node_errors
from benchfs.health.reachable import unreachable_hosts
from benchfs.health.thresholds import Thresholds
from benchfs.launchers.base import Launcher

# The diagnose figures the exclusion policy would look at (named test.metric).
DIAGNOSE_POLICY_METRICS: tuple[PolicyMetric, ...] = (
    PolicyMetric("seq_write_direct.write_bw_MiB_s", "low", "seq_write_min_MiB_s"),
    PolicyMetric("seq_read_direct.read_bw_MiB_s", "low", "seq_read_min_MiB_s"),
    PolicyMetric("rand_rw.read_p99_ns", "high", "rand_read_p99_max_ms", NS_PER_MS),
    PolicyMetric("rand_rw.write_p99_ns", "high", "rand_write_p99_max_ms", NS_PER_MS),
    PolicyMetric("seq_read_direct.r_await_ms", "high", "r_await_max_ms"),
    PolicyMetric("seq_write_direct.w_await_ms", "high", "w_await_max_ms"),
)
QUICK_DEADLINE_S = 60.0  # Slurm kills a HealthCheckProgram at 60 s
FULL_DEADLINE_S = 600.0


@dataclass(frozen=True)
class DiagnoseReport:
    directory: str
    quick: bool
    thresholds: Thresholds
    nodes: tuple[NodeMeasurement, ...]
    assessments: tuple[NodeAssessment, ...]
    policy: PolicyResult | None
    started_at: str
    finished_at: str

    @property
    def status(self) -> NodeStatus:
        return overall_status(self.assessments)

    @property
    def exit_code(self) -> int:
        return exit_code(self.assessments)

    def document(self) -> DiagnoseDocument:
        by_node = {assessment.node: assessment for assessment in self.assessments}
        return DiagnoseDocument(
            status=self.status,
            exit_code=self.exit_code,
            directory=self.directory,
            quick=self.quick,
            started_at=self.started_at,
            finished_at=self.finished_at,
            thresholds=self.thresholds.to_dict(),
            nodes=tuple(
                DiagnoseNode(
                    node=node.node,
                    status=by_node[node.node].status,
                    findings=by_node[node.node].findings,
                    measurement=node,
                )
                for node in self.nodes
            ),
            preflight_policy=DiagnosePolicy(**self.policy.to_dict()) if self.policy else None,
        )


def build_report(
    directory: Path,
    nodes: Sequence[NodeMeasurement],
    thresholds: Thresholds,
    *,
    quick: bool,
    started_at: str,
) -> DiagnoseReport:
    assessments = assess_nodes(nodes, thresholds)
    policy = None
    if len(nodes) > 1:
        errors = node_errors(nodes)
        values = {node.node: policy_values(node) for node in nodes if node.node not in errors}
        policy = decide_exclusions(values, DIAGNOSE_POLICY_METRICS, thresholds, errors=errors)
    return DiagnoseReport(
        directory=str(directory),
        quick=quick,
        thresholds=thresholds,
        nodes=tuple(nodes),
        assessments=tuple(assessments),
        policy=policy,
        started_at=started_at,
        finished_at=_now(),
    )


def policy_values(node: NodeMeasurement) -> dict[str, float]:
    values = {}
    for metric in DIAGNOSE_POLICY_METRICS:
        test, name = metric.name.split(".", 1)
        value = metric_value(node, test, name)
        if value is not None:
            values[metric.name] = value
    return values


def diagnose_local(
    directory: Path,
    *,
    quick: bool,
    thresholds: Thresholds,
    node_name: str | None = None,
    plan: Plan | None = None,
    raw_dir: Path | None = None,
    scratch: str | None = None,
) -> DiagnoseReport:
    started = _now()
    node = measure_node(
        directory, quick=quick, node=node_name, plan=plan, raw_dir=raw_dir, scratch=scratch
    )
    return build_report(directory, [node], thresholds, quick=quick, started_at=started)


def diagnose_cluster(
    hosts: Sequence[Host],
    launcher: Launcher,
    directory: Path,
    *,
    quick: bool,
    thresholds: Thresholds,
    deadline_s: float | None = None,
    env: Mapping[str, str] | None = None,
    raw_dir: Path | None = None,
) -> DiagnoseReport:
    started = _now()
    deadline = deadline_s or (QUICK_DEADLINE_S if quick else FULL_DEADLINE_S)
    # A host the launcher cannot reach is a failed node named with the launcher's reason;
    # the others are measured.
    unreachable = {} if launcher.capabilities.runs_here else {
        item.host: item.reason for item in unreachable_hosts(hosts, launcher, env=env)
    }  # fmt: skip
    measured = run_on_nodes(
        [host for host in hosts if host.name not in unreachable],
        launcher,
        directory,
        quick=quick,
        deadline_s=deadline,
        env=env,
        raw_dir=raw_dir,
    )
    by_name = {node.node: node for node in measured}
    nodes = [
        by_name[host.name]
        if host.name in by_name
        else failed_node(
            host.name, f"cannot reach it through {launcher.name}: {unreachable[host.name]}"
        )
        for host in hosts
    ]
    return build_report(directory, nodes, thresholds, quick=quick, started_at=started)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
