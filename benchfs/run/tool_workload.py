"""A tool run (``workload.tool`` = fio, ior or mdtest) in a target directory.

IOR and mdtest run as one MPI job through the run's launcher, as the
built-in ranks do; fio runs once per node, each in its own directory
(``<target>/<node>``; on the mount through the node's own mount point).
Where the tool works is a ``benchfs.run.tool_place`` place.
What the tool printed stays under ``workload/tool/`` (``analysis.layout``);
the analysis loaders turn it into the phases of ``workload/summary.json``,
so the report and ``compare`` treat a tool run like a built-in one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.convert.summary import summarize_outputs
from analysis.errors import AnalysisError
from analysis.layout import RunLayout
from analysis.loaders.detect import ToolOutput
from analysis.loaders.fio import FioReport
from analysis.loaders.ior_model import IorReport
from analysis.loaders.tools import LoadedOutput, load_tool_output
from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.processes import ManagedProcess, describe_status, stop_processes
from benchfs.config.model import WorkloadConfig
from benchfs.errors import ToolError
from benchfs.launchers.base import Launcher
from benchfs.results.atomic import write_json_atomic
from benchfs.run.tool_place import ToolPlace
from benchfs.tools.locate import find_tool, fio_version, version_line
from benchfs.tools.tool_argv import (
    IOR_DIR,
    MDTEST_DIR,
    check_fio_job,
    fio_argv,
    ior_argv,
    mdtest_argv,
)

POLL_S = 0.2
STOP_GRACE_S = 5.0
STDERR_TAIL_LINES = 3


@dataclass(frozen=True)
class ToolPlan:
    """A tool found and checked before anything starts."""

    tool: str
    binary: Path
    args: tuple[str, ...]
    fio_job: Path | None = None


@dataclass
class ToolRun:
    """What ran, for the manifest: the tool, its version line, its exact command lines."""

    tool: str
    binary: str
    version: str = ""
    commands: dict[str, list[str]] = field(default_factory=dict)  # node (or "job") -> argv
    launched: dict[str, list[str]] = field(default_factory=dict)  # the launcher's argv
    outputs: list[str] = field(default_factory=list)  # relative to the results directory
    ini: str | None = None  # the io500 binary's configuration, as given to it

    def record(self) -> dict[str, Any]:
        record = {
            "name": self.tool,
            "binary": self.binary,
            "version": self.version,
            "command_lines": self.commands,
            "launched": self.launched,
            "outputs": self.outputs,
        }
        return record if self.ini is None else {**record, "ini": self.ini}

    @classmethod
    def of(cls, plan: ToolPlan) -> ToolRun:
        return cls(plan.tool, str(plan.binary))


def plan_tool(workload: WorkloadConfig) -> ToolPlan | None:
    """The tool of ``workload`` found and its job file checked (None: the built-in workload).

    Called before any daemon or preflight starts, so a missing tool is the
    first thing the user hears of.
    """
    if workload.tool == "builtin":
        return None
    binary = find_tool(workload.tool, workload.tool_path)
    job = Path(workload.fio_job).expanduser().absolute() if workload.fio_job else None
    if job is not None:
        check_fio_job(job)
    if workload.tool == "fio" and job is None and not workload.tool_args:
        raise ToolError("fio needs a job: set workload.tool_args or workload.fio_job")
    plan = ToolPlan(workload.tool, binary, tuple(workload.tool_args), job)
    _tool_argv(plan, Path("/target"), Path("/summary.json"))  # refuses arguments benchfs sets
    return plan


def _tool_argv(plan: ToolPlan, directory: Path, summary_file: Path) -> list[str]:
    if plan.tool == "ior":
        return ior_argv(plan.binary, plan.args, directory, summary_file)
    if plan.tool == "mdtest":
        return mdtest_argv(plan.binary, plan.args, directory)
    return fio_argv(plan.binary, plan.args, directory, plan.fio_job)


@dataclass(frozen=True)
class ToolJob:
    where: str  # "" for the MPI job, else the node
    process: ManagedProcess
    stderr: Path


@dataclass(frozen=True)
class ToolContext:
    """What every tool run of a point shares: its processes start under
    ``life`` through ``launcher`` on ``hosts`` (``tasks_per_node`` ranks
    each, in ``env``), work in ``place``, print into ``layout``'s
    ``workload/tool/`` and end within ``deadline_s`` a phase; ``run`` is
    filled in as they start (for the manifest, also when one fails)."""

    life: Lifecycle
    launcher: Launcher
    hosts: Sequence[Host]
    tasks_per_node: int
    place: ToolPlace
    layout: RunLayout
    deadline_s: float
    run: ToolRun
    env: Mapping[str, str] | None = None

    @property
    def tasks(self) -> int:
        return len(self.hosts) * self.tasks_per_node

    def start_ranks(
        self, argv: list[str], *, name: str, stdout: Path, stderr: Path, recorded_as: str = ""
    ) -> ToolJob:
        """``argv`` as one MPI job of every rank, each starting where the
        place says; its command lines recorded under ``recorded_as`` (or
        ``name``)."""
        launched = self.launcher.ranks_command(
            self.hosts, self.tasks_per_node, self.place.rank_argv(argv)
        )
        key = recorded_as or name
        self.run.commands[key], self.run.launched[key] = argv, launched
        process = self.life.start(launched, name=name, env=self.env, stdout=stdout, stderr=stderr,
                                  stuck_when=self.launcher.stuck_output())  # fmt: skip
        return ToolJob("", process, stderr)


def run_tool_workload(plan: ToolPlan, context: ToolContext) -> dict[str, Any]:
    """Run the tool in the context's place, keep its output, write and
    return ``workload/summary.json``."""
    layout, run = context.layout, context.run
    layout.tool_output_dir.mkdir(parents=True, exist_ok=True)
    if plan.tool == "fio":
        run.version = fio_version(plan.binary)
        context.place.make(*(host.name for host in context.hosts))
        jobs = _start_fio(plan, context)
    else:
        context.place.make(IOR_DIR if plan.tool == "ior" else MDTEST_DIR)
        argv = _tool_argv(plan, context.place.directory, layout.ior_summary.absolute())
        job = context.start_ranks(argv, name=plan.tool, recorded_as="job",
                                  stdout=layout.tool_stdout(plan.tool),
                                  stderr=layout.tool_stderr(plan.tool))  # fmt: skip
        jobs = [job]
    try:
        wait_for_jobs(plan.tool, jobs, context.deadline_s, layout)
    finally:
        run.outputs = sorted(
            str(p.relative_to(layout.root)) for p in layout.tool_output_dir.iterdir()
        )
        stdout = layout.tool_stdout(plan.tool)
        if plan.tool != "fio" and stdout.is_file():
            run.version = version_line(plan.tool, stdout.read_text(errors="replace"))
    outputs = _load_outputs(plan.tool, context.hosts, layout)
    report = outputs[0].report
    if isinstance(report, IorReport) and report.version:
        # IOR has no --version, and with a summary file its stdout names none.
        run.version = f"IOR-{report.version}"
    document = summarize_outputs(outputs, layout.workload_dir).document()
    write_json_atomic(layout.summary, document)
    return document


def _start_fio(plan: ToolPlan, context: ToolContext) -> list[ToolJob]:
    layout, run = context.layout, context.run
    jobs = []
    for host in context.hosts:
        directory = context.place.host_dir(host.name)
        argv = _tool_argv(plan, directory, layout.ior_summary)
        launched = context.launcher.command(host, argv)
        run.commands[host.name], run.launched[host.name] = argv, launched
        stderr = layout.tool_stderr("fio", host.name)
        stdout = layout.tool_stdout("fio", host.name)
        name = f"fio on {host.name}"
        stuck_when = context.launcher.stuck_output()
        process = context.life.start(launched, name=name, env=context.env, stdout=stdout,
                                     stderr=stderr, stuck_when=stuck_when)  # fmt: skip
        jobs.append(ToolJob(host.name, process, stderr))
    return jobs


def wait_for_jobs(tool: str, jobs: list[ToolJob], deadline_s: float, layout: RunLayout) -> None:
    """Until every job ends; the first that failed (or the deadline) is an error."""
    ends = time.monotonic() + deadline_s
    kept = f"what it printed is in {layout.tool_output_dir}"
    failed: ToolJob | None = None
    try:
        while failed is None and any(job.process.popen.poll() is None for job in jobs):
            failed = next((job for job in jobs if job.process.popen.poll() not in (None, 0)), None)
            for job in jobs:
                stuck = job.process.stuck()
                if stuck is not None:
                    where = f" on {job.where}" if job.where else ""
                    raise ToolError(f"{tool}{where} cannot finish: {stuck}; {kept}")
            if time.monotonic() > ends:
                raise ToolError(
                    f"{tool} did not finish within {deadline_s:g} s "
                    f"(cluster.deadlines.phase_s); {kept}"
                )
            time.sleep(POLL_S)
    finally:
        stop_processes([job.process for job in jobs], STOP_GRACE_S)
        for job in jobs:
            job.process.close_files()
            if job.stderr.is_file() and job.stderr.stat().st_size == 0:
                job.stderr.unlink()  # kept only when the tool said something
    failed = failed or next((job for job in jobs if job.process.popen.returncode != 0), None)
    if failed is not None:
        where = f" on {failed.where}" if failed.where else ""
        status = describe_status(failed.process.popen.returncode)
        raise ToolError(f"{tool}{where} {status}: {stderr_tail(failed.stderr)}; {kept}")


def stderr_tail(path: Path) -> str:
    text = path.read_text(errors="replace") if path.is_file() else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(lines[-STDERR_TAIL_LINES:]) if lines else "nothing on stderr"


def _load_outputs(tool: str, hosts: Sequence[Host], layout: RunLayout) -> list[LoadedOutput]:
    try:
        if tool == "ior":
            return [_load(layout.ior_summary, ToolOutput.IOR_JSON, "its JSON summary file")]
        if tool == "mdtest":
            return [_load(layout.tool_stdout("mdtest"), ToolOutput.MDTEST_TEXT, "any output")]
        reports = [_load(layout.tool_stdout("fio", h.name), ToolOutput.FIO_JSON, "a report")
                   for h in hosts]  # fmt: skip
    except AnalysisError as error:
        raise ToolError(f"{tool}: {error}") from error
    return [_merge_fio(reports, layout.tool_output_dir)]


def _load(path: Path, kind: ToolOutput, what: str) -> LoadedOutput:
    if not path.is_file() or path.stat().st_size == 0:
        raise ToolError(f"{kind.tool} exited 0 but left no {what}: {path} is empty or absent")
    return load_tool_output(path, kind)


def _merge_fio(outputs: list[LoadedOutput], directory: Path) -> LoadedOutput:
    """The reports of every node as one run: the phases sum the nodes' jobs."""
    if len(outputs) == 1:
        return outputs[0]
    reports = [o.report for o in outputs if isinstance(o.report, FioReport)]
    merged = FioReport(
        source=str(directory),
        fio_version=reports[0].fio_version,
        jobs=tuple(job for report in reports for job in report.jobs),
        global_options=reports[0].global_options,
    )
    return LoadedOutput(directory, ToolOutput.FIO_JSON, merged)
