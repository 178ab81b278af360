"""`benchfs run`: one run, or one run per point of a sweep (docs/ARCHITECTURE.md,
"The flow of benchfs run").

Per point: a results directory (``analysis.layout``) and its manifest (one
``ManifestRecorder``); the preflight step; the daemons (started once and
kept while no daemon setting changes); the workload ranks under MPI,
watched together with the daemons, with iostat on every host; the summary;
the report. Everything started lives in one ``Lifecycle``: on an error,
Ctrl-C or SIGTERM, processes are stopped and the run's temporary files
(configs, registry, data dirs, shared memory) removed before the error
surfaces. What a point leaves behind is its results directory.

Files of one invocation (``<token>`` = pid and a random tag):
- ``<results_dir>/.benchfs-<token>/``: daemon configs, daemon logs and
  traces, the registry (unless ``cluster.registry_dir``), workload state
  (spec, progress). On the shared file system where the results are, so
  remote daemons and ranks can read and write it.
- ``<cluster.data_dir>/benchfs-<token>-g<k>/<node>``: daemon data, per host
  (``cluster.data_dir`` defaults to ``$TMPDIR/benchfs-<uid>``).
- ``/dev/shm/benchfs-<token>``: UCX's and MPI's shared-memory files.
- ``<PATH>/benchfs-<token>-p<k>/`` with a ``posix:PATH`` target (no
  daemons): the workload's files on every node, removed by the ranks.
- ``<cluster.data_dir>/benchfs-<token>-mnt-p<k>/<node>`` with
  ``workload.interface = "mount"``: each node's mount point of BenchFS
  (``benchfs.run.mounts``), unmounted and removed after the point; the
  workload's files are ``benchfs-<token>-p<k>/`` inside the file system.

Every directory is created 0700 (``benchfs.cluster.private``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from analysis.layout import RunLayout
from benchfs.cluster.hostfile import Host, resolve_nodes
from benchfs.cluster.lifecycle import SHM_DIR, Lifecycle, Terminated, stop_requested
from benchfs.cluster.private import make_private_dir
from benchfs.cluster.processes import process_environment
from benchfs.config.model import RunConfig
from benchfs.config.plan import RunPlan, SweepPoint, effective_config, expand_sweep
from benchfs.launchers.base import Launcher
from benchfs.launchers.select import launcher_for
from benchfs.results.manifest import ManifestRecorder, RanksRecord, SweepRecord, new_manifest
from benchfs.results.rundir import create_run_dir
from benchfs.run.cluster import STOP_MARGIN_S, Cluster, Scratch, forwarded_environment
from benchfs.run.leftovers import LiveRun, clean_dead_runs
from benchfs.run.observer import PointResult, RunObserver
from benchfs.run.preflight import preflight_step
from benchfs.run.space import fit_block_to_space, fit_suite_to_space
from benchfs.run.stragglers import straggler_record
from benchfs.run.suite_binary import Io500BinaryPlan, plan_io500_binary
from benchfs.run.suite_tools import SuiteToolPlan, plan_suite_tools
from benchfs.run.tool_place import MountPlace, PosixPlace, ToolPlace
from benchfs.run.tool_point import run_tool_point
from benchfs.run.tool_workload import ToolPlan, plan_tool
from benchfs.run.workload import RunFailed, run_workload, target_record, write_summary
from benchfs.tools.iostat import IostatWatch, IostatWatches
from benchfs.workload.io500_rank import applied_checks
from benchfs.workload.spec import WorkloadSpec, run_seed, workload_spec

# What a point runs instead of the built-in ranks.
ExternalPlan = ToolPlan | SuiteToolPlan | Io500BinaryPlan
# Those that run a suite: its sizes fitted to the free space as the built-in suite's.
SuitePlans = (SuiteToolPlan, Io500BinaryPlan)


def run_token() -> str:
    return f"{os.getpid()}-{secrets.token_hex(3)}"


def _point_label(config: RunConfig, point: SweepPoint, count: int) -> str:
    return config.output.label if count == 1 else f"{config.output.label}-p{point.index}"


def _ranks_record(launcher: Launcher, hosts: Sequence[Host], config: RunConfig) -> RanksRecord:
    # fio runs once per host (its own jobs are its processes); the others as MPI ranks.
    each = 1 if config.workload.tool == "fio" else config.workload.tasks_per_node
    per_host = {host.name: each for host in hosts}
    return RanksRecord(
        launcher=launcher.name,
        per_host=per_host,
        total=sum(per_host.values()),
        daemons_per_host={host.name: config.cluster.daemons_per_node for host in hosts},
    )


def _describe(error: BaseException) -> str:
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (SIGINT)"
    if isinstance(error, Terminated):
        return f"interrupted ({error})"
    return str(error) or type(error).__name__


def write_report_safely(run_dir: Path) -> str | None:
    """Write report.md/report.html; a note instead of an error when it fails."""
    try:
        from analysis.reports.write import write_report

        write_report(run_dir, allow_partial=True)
    except Exception as error:  # the results stand without a report
        stopped = stop_requested()
        if stopped is not None:  # the signal, not whatever error it was turned into
            return f"report not written: interrupted by {signal.Signals(stopped).name}"
        return f"report not written: {type(error).__name__}: {error}"
    return None


def _partial_summary(spec: WorkloadSpec, result: PointResult) -> list[str]:
    """The summary of the phases that finished before a failure (the report
    is made from it); a note when there is none."""
    try:
        result.summary = write_summary(spec)
    except Exception as error:  # no phase finished, or its rows are unreadable
        return [f"no summary of finished phases: {error}"]
    done = len(result.summary["repetitions"])
    return [f"the summary and report cover what finished before the failure: {done} phase runs"]


def run_point(
    life: Lifecycle,
    cluster: Cluster,
    point: SweepPoint,
    count: int,
    *,
    nodes_spec: str | None,
    command_line: Sequence[str],
    env: Mapping[str, str],
    observer: RunObserver,
    started: list[PointResult],
    tool: ExternalPlan | None = None,
) -> PointResult:
    """One point; its result goes into ``started`` as soon as its results
    directory exists, so a failed point still gets its notes and report."""
    config = point.config
    run_dir = create_run_dir(Path(config.output.results_dir), _point_label(config, point, count))
    layout = RunLayout(run_dir)
    if cluster.scratch.live is not None:
        cluster.scratch.live.add_run_dir(run_dir)
    observer.point_started(point, count, run_dir)
    hosts_given = resolve_nodes(nodes_spec, env, local_nodes=config.cluster.local_nodes)
    launcher = launcher_for(config.launcher, nodes_spec)
    sweep = SweepRecord(index=point.index, count=count, values=dict(point.values))
    record = ManifestRecorder(
        run_dir,
        new_manifest(
            label=config.output.label,
            command_line=command_line,
            effective_config=effective_config(config),
            hosts_given=hosts_given,
            hosts_used=hosts_given,
            sweep=sweep if count > 1 else None,
            env=env,
        ),
    )
    if config.suite.name != "none":
        record.suite(suite_record(config))
    result = PointResult(point.index, run_dir, "running", manifest=record)
    started.append(result)
    point_notes: list[str] = []
    spec = None
    try:
        observer.step("preflight")
        # Only what the nodes' programs need: a launcher puts these on its command line.
        outcome = preflight_step(
            config, hosts_given, launcher, run_dir, env=forwarded_environment(env)
        )
        hosts = outcome.hosts
        record.preflight(outcome.record, hosts, outcome.excluded)
        for line in outcome.lines:
            observer.step(line)
        if tool is None or isinstance(tool, SuitePlans):
            ranks = len(hosts) * config.workload.tasks_per_node
            fit = fit_block_to_space if config.suite.name == "none" else fit_suite_to_space
            config, space_note = fit(config, ranks, launcher)
            if space_note is not None and config.suite.name != "none":
                record.suite(suite_record(config))
                if isinstance(tool, SuitePlans):
                    tool = replace(tool, sizes=config.suite.sizes())
            if space_note is not None:
                point_notes.append(space_note)
                observer.step(space_note)
        posix = config.workload.posix_path
        on_mount = config.workload.interface == "mount"
        record.interface(config.workload.interface)
        state_dir = cluster.scratch.point_dir(point.index)
        work_name = f"{cluster.scratch.name}-p{point.index}"
        if posix is None:
            cluster.ensure(config, hosts, launcher)
            assert cluster.group is not None
            cluster.group.served.append(run_dir)
            registered = cluster.group.records_by_node_id()
            node_names = [slot.node_name for slot in cluster.group.slots]
            registry_dir = cluster.group.registry_dir
        else:
            cluster.without_daemons(hosts, launcher)
            registered, node_names, registry_dir = [], [], state_dir
        record.daemons(registered, _ranks_record(launcher, hosts, config))
        mounts = None
        if on_mount:
            mounts = cluster.mount(config, point.index, layout.mount_logs_dir)
            record.mount(mounts.record())
        layout.workload_dir.mkdir()
        layout.traces_dir.mkdir(exist_ok=True)
        layout.logs_dir.mkdir(exist_ok=True)
        make_private_dir(state_dir, exist_ok=False)
        if tool is not None:
            observer.step(f"running {tool.tool}" + (" on the mount" if on_mount else ""))
            place: ToolPlace
            if mounts is not None:
                place = MountPlace(
                    life,
                    launcher,
                    hosts,
                    tasks_per_node=config.workload.tasks_per_node,
                    mount_root=mounts.args.mount_root,
                    name=work_name,
                    log_dir=state_dir / "workdir",
                    deadline_s=config.cluster.deadlines.phase_s,
                    env=process_environment(env),
                    python=cluster.python,
                )
            else:
                assert posix is not None  # the config refuses a tool on the native client
                place = PosixPlace(
                    Path(posix) / work_name, removes_here=launcher.capabilities.runs_here
                )
            try:
                result.summary, result.stragglers = run_tool_point(
                    life, tool, config, hosts, launcher, layout, record, place, env, point_notes
                )
            finally:
                cluster.unmount()
            result.status = "completed"
            return result
        spec = workload_spec(
            config,
            hosts=[host.name for host in hosts],
            node_names=node_names,
            registry_dir=registry_dir,
            workload_dir=layout.workload_dir,
            state_dir=state_dir,
            trace_dir=layout.traces_dir if posix is None and not on_mount else None,
            shm_dir=cluster.scratch.shm_dir,
            verify_seed=run_seed(f"{run_dir.resolve()}@{record.manifest.start_time.isoformat()}"),
            posix_dir=None if posix is None else Path(posix) / work_name,
            mount_root=None if mounts is None else mounts.args.mount_root,
            mount_dir_name=None if mounts is None else work_name,
        )
        spec_path = spec.write(state_dir / "spec.json")
        watches = IostatWatches(
            [
                IostatWatch(host, launcher, raw_output=layout.iostat_file(host.name))
                for host in hosts
            ]
        )
        watches.start()
        try:
            run_workload(
                life,
                cluster,
                config,
                spec,
                spec_path,
                observer,
                env,
                layout.workload_log,
                on_command=record.ranks_command,
            )
        finally:
            watches.stop()
            if mounts is not None:
                record.mount(
                    {**mounts.record(), "file_systems": target_record(spec)["file_systems"]}
                )
                cluster.unmount()  # before the summary: the point's mounts end with its ranks
            if spec.posix_dir is not None:
                record.target(target_record(spec))
                if launcher.capabilities.runs_here and not config.workload.keep_files:
                    # The ranks' own cleanup, after a failure too.
                    shutil.rmtree(spec.posix_dir, ignore_errors=True)
            point_notes += watches.notes
            # Not on Ctrl-C or SIGTERM: then stopping everything comes first.
            if isinstance(sys.exception(), Exception | None):
                try:
                    stragglers, result.stragglers = straggler_record(run_dir)
                    record.stragglers(stragglers)
                except Exception as error:  # an observer: the run stands without it
                    point_notes.append(f"stragglers not checked: {type(error).__name__}: {error}")
        result.summary = write_summary(spec)
        problems = []
        if result.summary["errors"]:
            problems.append(f"{result.summary['errors']} I/O errors")
        if result.summary["verify_errors"]:
            problems.append(f"{result.summary['verify_errors']} verification errors")
        if problems:
            raise RunFailed(f"the workload reported {' and '.join(problems)}")
        result.status = "completed"
    except BaseException as error:
        result.status = "failed" if isinstance(error, Exception) else "interrupted"
        result.error = _describe(error)
        if spec is not None and result.summary is None:
            point_notes += _partial_summary(spec, result)
        raise
    finally:
        result.notes = [*cluster.notes, *point_notes]
        record.finish(result.status, error=result.error, notes=result.notes)
        observer.point_finished(result)
    return result


def suite_record(config: RunConfig) -> dict[str, Any]:
    """The manifest's suite: its sizes and the checks its phases apply."""
    workload = config.workload
    posix_calls = workload.posix_path is not None or workload.interface == "mount"
    return {
        **config.suite.sizes().to_json(),
        "checks": applied_checks(config.suite.tool, posix_calls),
    }


def run_plan(
    plan: RunPlan,
    *,
    nodes_spec: str | None = None,
    command_line: Sequence[str] = (),
    observer: RunObserver | None = None,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> list[PointResult]:
    """Run every point of the plan, one after the other; the first failure
    stops the sweep (its results directory says why)."""
    observer = observer or RunObserver()
    env = dict(os.environ if env is None else env)
    points = expand_sweep(plan)
    first = points[0].config
    resolve_nodes(nodes_spec, env, local_nodes=first.cluster.local_nodes)  # fail before anything
    for point in points:  # a launcher that cannot reach these nodes, too
        launcher_for(point.config.launcher, nodes_spec)
    # A missing tool too: a tool run's, a suite's IOR and mdtest, or its io500 binary.
    tools: list[ExternalPlan | None] = [
        plan_tool(point.config.workload)
        or plan_suite_tools(point.config, run_seed(f"{plan.source}@{point.index}"))
        or plan_io500_binary(point.config)
        for point in points
    ]
    base = Path(first.output.results_dir)
    make_private_dir(base)
    for cleaned in clean_dead_runs():
        observer.step(f"cleaned up after an earlier {cleaned.describe()}")
    token = run_token()
    shm_dir = SHM_DIR / f"benchfs-{token}" if SHM_DIR.is_dir() else None
    live = LiveRun(token)
    scratch = Scratch(token, base / f".benchfs-{token}", shm_dir, live)
    scratch.claim(scratch.root)
    if shm_dir is not None:
        scratch.claim(shm_dir)
    grace = max(p.config.cluster.deadlines.shutdown_s for p in points) + STOP_MARGIN_S
    results: list[PointResult] = []
    cluster: Cluster | None = None
    try:
        with Lifecycle(grace_s=grace, shm_prefix=f"benchfs-{token}") as life:
            make_private_dir(scratch.root, exist_ok=False)
            life.remove_at_exit(scratch.root)
            cluster = Cluster(life, scratch, observer, env, python)
            try:
                for point, tool in zip(points, tools, strict=True):
                    run_point(
                        life,
                        cluster,
                        point,
                        len(points),
                        nodes_spec=nodes_spec,
                        command_line=command_line,
                        env=env,
                        observer=observer,
                        started=results,
                        tool=tool,
                    )
            finally:
                # Gracefully, after an error or a first Ctrl-C too (traces flushed,
                # records removed); a second signal leaves the rest to the Lifecycle.
                cluster.stop()
    finally:
        try:
            for result in results:
                late = [] if cluster is None else cluster.notes + life.cleanup_errors
                notes = [note for note in late if note not in result.notes]
                report = write_report_safely(result.run_dir)
                if report is not None:
                    notes.append(report)
                if notes:
                    result.notes += notes
                    if result.manifest is not None:
                        result.manifest.add_notes(notes)
        finally:  # a signal in the reports too
            live.finish()  # cleaned up: nothing for a later run to find
    return results
