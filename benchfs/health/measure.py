"""Run the diagnose plan in one directory on this node, with iostat alongside each test.

Everything happens in a scratch directory inside the given one, removed at
the end. A problem that stops the whole node (missing directory, fio absent,
too little free space) becomes ``NodeMeasurement.error``; a failing test
becomes that test's ``error`` and the other tests still run.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Mapping
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path

from analysis.loaders.fio import FioJobResult, Latency
from analysis.loaders.iostat import IostatReport
from benchfs.cluster.private import make_private_dir
from benchfs.errors import BenchfsError, ToolError
from benchfs.health.metadata import run_metadata_test
from benchfs.health.model import NodeMeasurement, TestResult
from benchfs.health.plan import SHARED_FILE, Plan, PlanStep, diagnose_plan, fit_to_file
from benchfs.tools.fio import fio_available, run_fio
from benchfs.tools.fsinfo import FsInfo, inspect_directory
from benchfs.tools.iostat import REPORT_DEADLINE_S, IostatSampler, iostat_available

MIB = 1024 * 1024
# The scratch directory of a diagnose worker: ``benchfs clean`` removes one
# whose process is gone (``benchfs.run.leftovers``).
SCRATCH_PREFIX = "benchfs-diagnose-"


def scratch_name(pid: int) -> str:
    return f"{SCRATCH_PREFIX}{pid}"


def measure_node(
    directory: Path,
    *,
    quick: bool = False,
    node: str | None = None,
    plan: Plan | None = None,
    raw_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    scratch: str | None = None,
) -> NodeMeasurement:
    """Run ``plan`` (default: the diagnose plan) in ``directory`` and return the
    figures. The test files go in ``directory/scratch`` (default
    ``benchfs-diagnose-<pid>``; a run's preflight names it after the run, so
    that ``benchfs clean`` finds it should the worker be killed)."""
    plan = plan or diagnose_plan(quick)
    hostname = socket.gethostname()
    started = time.monotonic()
    base = NodeMeasurement(
        node=node or hostname,
        hostname=hostname,
        directory=str(directory),
        quick=quick,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    path = (env or os.environ).get("PATH")
    problem = _cannot_run(directory, plan, path)
    if problem:
        return replace(base, error=problem, duration_s=time.monotonic() - started)
    fs: FsInfo | None
    try:
        fs = inspect_directory(directory)
    except ToolError:
        fs = None
    watch = list(fs.disks) if fs and iostat_available(path=path) else []
    results: list[TestResult] = []
    scratch_dir = directory / (scratch or scratch_name(os.getpid()))
    try:
        # Created here, never taken over: refused in a directory another user could replace.
        make_private_dir(scratch_dir, exist_ok=False)
    except (BenchfsError, OSError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return replace(base, error=f"cannot work in {directory}: {why}")
    try:
        for step in plan.steps:
            results.append(_run_step(step, scratch_dir, plan, watch, raw_dir, env))
    except OSError as exc:
        return replace(
            base, error=f"cannot work in {directory}: {exc.strerror or exc}", tests=tuple(results)
        )
    finally:
        shutil.rmtree(scratch_dir, ignore_errors=True)
    return replace(
        base,
        filesystem=asdict(fs) if fs else None,
        filesystem_text=fs.describe() if fs else "",
        tests=tuple(results),
        duration_s=time.monotonic() - started,
    )


def _cannot_run(directory: Path, plan: Plan, path: str | None) -> str | None:
    if not directory.is_dir():
        return f"directory {directory} does not exist or is not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"directory {directory} is not writable"
    if any(step.job for step in plan.steps) and not fio_available(path=path):
        return "fio not found on PATH (install the fio package)"
    usage = shutil.disk_usage(directory)
    if usage.free < plan.space_bytes:
        return (
            f"not enough free space in {directory}: {usage.free / MIB:.0f} MiB free, "
            f"the tests need {plan.space_bytes / MIB:.0f} MiB"
        )
    return None


def _run_step(
    step: PlanStep,
    scratch: Path,
    plan: Plan,
    watch: list[str],
    raw_dir: Path | None,
    env: Mapping[str, str] | None,
) -> TestResult:
    started = time.monotonic()
    sampler: IostatSampler | None = None
    if watch:
        raw = raw_dir / f"{step.name}.iostat.json" if raw_dir else None
        try:
            sampler = IostatSampler(watch, raw_output=raw, env=env).start()
        except ToolError:
            sampler = None  # without iostat the test's own figures still stand
    metrics: dict[str, float] = {}
    error: str | None = None
    iostat: dict[str, float] = {}
    try:
        metrics = _measure(step, scratch, plan, raw_dir, env)
    except (BenchfsError, OSError) as exc:
        error = str(exc)
    finally:
        if sampler is not None:
            # A test shorter than iostat's interval (or a slow iostat start) would otherwise
            # end before the first interval report: the device figures would be missing.
            sampler.wait_for_reports(2, REPORT_DEADLINE_S)
            try:
                iostat = _iostat_summary(sampler.stop(), watch)
            except ToolError:
                iostat = {}
    return TestResult(
        name=step.name,
        title=step.title,
        metrics=metrics,
        iostat=iostat,
        error=error,
        duration_s=time.monotonic() - started,
    )


def _measure(
    step: PlanStep,
    scratch: Path,
    plan: Plan,
    raw_dir: Path | None,
    env: Mapping[str, str] | None,
) -> dict[str, float]:
    if step.job is None:
        return run_metadata_test(scratch, step.metadata_files, max(plan.runtime_s, 1.0))
    job = step.job
    shared = scratch / SHARED_FILE
    if step.fits_written_file and shared.exists():
        job = fit_to_file(job, shared.stat().st_size)
    raw = raw_dir / f"{step.name}.fio.json" if raw_dir else None
    # Laying out files and starting fio take time beside the run itself.
    timeout = plan.runtime_s * 3 + 30
    report = run_fio(
        [job],
        scratch,
        timeout_s=timeout,
        raw_output=raw,
        bw_log_ms=250 if plan.runtime_s <= 3 else 500,
        env=env,
    )
    return fio_metrics(report.jobs[0])


def fio_metrics(job: FioJobResult) -> dict[str, float]:
    """Flat metrics of one fio job: ``read_bw_MiB_s``, ``write_p99_ns``, ``sync_p99_ns``..."""
    metrics: dict[str, float] = {}
    for name, direction in (("read", job.read), ("write", job.write)):
        if not direction.active:
            continue
        metrics[f"{name}_bw_MiB_s"] = direction.bw_mib_s
        metrics[f"{name}_iops"] = direction.iops
        metrics.update(latency_metrics(name, direction.clat))
        variation = direction.bw_variation()
        if variation is not None:
            metrics[f"{name}_bw_cv"] = variation
    metrics.update(latency_metrics("sync", job.sync))
    return metrics


def latency_metrics(prefix: str, latency: Latency | None) -> dict[str, float]:
    if latency is None:
        return {}
    values = {
        f"{prefix}_p50_ns": latency.p50_ns,
        f"{prefix}_p90_ns": latency.p90_ns,
        f"{prefix}_p99_ns": latency.p99_ns,
        f"{prefix}_p99.9_ns": latency.p999_ns,
        f"{prefix}_max_ns": latency.max_ns,
        f"{prefix}_mean_ns": latency.mean_ns,
    }
    return {key: float(value) for key, value in values.items() if value is not None}


def _iostat_summary(report: IostatReport, devices: list[str]) -> dict[str, float]:
    """The worst device's figures (several disks only under device-mapper)."""
    summaries = [s for s in (report.summary(device) for device in devices) if s is not None]
    if not summaries:
        return {}
    worst = max(summaries, key=lambda s: (s.r_await_ms + s.w_await_ms, s.util_pct))
    return {
        "r_await_ms": worst.r_await_ms,
        "w_await_ms": worst.w_await_ms,
        "r_await_max_ms": worst.r_await_max_ms,
        "w_await_max_ms": worst.w_await_max_ms,
        "util_pct": worst.util_pct,
        "aqu_sz": worst.aqu_sz,
        # Everything the device moved, the test's own I/O and anyone else's.
        "device_MiB_s": worst.read_mib_s + worst.write_mib_s,
        "samples": float(worst.samples),
    }
