"""`benchfs run`: one run, or one run per point of a sweep (docs/ARCHITECTURE.md,
"The flow of benchfs run").

Per point: a results directory (``analysis.layout``) and its manifest (one
``ManifestRecorder``); the preflight step; the target (``benchfs.run.target``:
the daemons, started once and kept while no daemon setting changes, their
mounts, or a posix: directory); the point's workload mode
(``benchfs.run.workloads``), watched with iostat on every host
(``benchfs.run.watch``); the summary; the report; the history
(``benchfs.history``, which the preflight step consults too). Everything
started lives in one ``Lifecycle``: on an error, Ctrl-C or SIGTERM, processes are stopped
and the run's temporary files (configs, registry, data dirs, shared memory)
removed before the error surfaces. What a point leaves behind is its results directory.

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
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from analysis.layout import RunLayout
from benchfs.cluster.hostfile import Host, resolve_nodes
from benchfs.cluster.lifecycle import SHM_DIR, Lifecycle, Terminated, stop_requested
from benchfs.cluster.private import make_private_dir, user_temp_root
from benchfs.config.model import RunConfig
from benchfs.config.plan import RunPlan, SweepPoint, effective_config, expand_sweep
from benchfs.health.reachable import check_reachable
from benchfs.history.record import record_safely
from benchfs.history.rows import run_record
from benchfs.launchers.base import Launcher
from benchfs.launchers.mpirun import SESSION_BASE_VARIABLE
from benchfs.launchers.select import launcher_for
from benchfs.results.manifest import (
    ExcludedHost,
    ManifestRecorder,
    RanksRecord,
    SweepRecord,
    new_manifest,
)
from benchfs.results.rundir import create_run_dir
from benchfs.run.cluster import (
    STOP_MARGIN_S,
    Cluster,
    Scratch,
    check_local_dirs,
    forwarded_environment,
)
from benchfs.run.history_step import history_step
from benchfs.run.leftovers import LiveRun, clean_dead_runs
from benchfs.run.observer import PointResult, RunObserver
from benchfs.run.preflight import preflight_step
from benchfs.run.stragglers import straggler_record
from benchfs.run.target import open_target
from benchfs.run.watch import Watches
from benchfs.run.workloads import Point, Workload, workload_for
from benchfs.tools.iostat import IostatWatch, IostatWatches
from benchfs.workload.spec import run_seed


def mpi_session_dir(token: str) -> Path:
    """The run's base for Open MPI's session directory
    (``<base>/ompi.<host>.<uid>/...``, 8 MB and more; ``SESSION_BASE_VARIABLE``),
    by default shared by all of a user's jobs in the temporary directory and
    left there by a killed mpirun. Named after the run, ``benchfs clean``
    removes a dead run's. Short (PMIx puts its sockets there, and a socket's
    path has at most 107 bytes), this user's."""
    return user_temp_root() / f"benchfs-{token}-mpi"


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


def _stragglers(point: Point, result: PointResult) -> None:
    """Nodes whose disk turned slow during the workload, into the manifest."""
    try:
        stragglers, result.stragglers = straggler_record(point.layout.root)
        point.record.stragglers(stragglers)
    except Exception as error:  # an observer: the run stands without it
        point.notes.append(f"stragglers not checked: {type(error).__name__}: {error}")


def _history(result: PointResult, config: RunConfig, observer: RunObserver) -> None:
    """Step 11, last, once the results and the report are written: the point
    into the history; a history that cannot be written is one line, the run stands."""
    result.history = record_safely(
        config.output.results_dir, config.history, lambda: run_record(result.run_dir)
    )
    observer.step(result.history)
    if result.history.startswith("history not written") and result.manifest is not None:
        result.manifest.add_notes([result.history])


def _results(
    config: RunConfig,
    point: SweepPoint,
    count: int,
    hosts: Sequence[Host],
    command_line: Sequence[str],
    env: Mapping[str, str],
) -> ManifestRecorder:
    """Step 3: the point's results directory and its manifest, status ``running``."""
    run_dir = create_run_dir(Path(config.output.results_dir), _point_label(config, point, count))
    sweep = SweepRecord(index=point.index, count=count, values=dict(point.values))
    manifest = new_manifest(
        label=config.output.label,
        command_line=command_line,
        effective_config=effective_config(config),
        hosts_given=hosts,
        hosts_used=hosts,
        sweep=sweep if count > 1 else None,
        env=env,
    )
    return ManifestRecorder(run_dir, manifest)


def _preflight(
    config: RunConfig,
    hosts: list[Host],
    launcher: Launcher,
    record: ManifestRecorder,
    observer: RunObserver,
    env: Mapping[str, str],
    cluster: Cluster,
    index: int,
) -> list[Host]:
    """Step 4: the hosts the point goes on with, the decisions recorded. The
    workers' scratch is named after the run and in its record, and so are
    the hosts (a later ``benchfs clean`` sweeps them should the run be killed)."""
    # Only what the nodes' programs need: a launcher puts these on its command line.
    forwarded = forwarded_environment(env)
    if not launcher.capabilities.runs_here:
        observer.step(f"checking that {launcher.name} reaches {len(hosts)} hosts")
        check_reachable(hosts, launcher, env=forwarded)
    observer.step("preflight")
    scratch = cluster.scratch
    if launcher.capabilities.needs_host_helper and scratch.live is not None:
        scratch.live.reach_hosts(launcher.name, config.launcher, hosts, cluster.python)
    outcome = preflight_step(
        config, hosts, launcher, record.run_dir, env=forwarded,
        scratch=f"{scratch.name}-preflight-p{index}", claim=scratch.claim,
        clean_nodes=lambda paths: cluster.run_on_hosts(
            "clean", [str(p) for p in paths], "remove the preflight's files", 0, (hosts, launcher)
        ),
    )  # fmt: skip
    outcome = history_step(config, len(hosts), outcome, env)
    record.preflight(outcome.record, outcome.hosts, outcome.excluded)
    for line in outcome.lines:
        observer.step(line)
    return outcome.hosts


def _iostat(hosts: Sequence[Host], launcher: Launcher, layout: RunLayout) -> IostatWatches:
    return IostatWatches(
        [IostatWatch(host, launcher, raw_output=layout.iostat_file(host.name)) for host in hosts]
    )


def _leave_out(left_out: dict[str, ExcludedHost], host: ExcludedHost) -> None:
    left_out.setdefault(host.name, host)


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
    workload: Workload,
    left_out: dict[str, ExcludedHost] | None = None,
) -> PointResult:
    """One point, steps 3 to 10 of the flow (docs/ARCHITECTURE.md); its
    result goes into ``started`` as soon as its results directory exists,
    so a failed point still gets its notes and report. ``left_out``: the hosts
    earlier points' live view excluded (``live.straggler = "exclude"``), kept
    out of this point and added to by it."""
    config = point.config
    left_out = {} if left_out is None else left_out
    hosts = resolve_nodes(nodes_spec, env, local_nodes=config.cluster.local_nodes)
    hosts = [host for host in hosts if host.name not in left_out]
    launcher = launcher_for(config.launcher, nodes_spec).with_host_files_in(cluster.scratch.root)
    record = _results(config, point, count, hosts, command_line, env)
    layout = RunLayout(record.run_dir)
    if cluster.scratch.live is not None:
        cluster.scratch.live.add_run_dir(layout.root)
    observer.point_started(point, count, layout.root)
    workload.record_plan(record, config)
    result = PointResult(point.index, layout.root, "running", manifest=record)
    started.append(result)
    notes: list[str] = []
    ran: Point | None = None
    try:
        hosts = _preflight(config, hosts, launcher, record, observer, env, cluster, point.index)
        if left_out:
            record.hosts(hosts, [*record.manifest.hosts.excluded, *left_out.values()])
            observer.step(f"live: {', '.join(left_out)} left out (a straggler of an earlier point)")
        ranks = len(hosts) * config.workload.tasks_per_node
        config, space_note = workload.fit(config, ranks, launcher)
        if space_note is not None:
            workload.record_plan(record, config)
            notes.append(space_note)
            observer.step(space_note)
        target = open_target(
            cluster, config, hosts, launcher, point=point.index, layout=layout, record=record,
            ranks=_ranks_record(launcher, hosts, config),
        )  # fmt: skip
        layout.workload_dir.mkdir()
        layout.traces_dir.mkdir(exist_ok=True)
        layout.logs_dir.mkdir(exist_ok=True)
        state_dir = make_private_dir(cluster.scratch.point_dir(point.index), exist_ok=False)
        iostat = _iostat(hosts, launcher, layout)
        ran = Point(
            point.index, config, life, cluster, hosts, launcher, layout, record, observer, env,
            target, state_dir, watches=Watches([iostat]), notes=notes,
            on_exclude=lambda host: _leave_out(left_out, host), iostat=iostat,
        )  # fmt: skip
        try:
            workload.prepare(ran)
            ran.watches.start()
            workload.run(ran)
            observer.step("summarising the results")
            result.summary = workload.summarise(ran)
        finally:
            ran.watches.stop()
            workload.record(ran)
            notes += workload.clean_up(ran)
            cluster.unmount()  # the point's mounts end with its workload
            notes += ran.watches.notes
            # Not on Ctrl-C or SIGTERM: then stopping everything comes first.
            if isinstance(sys.exception(), Exception | None):
                _stragglers(ran, result)
        workload.check(result.summary)
        result.status = "completed"
    except BaseException as error:
        result.status = "failed" if isinstance(error, Exception) else "interrupted"
        result.error = _describe(error)
        if ran is not None and result.summary is None:
            result.summary, partial = workload.partial_summary(ran)
            notes += partial
        raise
    finally:
        result.notes = [*cluster.notes, *notes]
        record.finish(result.status, error=result.error, notes=result.notes)
        observer.point_finished(result)
    return result


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
        if launcher_for(point.config.launcher, nodes_spec).capabilities.runs_here:
            check_local_dirs(point.config)  # and directories another user could replace
    # A missing tool too: a tool run's, a suite's IOR and mdtest, or its io500 binary.
    workloads = [
        workload_for(point.config, run_seed(f"{plan.source}@{point.index}")) for point in points
    ]
    base = Path(first.output.results_dir)
    make_private_dir(base)
    for cleaned in clean_dead_runs():
        observer.step(f"cleaned up after an earlier {cleaned.describe()}")
        for line in cleaned.history:
            observer.step(line)
    token = run_token()
    shm_dir = SHM_DIR / f"benchfs-{token}" if SHM_DIR.is_dir() else None
    live = LiveRun(token)
    scratch = Scratch(token, base / f".benchfs-{token}", shm_dir, live)
    scratch.claim(scratch.root)
    if shm_dir is not None:
        scratch.claim(shm_dir)
    # Open MPI's session directory, named after the run (unless the user chose one).
    mpi_dir = None
    if SESSION_BASE_VARIABLE not in env:
        mpi_dir = scratch.claim(mpi_session_dir(token))
        env[SESSION_BASE_VARIABLE] = str(mpi_dir)
        # Also for what starts with this process's own environment (the preflight's launcher).
        os.environ[SESSION_BASE_VARIABLE] = str(mpi_dir)
    grace = max(p.config.cluster.deadlines.shutdown_s for p in points) + STOP_MARGIN_S
    results: list[PointResult] = []
    left_out: dict[str, ExcludedHost] = {}
    cluster: Cluster | None = None
    try:
        with Lifecycle(grace_s=grace, shm_prefix=f"benchfs-{token}") as life:
            make_private_dir(scratch.root, exist_ok=False)
            life.remove_at_exit(scratch.root)
            if mpi_dir is not None:
                life.remove_at_exit(make_private_dir(mpi_dir, exist_ok=False))
            cluster = Cluster(life, scratch, observer, env, python)
            try:
                for point, workload in zip(points, workloads, strict=True):
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
                        workload=workload,
                        left_out=left_out,
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
                observer.step(f"writing the report of {result.run_dir.name}")
                report = write_report_safely(result.run_dir)
                if report is not None:
                    notes.append(report)
                if notes:
                    result.notes += notes
                    if result.manifest is not None:
                        result.manifest.add_notes(notes)
                _history(result, points[result.index].config, observer)
        finally:  # a signal in the reports too
            if mpi_dir is not None:
                os.environ.pop(SESSION_BASE_VARIABLE, None)
            live.finish()  # cleaned up: nothing for a later run to find
    return results
