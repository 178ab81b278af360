"""The IO500 suite with IOR and mdtest (``suite.tool = "ior"``) on a
``posix:PATH`` target or BenchFS's mount: each phase one MPI job of the
real tool with IO500's arguments (``benchfs.tools.io500_argv``), in IO500's
order, through the run's launcher; the timestamp after mdtest-easy-write
and find are BenchFS's own (``benchfs.workload.io500_find``, one process, as
the reference's external find), where the tool's directory is
(``benchfs.run.tool_place``: here, or on the first node through its mount).

What the tools print stays under ``workload/tool/`` (``<phase>.out``,
``<phase>.json`` for IOR, the stonewall status files and per-rank CSVs);
``analysis.convert.io500`` turns it into the suite's summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from benchfs.results.atomic import write_json_atomic
from benchfs.run.tool_place import ToolPlace
from benchfs.run.tool_workload import ToolContext, ToolRun, wait_for_jobs
from benchfs.tools.io500_argv import SuitePlaces, ior_summary_file, phase_argv
from benchfs.tools.locate import find_tool
from benchfs.workload.io500_rank import FIND_NAME, FIND_SIZE, ROOT, applied_checks

SETTING = "suite.tool_path"


@dataclass(frozen=True)
class SuiteToolPlan:
    """IOR and mdtest found before anything starts, and the suite's sizes."""

    binary: Path  # ior
    mdtest: Path
    sizes: SuiteSizes
    seed: int
    tool: str = "ior+mdtest"


def plan_suite_tools(config: RunConfig, seed: int) -> SuiteToolPlan | None:
    """The tools of a ``suite.tool = "ior"`` suite (None otherwise); a missing
    one names it and ``suite.tool_path``."""
    suite = config.suite
    if suite.name == "none" or suite.tool != "ior":
        return None
    ior = find_tool("ior", suite.tool_path, setting=SETTING)
    mdtest = find_tool("mdtest", suite.tool_path, setting=SETTING)
    return SuiteToolPlan(ior, mdtest, suite.sizes(), seed)


def run_suite_tools(plan: SuiteToolPlan, context: ToolContext) -> dict[str, Any]:
    """Every phase in IO500's order; writes and returns ``workload/summary.json``."""
    layout, place, run = context.layout, context.place, context.run
    results = layout.tool_output_dir
    results.mkdir(parents=True, exist_ok=True)
    place.make(ROOT, f"{ROOT}/ior-easy", f"{ROOT}/ior-hard")
    places = SuitePlaces(place.directory / ROOT, results.absolute(), plan.seed)
    rows: list[dict[str, Any]] = []
    timestamp_ns = 0
    try:
        for phase in PHASE_NAMES:
            if phase == "find":
                rows.append(_find(place, timestamp_ns))
                continue
            argv = phase_argv(phase, plan.binary, plan.mdtest, plan.sizes, places)
            stdout = results / tool_output_name(phase)
            stderr = results / tool_output_name(phase, suffix=".stderr")
            job = context.start_ranks(argv, name=phase, stdout=stdout, stderr=stderr)
            wait_for_jobs(phase, [job], context.deadline_s, layout)
            rows.append(_phase_row(phase, places, stdout, layout, run))
            if phase == "mdtest-easy-write":
                timestamp_ns = place.timestamp()
    finally:
        run.outputs = sorted(str(p.relative_to(layout.root)) for p in results.iterdir())
    suite = {**plan.sizes.to_json(), "target": place.target,
             "tasks": context.tasks, "tasks_per_node": context.tasks_per_node,
             "checks": applied_checks("ior", True)}  # fmt: skip
    document = suite_document(rows, suite)
    write_json_atomic(layout.summary, document)
    return document


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
