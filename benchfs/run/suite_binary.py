"""The IO500 suite run by the reference's own io500 binary
(``suite.tool = "io500"``) on a mounted file system: an ini made from the
``[suite]`` settings (``benchfs.tools.io500_ini``), the binary as one MPI
job through the run's launcher, its datadir in the tool's directory
(``benchfs.run.tool_place``: on the mount relative to each rank's own mount
point, where the ranks start) and its
resultdir under ``workload/tool/io500/``. The binary's own result summary,
figures and verdicts become the suite's summary
(``analysis.convert.io500_binary``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.convert.io500_binary import binary_suite_document
from analysis.errors import AnalysisError
from analysis.io500 import PHASE_NAMES
from analysis.layout import tool_output_name
from analysis.loaders.io500 import load_io500_results
from benchfs.config.model import RunConfig
from benchfs.config.suite import SuiteSizes
from benchfs.errors import ToolError
from benchfs.results.atomic import write_json_atomic
from benchfs.run.tool_workload import ToolContext, wait_for_jobs
from benchfs.tools.io500_argv import whole_seconds
from benchfs.tools.io500_ini import INI_NAME, RESULT_DIR, io500_argv, io500_ini
from benchfs.tools.locate import find_tool
from benchfs.workload.io500_rank import applied_checks

SETTING = "suite.tool_path"
JOB = "io500"
DATA_DIR = "io500-data"
# The binary runs every phase in one job (the twelve scored, the timestamp and
# ior-rnd4K-easy-read): its deadline is that many phase deadlines.
PHASES_IN_JOB = len(PHASE_NAMES) + 2


@dataclass(frozen=True)
class Io500BinaryPlan:
    """The io500 binary found before anything starts, and the suite's sizes."""

    binary: Path
    sizes: SuiteSizes
    tool: str = "io500"


def plan_io500_binary(config: RunConfig) -> Io500BinaryPlan | None:
    """The binary of a ``suite.tool = "io500"`` suite (None otherwise); a missing
    one names ``suite.tool_path`` and ``$IO500_BIN_DIR``."""
    suite = config.suite
    if suite.name == "none" or suite.tool != "io500":
        return None
    return Io500BinaryPlan(find_tool("io500", suite.tool_path, setting=SETTING), suite.sizes())


def run_io500_binary(plan: Io500BinaryPlan, context: ToolContext) -> dict[str, Any]:
    """The binary over every phase; writes and returns ``workload/summary.json``."""
    layout, place, run = context.layout, context.place, context.run
    outputs = layout.tool_output_dir
    outputs.mkdir(parents=True, exist_ok=True)
    place.make(DATA_DIR)
    results = (outputs / RESULT_DIR).absolute()
    ini = outputs / INI_NAME
    ini.write_text(io500_ini(plan.sizes, place.directory / DATA_DIR, results))
    run.ini = ini.read_text()
    argv = io500_argv(plan.binary, ini.absolute())
    stdout = outputs / tool_output_name(JOB)
    stderr = outputs / tool_output_name(JOB, suffix=".stderr")
    try:
        job = context.start_ranks(argv, name=JOB, stdout=stdout, stderr=stderr)
        wait_for_jobs(JOB, [job], context.deadline_s * PHASES_IN_JOB, layout)
        try:
            result, log = load_io500_results(results)
        except AnalysisError as error:
            raise ToolError(f"io500 exited 0 but its results are unreadable: {error}") from error
    finally:
        run.outputs = sorted(
            str(p.relative_to(layout.root)) for p in outputs.rglob("*") if p.is_file()
        )
    run.version = result.version
    suite = {**plan.sizes.to_json(), "target": place.target, "tasks": context.tasks,
             "tasks_per_node": context.tasks_per_node, "checks": applied_checks("io500", True),
             # What the binary ran with: its stonewall-time is whole seconds.
             "stonewall_s": float(whole_seconds(plan.sizes.stonewall_s))}  # fmt: skip
    document = binary_suite_document(result, log, suite)
    write_json_atomic(layout.summary, document)
    return document
