"""A tool run (``workload.tool`` = fio, ior or mdtest) in a target directory.

IOR and mdtest run as one MPI job through the run's launcher, as the
built-in ranks do; fio runs once per node, each in its own directory
(``<target>/<node>``; on the mount through the node's own mount point).
Where the tool works is a ``benchfs.run.workloads.place`` place.
What the tool printed stays under ``workload/tool/`` (``analysis.layout``);
the analysis loaders turn it into the phases of ``workload/summary.json``,
so the report and ``compare`` treat a tool run like a built-in one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from analysis.convert.summary import summarize_outputs
from analysis.errors import AnalysisError
from analysis.layout import RunLayout
from analysis.loaders.detect import ToolOutput
from analysis.loaders.fio import FioReport
from analysis.loaders.ior_model import IorReport
from analysis.loaders.tools import LoadedOutput, load_tool_output
from benchfs.cluster.hostfile import Host
from benchfs.config.model import RunConfig, WorkloadConfig
from benchfs.errors import ToolError
from benchfs.run.workloads.base import Point, Summary, register_workload
from benchfs.run.workloads.external import ExternalWorkload, ToolContext, ToolJob
from benchfs.tools.locate import find_tool, fio_version, version_line
from benchfs.tools.tool_argv import (
    IOR_DIR,
    MDTEST_DIR,
    check_fio_job,
    fio_argv,
    ior_argv,
    mdtest_argv,
)


@dataclass(frozen=True)
class ToolPlan:
    """A tool found and checked before anything starts."""

    tool: str
    binary: Path
    args: tuple[str, ...]
    fio_job: Path | None = None


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


def tool_subdirs(plan: ToolPlan, hosts: Sequence[Host]) -> list[str]:
    """The directories of the tool's place: one per node for fio."""
    if plan.tool == "fio":
        return [host.name for host in hosts]
    return [IOR_DIR if plan.tool == "ior" else MDTEST_DIR]


def run_tool_workload(plan: ToolPlan, context: ToolContext) -> Summary:
    """Run the tool in the context's place (made with ``tool_subdirs``),
    keep its output; the summary document of its phases."""
    layout, run = context.layout, context.run
    if plan.tool == "fio":
        run.version = fio_version(plan.binary)
        jobs = _start_fio(plan, context)
    else:
        argv = _tool_argv(plan, context.place.directory, layout.ior_summary.absolute())
        job = context.start_ranks(argv, name=plan.tool, recorded_as="job",
                                  stdout=layout.tool_stdout(plan.tool),
                                  stderr=layout.tool_stderr(plan.tool))  # fmt: skip
        jobs = [job]
    try:
        context.wait(plan.tool, jobs)
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
    return summarize_outputs(outputs, layout.workload_dir).document()


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


@register_workload
class ToolWorkload(ExternalWorkload):
    """fio, IOR or mdtest with the user's own arguments (``workload.tool``)."""

    name = "tool"

    def __init__(self, plan: ToolPlan) -> None:
        super().__init__()
        self.tool_plan = plan
        self.tool, self.binary = plan.tool, plan.binary

    @classmethod
    def selects(cls, config: RunConfig) -> bool:
        return config.workload.tool != "builtin"

    @classmethod
    def plan(cls, config: RunConfig, seed: int) -> Self:
        plan = plan_tool(config.workload)
        assert plan is not None
        return cls(plan)

    def subdirs(self, point: Point) -> Sequence[str]:
        return tool_subdirs(self.tool_plan, point.hosts)

    def run_tool(self, point: Point, context: ToolContext) -> Summary:
        return run_tool_workload(self.tool_plan, context)
