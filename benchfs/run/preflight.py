"""Steps 2-3 of the flow (docs/ARCHITECTURE.md): check the nodes before the
daemons start and leave out the slow ones, with the evidence recorded.

``preflight_step`` is the one place `benchfs run` calls for this: the
workload's own pattern through fio on every node at once, in the directory
the daemons will use, then the health policy (strong evidence only, never
below the minimum node count). Every decision goes into the manifest.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.layout import RunLayout
from analysis.manifest import PreflightDecision, PreflightNotRun, PreflightRecord, PreflightRun
from benchfs.cluster.hostfile import Host
from benchfs.cluster.private import make_private_dir
from benchfs.cluster.processes import kill_group, start_process, wait_process
from benchfs.config.model import PreflightConfig, RunConfig
from benchfs.errors import LaunchError
from benchfs.health.fanout import node_directory, node_scratch
from benchfs.health.policy import Decision
from benchfs.health.preflight import PreflightPattern, preflight, preflight_values
from benchfs.health.thresholds import Thresholds
from benchfs.launchers.base import Launcher
from benchfs.results.manifest import ExcludedHost
from benchfs.run.cluster import data_base

MIB = 1024 * 1024
PREFLIGHT_FILES = 8
PREFLIGHT_FILE_SIZE = 16 * MIB
MKDIR_DEADLINE_S = 30.0


@dataclass(frozen=True)
class PreflightOutcome:
    """The hosts to run on, those left out and why, and the manifest record."""

    hosts: list[Host]
    record: PreflightRecord
    excluded: list[ExcludedHost] = field(default_factory=list)
    # One line per decision worth showing: every exclusion and every flagged node kept.
    lines: list[str] = field(default_factory=list)


def health_thresholds(preflight_config: PreflightConfig) -> Thresholds:
    """The health policy's limits from ``[preflight]``; the rest keep their defaults.

    - ``thresholds.outlier_factor`` -> ``outlier_degraded_factor`` (how many
      times worse than the median node, for every metric),
    - ``thresholds.max_await_ms`` -> ``r_await_max_ms`` and ``w_await_max_ms``,
    - ``min_nodes`` -> ``min_nodes`` (never exclude below it).
    """
    limits = preflight_config.thresholds
    return dataclasses.replace(
        Thresholds(),
        outlier_degraded_factor=limits.outlier_factor,
        r_await_max_ms=limits.max_await_ms,
        w_await_max_ms=limits.max_await_ms,
        min_nodes=preflight_config.min_nodes,
    )


def preflight_pattern(config: RunConfig) -> PreflightPattern:
    """The workload's transfer size over several files, ``runtime_s`` split over write and read."""
    transfer = config.workload.transfer_size
    file_size = max(PREFLIGHT_FILE_SIZE // transfer, 1) * transfer
    return PreflightPattern(
        transfer_size=transfer,
        files=PREFLIGHT_FILES,
        file_size=file_size,
        runtime_s=config.preflight.runtime_s / 2,
    )


def _evidence(decision: Decision, values: Mapping[str, float]) -> dict[str, Any]:
    """The node's measured figures, and what the policy found against it."""
    evidence: dict[str, Any] = {
        "values": dict(values),
        "items": [dataclasses.asdict(item) for item in decision.evidence],
    }
    if decision.error:
        evidence["error"] = decision.error
    return evidence


def _scratch_paths(
    directory: Path, hosts: Sequence[Host], launcher: Launcher, scratch: str
) -> list[Path]:
    """The workers' scratch directories, one per node."""
    return [node_directory(directory, h, launcher) / node_scratch(scratch, h) for h in hosts]


def _prepare_local_dirs(directory: Path, hosts: Sequence[Host]) -> Callable[[], None]:
    """Create ``directory`` and its per-node subdirectories; return what removes the new ones."""
    created = [
        parent for parent in (*reversed(directory.parents), directory) if not parent.exists()
    ]
    make_private_dir(directory)
    for host in hosts:
        node_dir = directory / host.name
        if not node_dir.exists():
            make_private_dir(node_dir)
            created.append(node_dir)

    def undo() -> None:
        for path in reversed(created):
            with suppress(OSError):  # not empty or already gone: leave it
                path.rmdir()

    return undo


def _make_remote_dirs(
    directory: Path, hosts: Sequence[Host], launcher: Launcher, env: Mapping[str, str] | None
) -> None:
    """``mkdir -p`` the data dir on every host (the daemons would create it anyway), so a
    first run does not take a missing directory for a failed node; a failure here shows
    as that node's preflight error."""
    started = []
    with ExitStack() as files:
        for host in hosts:
            # umask 077: the directories it creates are this user's only.
            mkdir = ["sh", "-c", 'umask 077 && exec mkdir -p -- "$1"', "sh", str(directory)]
            argv = launcher.command(host, mkdir, env=env)
            # Read only for what the launcher says when it cannot finish.
            output = files.enter_context(tempfile.TemporaryFile())
            with suppress(LaunchError):
                started.append(
                    start_process(
                        argv,
                        name=f"mkdir on {host.name}",
                        stdout=output,
                        stderr=subprocess.STDOUT,
                        stuck_when=launcher.stuck_output(),
                    )
                )
        deadline = time.monotonic() + MKDIR_DEADLINE_S
        for process in started:
            try:
                wait_process(process, max(deadline - time.monotonic(), 0.1))
            except LaunchError:
                kill_group(process)


def preflight_step(
    config: RunConfig,
    hosts: Sequence[Host],
    launcher: Launcher,
    run_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    scratch: str | None = None,
    claim: Callable[[Path], object] = lambda path: path,
    clean_nodes: Callable[[list[Path]], object] = lambda paths: None,
) -> PreflightOutcome:
    """Decide which hosts the run uses; raw output goes to ``run_dir/preflight``.

    The workers' test files go in ``<node's directory>/<scratch>-<node>``: each such
    path is ``claim``ed first (the run's record, so that ``benchfs clean``
    removes it should the run be killed). A worker killed outright (a
    launcher passing on a stop kills it before it has cleaned up) leaves its
    files: on this machine they are removed after the preflight whatever the
    outcome; on other hosts by ``clean_nodes`` when a worker failed or the
    preflight was interrupted."""
    settings = config.preflight
    if not settings.enabled:
        disabled = PreflightNotRun(reason="preflight.enabled is false")
        return PreflightOutcome(hosts=list(hosts), record=disabled)
    # Where the workload's data goes: the daemons' data dir or a posix: target.
    posix = config.workload.posix_path
    directory = Path(posix) if posix else data_base(config)
    pattern = preflight_pattern(config)
    thresholds = health_thresholds(settings)
    undo = None
    leftovers = [] if scratch is None else _scratch_paths(directory, hosts, launcher, scratch)
    for path in leftovers:
        claim(path)
    if launcher.capabilities.runs_here:
        undo = _prepare_local_dirs(directory, hosts)
    else:
        _make_remote_dirs(directory, hosts, launcher, env)
    try:
        result = preflight(
            hosts,
            launcher,
            directory,
            pattern,
            thresholds=thresholds,
            env=env,
            raw_dir=RunLayout(run_dir).preflight_dir,
            scratch=scratch,
        )
    except BaseException:
        if leftovers and not launcher.capabilities.runs_here:
            clean_nodes(leftovers)
        raise
    else:
        failed = any(node.error for node in result.nodes)
        if failed and leftovers and not launcher.capabilities.runs_here:
            clean_nodes(leftovers)
    finally:
        if launcher.capabilities.runs_here:
            for path in leftovers:
                shutil.rmtree(path, ignore_errors=True)
        if undo is not None:
            undo()
    policy = result.policy
    measured = {node.node: preflight_values(node) for node in result.nodes}
    apply = settings.exclude_slow
    excluded_names = set(policy.excluded) if apply else set()
    excluded: list[ExcludedHost] = []
    decisions: list[PreflightDecision] = []
    lines: list[str] = []
    for decision in policy.decisions:
        flagged = decision.excluded or bool(decision.evidence) or decision.error is not None
        if decision.node in excluded_names:
            action = "excluded"
            excluded.append(
                ExcludedHost(
                    name=decision.node,
                    reason=decision.reason,
                    evidence=_evidence(decision, measured.get(decision.node, {})),
                )
            )
            lines.append(f"preflight: {decision.node} excluded: {decision.reason}")
        elif decision.excluded:
            action = "kept (flagged)"
            lines.append(
                f"preflight: {decision.node} kept (preflight.exclude_slow is false), "
                f"would be excluded: {decision.reason}"
            )
        elif decision.error is not None:
            action = "kept (unchecked)"
            lines.append(f"preflight: {decision.node} {decision.reason}")
        else:
            action = "kept (flagged)" if flagged else "kept"
            if flagged:
                lines.append(f"preflight: {decision.node} kept: {decision.reason}")
        decisions.append(
            PreflightDecision(
                node=decision.node,
                decision=action,
                policy_excluded=decision.excluded,
                reason=decision.reason,
                evidence=_evidence(decision, measured.get(decision.node, {})),
            )
        )
    kept = [host for host in hosts if host.name not in excluded_names]
    left_out = f", {len(excluded)} excluded" if excluded else ""
    lines.append(f"preflight: {len(kept)} nodes kept{left_out}")
    record = PreflightRun(
        exclude_slow=apply,
        directory=str(directory),
        per_node_directories={
            host.name: str(node_directory(directory, host, launcher)) for host in hosts
        },
        pattern=dataclasses.asdict(pattern),
        thresholds=thresholds.to_dict(),
        minimum_nodes=policy.minimum_nodes,
        kept=[host.name for host in kept],
        excluded=sorted(excluded_names),
        decisions=decisions,
        nodes=[node.to_dict() for node in result.nodes],
    )
    return PreflightOutcome(hosts=kept, excluded=excluded, record=record, lines=lines)
