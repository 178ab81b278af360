"""The IO500 suite with IOR and mdtest (``suite.tool = "ior"``) on a
``posix:PATH`` target or BenchFS's mount: each phase one MPI job of the
real tool with IO500's arguments (``benchfs.tools.io500_argv``), in IO500's
order, through the run's launcher; the timestamp after mdtest-easy-write
and find are BenchFS's own (``benchfs.workload.io500_find``, one process, as
the reference's external find), where the tool's directory is
(``benchfs.run.workloads.place``: here, or on the first node through its mount).

What the tools print stays under ``workload/tool/`` (``<phase>.out``,
``<phase>.json`` for IOR, the stonewall status files and per-rank CSVs);
``analysis.convert.io500`` turns it into the suite's summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from analysis.convert.io500 import suite_document, tool_phase_row, with_figure
from analysis.errors import AnalysisError
from analysis.io500 import PHASE_NAMES
from analysis.layout import RunLayout, tool_output_name
from analysis.loaders.detect import ToolOutput
from analysis.loaders.ior_model import IorReport
from analysis.loaders.tools import load_tool_output
from analysis.phases import MetadataPhase
from benchfs import __version__
from benchfs.config.model import RunConfig
from benchfs.config.suite import SuiteSizes
from benchfs.errors import ToolError
from benchfs.run.workloads.base import Point, Summary, register_workload
from benchfs.run.workloads.external import ExternalWorkload, ToolContext, ToolRun
from benchfs.run.workloads.place import ToolPlace
from benchfs.run.workloads.ranks import SuiteMode
from benchfs.tools.io500_argv import SuitePlaces, ior_summary_file, phase_argv
from benchfs.tools.locate import find_tool
from benchfs.workload.io500_rank import FIND_NAME, FIND_SIZE, ROOT, applied_checks

SETTING = "suite.tool_path"


@dataclass(frozen=True)
class SuiteToolPlan:
    """IOR and mdtest found before anything starts."""

    binary: Path  # ior
    mdtest: Path
    seed: int


def plan_suite_tools(config: RunConfig, seed: int) -> SuiteToolPlan:
    """The tools of a ``suite.tool = "ior"`` suite; a missing one names it
    and ``suite.tool_path``."""
    suite = config.suite
    ior = find_tool("ior", suite.tool_path, setting=SETTING)
    mdtest = find_tool("mdtest", suite.tool_path, setting=SETTING)
    return SuiteToolPlan(ior, mdtest, seed)


# The directories the suite's tools work in.
SUBDIRS = (ROOT, f"{ROOT}/ior-easy", f"{ROOT}/ior-hard")


def run_suite_tools(plan: SuiteToolPlan, sizes: SuiteSizes, context: ToolContext) -> Summary:
    """Every phase in IO500's order with ``sizes``, in the context's place
    (made with ``SUBDIRS``); the suite's summary document."""
    layout, place, run = context.layout, context.place, context.run
    results = layout.tool_output_dir
    places = SuitePlaces(place.directory / ROOT, results.absolute(), plan.seed)
    rows: list[dict[str, Any]] = []
    timestamp_ns = 0
    try:
        for phase in PHASE_NAMES:
            if phase == "find":
                rows.append(_find(place, timestamp_ns))
                continue
            argv = phase_argv(phase, plan.binary, plan.mdtest, sizes, places)
            stdout = results / tool_output_name(phase)
            stderr = results / tool_output_name(phase, suffix=".stderr")
            job = context.start_ranks(argv, name=phase, stdout=stdout, stderr=stderr)
            context.wait(phase, [job])
            rows.append(_phase_row(phase, places, stdout, layout, run))
            if phase == "mdtest-easy-write":
                timestamp_ns = place.timestamp()
    finally:
        run.outputs = sorted(str(p.relative_to(layout.root)) for p in results.iterdir())
    suite = {**sizes.model_dump(), "target": place.target,
             "tasks": context.tasks, "tasks_per_node": context.tasks_per_node,
             "checks": applied_checks("ior", True)}  # fmt: skip
    return suite_document(rows, suite)


def _phase_row(
    phase: str, places: SuitePlaces, stdout: Path, layout: RunLayout, run: ToolRun
) -> dict[str, Any]:
    ior = phase.startswith("ior-")
    path = ior_summary_file(places, phase) if ior else stdout
    if not path.is_file() or path.stat().st_size == 0:
        raise ToolError(f"{phase} exited 0 but left no output: {path} is empty or absent")
    try:
        output = load_tool_output(path, ToolOutput.IOR_JSON if ior else ToolOutput.MDTEST_TEXT)
        row = tool_phase_row(phase, output, layout.workload_dir)
    except AnalysisError as error:
        raise ToolError(f"{phase}: {error}") from error
    if isinstance(output.report, IorReport) and output.report.version and not run.version:
        run.version = f"IOR-{output.report.version}"
    return row


def _find(place: ToolPlace, timestamp_ns: int) -> dict[str, Any]:
    """BenchFS's find over the suite's tree, in one process where the tree is."""
    count = place.find(timestamp_ns)
    scanned, elapsed = count.scanned, count.elapsed_s
    rate = scanned / elapsed if elapsed > 0 else None
    row = MetadataPhase(
        phase="find", tool="benchfs", tool_version=__version__, tasks=1, repetitions=1,
        items=scanned, rate_max_ops_s=rate, rate_min_ops_s=rate, rate_mean_ops_s=rate,
        rate_stddev_ops_s=0.0, time_max_s=elapsed, time_min_s=elapsed, time_mean_s=elapsed,
        time_stddev_s=0.0,
    ).to_row()  # fmt: skip
    criteria = {"name": FIND_NAME, "size": FIND_SIZE, "newer": "mdtest-easy-write"}
    row.update(found=count.found, criteria=criteria)
    return with_figure(row)


@register_workload
class SuiteToolsWorkload(SuiteMode, ExternalWorkload):
    """IO500's phases by IOR and mdtest (``suite.tool = "ior"``)."""

    name = "suite-ior"
    tool = "ior+mdtest"

    def __init__(self, plan: SuiteToolPlan) -> None:
        super().__init__()
        self.tools, self.binary = plan, plan.binary

    @classmethod
    def selects(cls, config: RunConfig) -> bool:
        return config.suite.name != "none" and config.suite.tool == "ior"

    @classmethod
    def plan(cls, config: RunConfig, seed: int) -> Self:
        return cls(plan_suite_tools(config, seed))

    def subdirs(self, point: Point) -> Sequence[str]:
        return SUBDIRS

    def run_tool(self, point: Point, context: ToolContext) -> Summary:
        return run_suite_tools(self.tools, point.config.suite.sizes(), context)
