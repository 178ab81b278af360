"""The IO500 suite run by the reference's own io500 binary
(``suite.tool = "io500"``) on a mounted file system: an ini made from the
``[suite]`` settings (``benchfs.tools.io500_ini``), the binary as one MPI
job through the run's launcher, its datadir in the tool's directory
(``benchfs.run.workloads.place``: on the mount relative to each rank's own mount
point, where the ranks start) and its
resultdir under ``workload/tool/io500/``. The binary's own result summary,
figures and verdicts become the suite's summary
(``analysis.convert.io500_binary``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Self

from analysis.convert.io500_binary import binary_suite_document
from analysis.errors import AnalysisError
from analysis.io500 import PHASE_NAMES
from analysis.layout import tool_output_name
from analysis.loaders.io500 import load_io500_results
from benchfs.config.model import RunConfig
from benchfs.config.suite import SuiteSizes
from benchfs.errors import ToolError
from benchfs.run.workloads.base import Point, Summary, register_workload
from benchfs.run.workloads.external import ExternalWorkload, ToolContext
from benchfs.run.workloads.ranks import SuiteMode
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


def find_io500_binary(config: RunConfig) -> Path:
    """The binary of a ``suite.tool = "io500"`` suite; a missing one names
    ``suite.tool_path`` and ``$IO500_BIN_DIR``."""
    return find_tool("io500", config.suite.tool_path, setting=SETTING)


def run_io500_binary(binary: Path, sizes: SuiteSizes, context: ToolContext) -> Summary:
    """The binary over every phase with ``sizes``, its datadir ``DATA_DIR``
    in the context's place; the suite's summary document."""
    layout, place, run = context.layout, context.place, context.run
    outputs = layout.tool_output_dir
    results = (outputs / RESULT_DIR).absolute()
    ini = outputs / INI_NAME
    ini.write_text(io500_ini(sizes, place.directory / DATA_DIR, results))
    run.ini = ini.read_text()
    argv = io500_argv(binary, ini.absolute())
    stdout = outputs / tool_output_name(JOB)
    stderr = outputs / tool_output_name(JOB, suffix=".stderr")
    try:
        job = context.start_ranks(argv, name=JOB, stdout=stdout, stderr=stderr)
        context.wait(JOB, [job], context.deadline_s * PHASES_IN_JOB)
        try:
            result, log = load_io500_results(results)
        except AnalysisError as error:
            raise ToolError(f"io500 exited 0 but its results are unreadable: {error}") from error
    finally:
        run.outputs = sorted(
            str(p.relative_to(layout.root)) for p in outputs.rglob("*") if p.is_file()
        )
    run.version = result.version
    suite = {**sizes.model_dump(), "target": place.target, "tasks": context.tasks,
             "tasks_per_node": context.tasks_per_node, "checks": applied_checks("io500", True),
             # What the binary ran with: its stonewall-time is whole seconds.
             "stonewall_s": float(whole_seconds(sizes.stonewall_s))}  # fmt: skip
    return binary_suite_document(result, log, suite)


@register_workload
class Io500BinaryWorkload(SuiteMode, ExternalWorkload):
    """IO500's phases by the reference's io500 binary (``suite.tool = "io500"``)."""

    name = "suite-io500"
    tool = "io500"

    def __init__(self, binary: Path) -> None:
        super().__init__()
        self.binary = binary

    @classmethod
    def selects(cls, config: RunConfig) -> bool:
        return config.suite.name != "none" and config.suite.tool == "io500"

    @classmethod
    def plan(cls, config: RunConfig, seed: int) -> Self:
        return cls(find_io500_binary(config))

    def subdirs(self, point: Point) -> Sequence[str]:
        return (DATA_DIR,)

    def run_tool(self, point: Point, context: ToolContext) -> Summary:
        return run_io500_binary(self.binary, point.config.suite.sizes(), context)
