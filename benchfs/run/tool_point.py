"""One sweep point whose workload is a tool (``workload.tool``, or the
IO500 suite with ``suite.tool = "ior"`` or ``"io500"``) on a mounted file system: a
``posix:PATH`` target (no daemons), the tool in ``PATH/benchfs-<token>-p<k>/``;
or BenchFS through its mount (``workload.interface = "mount"``), the tool in
``benchfs-<token>-p<k>/`` of the cluster, each rank or fio through its own
node's mount point (``benchfs.run.tool_place``). iostat on every host; what
ran in the manifest's ``tool``."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from analysis.layout import RunLayout
from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.processes import process_environment
from benchfs.config.model import RunConfig
from benchfs.launchers.base import Launcher
from benchfs.results.atomic import write_json_atomic
from benchfs.results.manifest import ManifestRecorder
from benchfs.run.stragglers import straggler_record
from benchfs.run.suite_binary import Io500BinaryPlan, run_io500_binary
from benchfs.run.suite_tools import SuiteToolPlan, run_suite_tools
from benchfs.run.tool_place import MountPlace, ToolPlace, remove_quietly
from benchfs.run.tool_workload import ToolContext, ToolPlan, ToolRun, run_tool_workload
from benchfs.tools.iostat import IostatWatch, IostatWatches


def run_tool_point(
    life: Lifecycle,
    plan: ToolPlan | SuiteToolPlan | Io500BinaryPlan,
    config: RunConfig,
    hosts: Sequence[Host],
    launcher: Launcher,
    layout: RunLayout,
    record: ManifestRecorder,
    place: ToolPlace,
    env: Mapping[str, str],
    notes: list[str],
) -> tuple[dict[str, Any], list[str]]:
    """The tool's summary document and the stragglers' lines; the tool works
    in ``place``, which the runner makes and this removes (unless
    ``workload.keep_files``)."""
    run = ToolRun(plan.tool, str(plan.binary))
    watches = IostatWatches(
        [IostatWatch(host, launcher, raw_output=layout.iostat_file(host.name)) for host in hosts]
    )  # fmt: skip
    stragglers: list[str] = []
    watches.start()
    try:
        context = ToolContext(
            life=life,
            launcher=launcher,
            hosts=hosts,
            tasks_per_node=config.workload.tasks_per_node,
            place=place,
            layout=layout,
            deadline_s=config.cluster.deadlines.phase_s,
            run=run,
            env=process_environment(env),
        )
        if isinstance(plan, SuiteToolPlan):
            summary = run_suite_tools(plan, context)
        elif isinstance(plan, Io500BinaryPlan):
            summary = run_io500_binary(plan, context)
        else:
            summary = run_tool_workload(plan, context)
        # What the tool ran on, in every phase row: a mount figure is never taken for another.
        where = {"target": config.workload.target, "interface": config.workload.interface}
        for row in summary["phases"]:
            row.update(where)
        if "suite" in summary:
            summary["suite"].update(where)
        write_json_atomic(layout.summary, summary)
    finally:
        watches.stop()
        record.tool(run.record())
        record.target(
            {
                "target": config.workload.target,
                "interface": config.workload.interface,
                "directory": place.describe(),
            }
        )
        interrupted = not isinstance(sys.exception(), Exception | None)
        # Not after Ctrl-C or SIGTERM through the launcher: stopping comes first.
        if not config.workload.keep_files and not (interrupted and isinstance(place, MountPlace)):
            note = remove_quietly(place)
            if note is not None:
                notes.append(note)
        notes += watches.notes
        if not interrupted:
            try:
                found, stragglers = straggler_record(layout.root)
                record.stragglers(found)
            except Exception as error:  # an observer: the run stands without it
                notes.append(f"stragglers not checked: {type(error).__name__}: {error}")
    return summary, stragglers
