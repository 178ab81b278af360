"""The workload ranks of one run: their MPI job, watching it with the
daemons, naming a rank that failed, and the summary of what they left."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from analysis.layout import SUMMARY_FILE
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.processes import (
    ManagedProcess,
    describe_status,
    process_environment,
    stop_processes,
)
from benchfs.config.model import RunConfig
from benchfs.errors import BenchfsError, LaunchError
from benchfs.launchers.programs import workload_job
from benchfs.results.atomic import write_json_atomic
from benchfs.run.cluster import STOP_MARGIN_S, Cluster
from benchfs.run.daemons import log_tail, ranks_named
from benchfs.run.observer import RunObserver
from benchfs.workload.io500_summary import summarize_suite
from benchfs.workload.metadata_spec import MetadataWorkload
from benchfs.workload.metadata_summary import is_metadata_phase, summarize_metadata
from benchfs.workload.progress import current_progress, read_status
from benchfs.workload.spec import WorkloadSpec
from benchfs.workload.summary import RankRow, summarize

POLL_S = 0.2


class RunFailed(BenchfsError):
    """A run ended without results; names the cause and the results directory."""


def read_rank_rows(spec: WorkloadSpec) -> list[RankRow]:
    lines = spec.ranks_file.read_text().splitlines() if spec.ranks_file.is_file() else []
    return [RankRow.from_json(json.loads(line)) for line in lines if line.strip()]


def read_latencies(spec: WorkloadSpec, rows: Sequence[RankRow]) -> dict[tuple[str, int], Any]:
    found: dict[tuple[str, int], Any] = {}
    for phase, repetition in {(row.phase, row.repetition) for row in rows}:
        path = spec.latency_file(phase, repetition)
        if path.is_file():
            found[(phase, repetition)] = np.load(path)
    return found


def target_record(spec: WorkloadSpec) -> dict[str, Any]:
    """A posix: target in the manifest: its directory and, per host, the file
    system behind it as the ranks found it there (through the mount: the
    mount's, as the ranks found it on every host)."""
    file_systems: dict[str, Any] = {}
    for rank in range(spec.ranks):
        with contextlib.suppress(OSError, ValueError, KeyError):
            started = json.loads(spec.rank_file(rank).read_text())
            file_systems.setdefault(started["host"], started["fs"])
    return {"target": spec.target, "directory": spec.posix_dir, "direct": spec.direct,
            "file_systems": file_systems}  # fmt: skip


def write_summary(spec: WorkloadSpec) -> dict[str, Any]:
    """``workload/summary.json`` from the ranks' rows and latencies."""
    rows = read_rank_rows(spec)
    if not rows:
        raise RunFailed(f"the workload left no per-rank results in {spec.ranks_file}")
    latencies = read_latencies(spec, rows)
    if spec.suite is not None:
        document = summarize_suite(rows, spec, latencies)
        write_json_atomic(Path(spec.workload_dir) / SUMMARY_FILE, document)
        return document
    data_rows = [row for row in rows if not is_metadata_phase(row.phase)]
    summary = summarize(data_rows, spec.parameters(), latencies)
    if not spec.run_data:
        del summary["parameters"]  # IOR's test parameters: no data workload ran
    if spec.metadata is not None:
        workload = MetadataWorkload.from_json(spec.metadata)
        phases, repetitions = summarize_metadata(rows, workload, latencies)
        summary["phases"] += phases
        summary["repetitions"] += repetitions
        summary["metadata_parameters"] = workload.to_json()
    write_json_atomic(Path(spec.workload_dir) / SUMMARY_FILE, summary)
    return summary


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


def run_workload(
    life: Lifecycle,
    cluster: Cluster,
    config: RunConfig,
    spec: WorkloadSpec,
    spec_path: Path,
    observer: RunObserver,
    env: Mapping[str, str],
    log: Path,
    on_command: Callable[[list[str]], None],
) -> None:
    """Start the ranks and watch them with the daemons (if any) until they end;
    ``on_command`` is told their command line first."""
    assert cluster.launcher is not None
    rank_env = cluster.launch_env()
    if cluster.scratch.shm_dir is not None:
        rank_env["OMPI_MCA_btl_vader_backing_directory"] = str(cluster.scratch.shm_dir)
    argv = workload_job(
        cluster.launcher,
        cluster.hosts,
        config.workload.tasks_per_node,
        spec_path,
        env=rank_env,
        python=cluster.python,
    )
    on_command(argv)
    observer.step(f"running {spec.ranks} workload ranks")
    ranks = life.start(
        argv,
        name="workload ranks",
        env=process_environment(env),
        stdout=log,
        stderr=subprocess.STDOUT,
        stuck_when=cluster.launcher.stuck_output(),
    )
    try:
        _watch(ranks, cluster, config, spec, observer, log)
    except BaseException:
        stop_processes([ranks], STOP_MARGIN_S)  # first, so they do not outlive the daemons
        raise
    code = ranks.popen.wait()
    ranks.close_files()
    if code != 0:
        # A dead daemon (or mount) makes ranks fail too: name the cause first.
        dead = None if cluster.group is None else cluster.group.dead()
        if dead is None and cluster.mounts is not None:
            dead = cluster.mounts.dead()
        failure = rank_failure(spec, log, code)
        raise LaunchError(failure if dead is None else f"{dead}; {failure}")


def _watch(
    ranks: ManagedProcess,
    cluster: Cluster,
    config: RunConfig,
    spec: WorkloadSpec,
    observer: RunObserver,
    log: Path,
) -> None:
    """Until the ranks exit: a daemon that dies, ranks that never start a
    phase, or a phase past its deadline end the wait with an error."""
    deadlines = config.cluster.deadlines
    started = time.monotonic()
    group = cluster.group
    mounts = cluster.mounts
    while ranks.returncode is None:
        dead = None if group is None else group.dead()
        if dead is None and mounts is not None:
            dead = mounts.dead()
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
        status = read_status(spec.phase_file)
        if status is None:
            if time.monotonic() - started > deadlines.register_s + deadlines.rpc_s:
                raise LaunchError(
                    f"workload ranks did not start a phase within "
                    f"{deadlines.register_s + deadlines.rpc_s:g} s: {log_tail(log)}"
                )
        else:
            progress = current_progress(spec)
            if progress is not None:
                observer.progress(progress)
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
        time.sleep(POLL_S)
