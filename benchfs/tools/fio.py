"""Run real fio jobs in a directory and return the parsed report.

Jobs given to one ``run_fio`` call run one after the other (``stonewall``),
each in its own reporting group, so the report holds exactly one entry per
``FioJob``, in order, with its ``numjobs`` processes summed by fio itself.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.loaders.fio import (
    FioFormatError,
    FioReport,
    merge_bw_logs,
    parse_fio_bw_log,
    parse_fio_json,
)
from benchfs.config.sizes import parse_size
from benchfs.errors import ToolError
from benchfs.tools.huge_pages import require_huge_pages
from benchfs.tools.process import run_tool

_DIRECTION_NAMES = {0: "read", 1: "write", 2: "trim"}


@dataclass(frozen=True)
class FioJob:
    """One fio job; sizes and block sizes take fio's notation ("4k", "1M") or bytes."""

    name: str
    rw: str
    bs: str | int
    iodepth: int
    size: str | int
    numjobs: int = 1
    direct: bool = True
    ioengine: str = "io_uring"
    runtime_s: float | None = None  # set: time based for this long; None: until size is done
    fsync: int = 0  # fsync after this many writes (0: never)
    nrfiles: int = 1
    rwmixread: int | None = None
    unlink: bool = True  # remove the job's files when it ends
    # Buffers from the kernel's huge-page pool (iomem=mmaphuge), as the engine's lie on
    # huge pages; see ``huge_pages``.
    huge_pages: bool = False
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def buffer_bytes(self) -> int:
        """One process's I/O buffers: ``iodepth`` blocks."""
        return self.iodepth * parse_size(self.bs)

    @property
    def memory(self) -> str:
        """Where the buffers lie, as a figure's setup says it."""
        return "huge pages (iomem=mmaphuge)" if self.huge_pages else "4 KiB pages (iomem=malloc)"

    def arguments(self) -> list[str]:
        """fio command-line options of this job (after the global ones)."""
        args = [
            f"--name={self.name}",
            f"--rw={self.rw}",
            f"--bs={self.bs}",
            f"--iodepth={self.iodepth}",
            f"--size={self.size}",
            f"--numjobs={self.numjobs}",
            f"--direct={int(self.direct)}",
            f"--ioengine={self.ioengine}",
            f"--nrfiles={self.nrfiles}",
            f"--unlink={int(self.unlink)}",
        ]
        if self.runtime_s is not None:
            args += [f"--runtime={_seconds(self.runtime_s)}", "--time_based"]
        if self.fsync:
            args.append(f"--fsync={self.fsync}")
        if self.rwmixread is not None:
            args.append(f"--rwmixread={self.rwmixread}")
        if self.huge_pages:
            args.append("--iomem=mmaphuge")
        args += [f"--{key}={value}" for key, value in self.extra.items()]
        return args


def fio_command(
    jobs: Sequence[FioJob],
    directory: Path,
    *,
    json_plus: bool = False,
    bw_log_dir: Path | None = None,
    bw_log_ms: int = 500,
    fio_binary: str = "fio",
) -> list[str]:
    """The exact fio argv that ``run_fio`` runs."""
    if not jobs:
        raise ToolError("fio: no jobs to run")
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise ToolError(f"fio: job names must be unique, got {names}")
    argv = [
        fio_binary,
        f"--output-format={'json+' if json_plus else 'json'}",
        "--group_reporting",
        f"--directory={directory}",
    ]
    for index, job in enumerate(jobs):
        argv += job.arguments()
        if index > 0:
            argv += ["--stonewall", "--new_group"]
        if bw_log_dir is not None:
            argv += [f"--write_bw_log={bw_log_dir / job.name}", f"--log_avg_msec={bw_log_ms}"]
    return argv


def run_fio(
    jobs: Sequence[FioJob],
    directory: Path,
    *,
    timeout_s: float,
    raw_output: Path | None = None,
    json_plus: bool = False,
    bw_log_ms: int | None = None,
    fio_binary: str = "fio",
    env: Mapping[str, str] | None = None,
) -> FioReport:
    """Run ``jobs`` one after the other in ``directory`` and parse fio's JSON.

    ``raw_output``: where to keep fio's stdout (and bandwidth logs beside it).
    ``bw_log_ms``: record bandwidth every so many ms and attach it as
    ``Direction.bw_samples``. Raises ToolError naming fio and the directory
    when fio is absent, times out, fails, or prints no valid report.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ToolError(f"fio cannot run in {directory}: not an existing directory")
    # The jobs run one after the other: the largest one's processes hold the pool at once.
    huge = [[job.buffer_bytes] * job.numjobs for job in jobs if job.huge_pages]
    if huge:
        require_huge_pages(max(huge, key=sum))
    with tempfile.TemporaryDirectory(prefix="benchfs-fio-") as scratch:
        log_dir = _bw_log_dir(raw_output, Path(scratch)) if bw_log_ms else None
        argv = fio_command(
            jobs,
            directory,
            json_plus=json_plus,
            bw_log_dir=log_dir,
            bw_log_ms=bw_log_ms or 500,
            fio_binary=fio_binary,
        )
        result = run_tool(argv, tool="fio", where=str(directory), timeout_s=timeout_s, env=env)
        if raw_output is not None:
            raw_output.parent.mkdir(parents=True, exist_ok=True)
            raw_output.write_text(result.stdout)
            if result.stderr:
                raw_output.with_name(raw_output.name + ".stderr").write_text(result.stderr)
        source = str(raw_output) if raw_output else f"fio output for {directory}"
        try:
            report = parse_fio_json(result.stdout, source)
        except FioFormatError as exc:
            if result.returncode != 0:
                raise ToolError(_failure(directory, result.returncode, result.stderr)) from exc
            raise ToolError(f"fio in {directory}: {exc}") from exc
        failed = [job for job in report.jobs if job.error]
        if result.returncode != 0 or failed:
            detail = ", ".join(f"job {job.name} error {job.error}" for job in failed)
            raise ToolError(_failure(directory, result.returncode, result.stderr, detail))
        if log_dir is not None and bw_log_ms:
            report = report.with_bw_samples(_bw_samples(jobs, log_dir, bw_log_ms))
        return report


def _bw_log_dir(raw_output: Path | None, scratch: Path) -> Path:
    if raw_output is None:
        return scratch
    log_dir = raw_output.with_name(raw_output.stem + "_bwlogs")
    log_dir.mkdir(parents=True, exist_ok=True)
    return log_dir


def _bw_samples(
    jobs: Sequence[FioJob], log_dir: Path, interval_ms: int
) -> dict[tuple[str, str], list[float]]:
    samples: dict[tuple[str, str], list[float]] = {}
    for job in jobs:
        per_direction: dict[int, list[list[tuple[int, float]]]] = {}
        for log in sorted(log_dir.glob(f"{job.name}_bw.*.log")):
            try:
                parsed = parse_fio_bw_log(log.read_text(), str(log))
            except FioFormatError as exc:
                raise ToolError(f"fio in {log_dir}: {exc}") from exc
            for direction, series in parsed.items():
                per_direction.setdefault(direction, []).append(series)
        for direction, logs in per_direction.items():
            name = _DIRECTION_NAMES.get(direction)
            if name is not None:
                samples[(job.name, name)] = merge_bw_logs(logs, interval_ms)
    return samples


def _failure(directory: Path, returncode: int, stderr: str, detail: str = "") -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    tail = "; ".join(lines[-3:]) if lines else "no message"
    extra = f" ({detail})" if detail else ""
    return f"fio failed in {directory} with exit code {returncode}{extra}: {tail}"


def _seconds(value: float) -> str:
    return f"{int(value)}" if float(value).is_integer() else f"{int(value * 1000)}ms"


def fio_available(fio_binary: str = "fio", path: str | None = None) -> bool:
    return shutil.which(fio_binary, path=path) is not None
