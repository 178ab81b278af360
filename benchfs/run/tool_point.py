"""One sweep point whose workload is a tool (``workload.tool``, or the
IO500 suite with ``suite.tool = "ior"``) on a ``posix:PATH`` target: no
daemons; iostat on every host, the tool in ``PATH/benchfs-<token>-p<k>/``,
what ran in the manifest's ``tool``."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.layout import RunLayout
from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.private import make_private_dir
from benchfs.config.model import RunConfig
from benchfs.launchers.base import Launcher
from benchfs.results.manifest import ManifestRecorder
from benchfs.run.cluster import process_environment
from benchfs.run.stragglers import straggler_record
from benchfs.run.suite_tools import SuiteToolPlan, run_suite_tools
from benchfs.run.tool_workload import ToolPlan, ToolRun, run_tool_workload
from benchfs.tools.iostat import IostatWatch, IostatWatches


def run_tool_point(
    life: Lifecycle,
    plan: ToolPlan | SuiteToolPlan,
    config: RunConfig,
    hosts: Sequence[Host],
    launcher: Launcher,
    layout: RunLayout,
    record: ManifestRecorder,
    directory: Path,
    env: Mapping[str, str],
    notes: list[str],
) -> tuple[dict[str, Any], list[str]]:
    """The tool's summary document and the stragglers' lines."""
    make_private_dir(directory, exist_ok=False)
    run = ToolRun(plan.tool, str(plan.binary))
    watches = IostatWatches(
        [IostatWatch(host, launcher, raw_output=layout.iostat_file(host.name), env=env)
         for host in hosts]
    )  # fmt: skip
    stragglers: list[str] = []
    watches.start()
    try:
        common = (launcher, hosts, config.workload.tasks_per_node, directory, layout)
        options: dict[str, Any] = {"deadline_s": config.cluster.deadlines.phase_s,
                                   "env": process_environment(env), "run": run}  # fmt: skip
        if isinstance(plan, SuiteToolPlan):
            summary = run_suite_tools(life, plan, *common, **options)
        else:
            summary = run_tool_workload(life, plan, *common, **options)
    finally:
        watches.stop()
        record.tool(run.record())
        record.target({"target": config.workload.target, "directory": str(directory)})
        if launcher.capabilities.runs_here and not config.workload.keep_files:
            shutil.rmtree(directory, ignore_errors=True)
        notes += watches.notes
        if isinstance(sys.exception(), Exception | None):
            try:
                found, stragglers = straggler_record(layout.root)
                record.stragglers(found)
            except Exception as error:  # an observer: the run stands without it
                notes.append(f"stragglers not checked: {type(error).__name__}: {error}")
    return summary, stragglers
