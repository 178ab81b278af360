"""The workload ranks' MPI job: starting it, watching it with the daemons
and the point's watches, and naming a rank that failed."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from benchfs.cluster.processes import (
    ManagedProcess,
    describe_status,
    process_environment,
    stop_processes,
)
from benchfs.config.model import Deadlines
from benchfs.errors import LaunchError
from benchfs.launchers.programs import workload_job
from benchfs.run.cluster import STOP_MARGIN_S, Cluster
from benchfs.run.daemons import log_tail, ranks_named
from benchfs.run.observer import RunObserver
from benchfs.run.watch import POLL_S, Watches
from benchfs.run.workloads.base import Point
from benchfs.workload.progress import current_progress, read_status
from benchfs.workload.spec import WorkloadSpec

# Open MPI's words for a rank that died of a signal (its PID there may read 0).
_SIGNALLED = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)")


def _rank_pid(spec: WorkloadSpec, rank: int) -> str:
    try:
        return f" (pid {json.loads(spec.rank_file(rank).read_text())['pid']})"
    except (OSError, ValueError, KeyError):
        return ""


def rank_failure(spec: WorkloadSpec, log: Path, code: int) -> str:
    """Which rank failed and how: one killed by a signal first (the other
    ranks' errors follow from it), else the first rank that reported an
    error, else what the launcher said."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    match = _SIGNALLED.search(text)
    if match is not None and int(match.group(1)) < spec.ranks:
        rank = int(match.group(1))
        how = describe_status(-int(match.group(2)))
        return f"workload rank {rank} on {spec.host_of(rank)}{_rank_pid(spec, rank)} {how}"
    errors = sorted(
        (Path(spec.state_dir) / "ranks").glob("rank*.error"), key=lambda p: p.stat().st_mtime
    )
    if errors:
        return errors[0].read_text().strip()
    for rank in ranks_named(text):
        if rank < spec.ranks:
            detail = next(
                (line.strip() for line in text.splitlines() if f"rank {rank}" in line), ""
            )
            return f"workload rank {rank} on {spec.host_of(rank)} failed: {detail}"
    tail = log_tail(log)
    return f"workload ranks {describe_status(code)}" + (f": {tail}" if tail else "")


class ProgressWatch:
    """The ranks' live progress (``benchfs.workload.progress``), shown as it
    goes: ranks that stop getting closer to a phase, or a phase past its
    deadline (``cluster.deadlines``), end the point."""

    def __init__(
        self, spec: WorkloadSpec, deadlines: Deadlines, observer: RunObserver, log: Path
    ) -> None:
        self.spec, self.deadlines, self.observer, self.log = spec, deadlines, observer, log
        self.started = time.monotonic()
        self.start_steps = 0
        self.notes: list[str] = []

    def start(self) -> None:
        self.started = time.monotonic()
        self.start_steps = 0

    def stop(self) -> None:
        pass

    def _start_steps(self) -> int:
        """Steps of the ranks' start seen so far: each rank begun (its rank
        file), and their connect recorded; the clock restarts on each new one."""
        spec = self.spec
        try:
            # One directory read, not a stat per rank (thousands of ranks).
            names = os.listdir(spec.rank_file(0).parent)
        except OSError:
            names = []
        begun = sum(name.endswith(".json") for name in names)
        return begun + Path(spec.connect_file).exists()

    def poll(self) -> None:
        deadlines = self.deadlines
        status = read_status(self.spec.phase_file)
        if status is None:
            # A start is late only when it stops moving: on a loaded machine
            # MPI start-up and the ranks' connects grow with the hosts, daemons
            # and ranks, so the window restarts each time another rank begins.
            spec = self.spec
            start_s = deadlines.rpc_s + deadlines.grown(
                deadlines.connect_s(len(spec.node_names), spec.ranks), len(spec.hosts)
            )
            starting = self._start_steps()
            if starting > self.start_steps:
                self.start_steps, self.started = starting, time.monotonic()
            elif time.monotonic() - self.started > start_s:
                begun = min(starting, spec.ranks)
                raise LaunchError(
                    f"workload ranks did not start a phase: nothing moved for {start_s:g} s "
                    f"with {begun} of {spec.ranks} ranks begun: {log_tail(self.log)}"
                )
            return
        progress = current_progress(self.spec)
        if progress is None:
            return
        self.observer.progress(progress)
        if progress.elapsed_s > deadlines.phase_s:
            where = f"{status.phase} phase of repetition {status.repetition}"
            what = (
                f"still in the {where}"
                if status.state == "running"
                else f"no phase after the {where}"
            )
            raise LaunchError(
                f"workload ranks {what} after the {deadlines.phase_s:g} s deadline "
                "(cluster.deadlines.phase_s)"
            )


def run_ranks(
    point: Point, spec: WorkloadSpec, spec_path: Path, on_command: Callable[[list[str]], None]
) -> None:
    """Start the ranks and watch them with the daemons (if any) until they end;
    ``on_command`` is told their command line first."""
    cluster, log = point.cluster, point.layout.workload_log
    assert cluster.launcher is not None
    rank_env = cluster.launch_env()
    if cluster.scratch.shm_dir is not None:
        rank_env["OMPI_MCA_btl_vader_backing_directory"] = str(cluster.scratch.shm_dir)
    argv = workload_job(
        cluster.launcher,
        cluster.hosts,
        point.config.workload.tasks_per_node,
        spec_path,
        env=rank_env,
        python=cluster.python,
    )
    on_command(argv)
    point.observer.step(f"running {spec.ranks} workload ranks")
    ranks = point.life.start(
        argv,
        name="workload ranks",
        env=process_environment(point.env),
        stdout=log,
        stderr=subprocess.STDOUT,
        stuck_when=cluster.launcher.stuck_output(),
    )
    try:
        _watch(ranks, cluster, spec, point.watches, log)
    except BaseException:
        stop_processes([ranks], STOP_MARGIN_S)  # first, so they do not outlive the daemons
        raise
    code = ranks.popen.wait()
    ranks.close_files()
    if code != 0:
        # A dead daemon (or mount) makes ranks fail too: name the cause first.
        dead = _dead(cluster)
        failure = rank_failure(spec, log, code)
        raise LaunchError(failure if dead is None else f"{dead}; {failure}")


def _dead(cluster: Cluster) -> str | None:
    """A daemon or mount that ended, None while all serve."""
    dead = None if cluster.group is None else cluster.group.dead()
    if dead is None and cluster.mounts is not None:
        dead = cluster.mounts.dead()
    return dead


def _watch(
    ranks: ManagedProcess, cluster: Cluster, spec: WorkloadSpec, watches: Watches, log: Path
) -> None:
    """Until the ranks exit: a daemon or mount that dies, a launcher that
    cannot start them, or a watch that raises end the wait with an error."""
    while ranks.returncode is None:
        dead = _dead(cluster)
        if dead is not None:
            # Ranks fail soon after a daemon (or a dying rank took a daemon
            # with it): wait briefly, so the error tells both.
            with contextlib.suppress(subprocess.TimeoutExpired):
                ranks.popen.wait(timeout=STOP_MARGIN_S)
            code = ranks.returncode
            raise LaunchError(dead if not code else f"{dead}; {rank_failure(spec, log, code)}")
        stuck = ranks.stuck()
        if stuck is not None:
            raise LaunchError(f"workload ranks cannot start: {stuck}")
        watches.poll()
        time.sleep(POLL_S)
