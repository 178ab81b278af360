"""What the modes that run an external tool share (``workload.tool``, a
suite's IOR and mdtest, the io500 binary): they work on a mounted file
system, in a place of ``benchfs.run.workloads.place``; their jobs start
through the run's launcher and are waited for with the point's watches
polled; what they printed stays under ``workload/tool/``, and what ran
(the tool, its version, its exact command lines) goes into the manifest's
``tool``.
"""

from __future__ import annotations

import sys
import time
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.layout import RunLayout
from analysis.manifest import ToolRecord, ToolTarget
from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.processes import (
    ManagedProcess,
    describe_status,
    process_environment,
    stop_processes,
)
from benchfs.errors import ToolError
from benchfs.launchers.base import Launcher
from benchfs.results.atomic import write_json_atomic
from benchfs.run.watch import POLL_S, Watches
from benchfs.run.workloads.base import Point, Summary, Workload
from benchfs.run.workloads.place import MountPlace, PosixPlace, ToolPlace, remove_quietly

STOP_GRACE_S = 5.0
STDERR_TAIL_LINES = 3


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

    def record(self) -> ToolRecord:
        return ToolRecord(name=self.tool, binary=self.binary, version=self.version,
                          command_lines=self.commands, launched=self.launched,
                          outputs=self.outputs, ini=self.ini)  # fmt: skip


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
    ``workload/tool/`` and end within ``deadline_s`` a phase, with
    ``watches`` polled while they run; ``run`` is filled in as they start
    (for the manifest, also when one fails)."""

    life: Lifecycle
    launcher: Launcher
    hosts: Sequence[Host]
    tasks_per_node: int
    place: ToolPlace
    layout: RunLayout
    deadline_s: float
    run: ToolRun
    env: Mapping[str, str] | None = None
    watches: Watches = field(default_factory=Watches)

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

    def wait(self, tool: str, jobs: list[ToolJob], deadline_s: float | None = None) -> None:
        """Until every job ends (within ``deadline_s``, else a phase's); the
        first that failed, the deadline or a watch is an error."""
        deadline_s = self.deadline_s if deadline_s is None else deadline_s
        ends = time.monotonic() + deadline_s
        kept = f"what it printed is in {self.layout.tool_output_dir}"
        failed: ToolJob | None = None
        try:
            while failed is None and any(job.process.popen.poll() is None for job in jobs):
                failed = next(
                    (job for job in jobs if job.process.popen.poll() not in (None, 0)), None
                )
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
                self.watches.poll()
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


def tool_place(point: Point) -> ToolPlace:
    """Where a tool works on the point's target: through every node's own
    mount point, or in the posix: target's directory."""
    target, config = point.target, point.config
    if target.mounts is not None:
        return MountPlace(
            point.life,
            point.launcher,
            point.hosts,
            tasks_per_node=config.workload.tasks_per_node,
            mount_root=target.mounts.args.mount_root,
            name=target.work_name,
            log_dir=point.state_dir / "workdir",
            deadline_s=config.cluster.deadlines.phase_s,
            env=process_environment(point.env),
            python=point.cluster.python,
        )
    assert target.posix_dir is not None  # the config refuses a tool on the native client
    return PosixPlace(target.posix_dir, removes_here=point.launcher.capabilities.runs_here)


class ExternalWorkload(Workload):
    """A mode whose phases an external tool runs; ``tool`` names what runs."""

    tool: str
    binary: Path

    def __init__(self) -> None:
        self.context: ToolContext | None = None
        self.document: Summary | None = None

    @abstractmethod
    def subdirs(self, point: Point) -> Sequence[str]:
        """The directories the tool's place is made with."""

    @abstractmethod
    def run_tool(self, point: Point, context: ToolContext) -> Summary:
        """Run the tool in the context's place; the summary document of what it printed."""

    def prepare(self, point: Point) -> None:
        self.context = ToolContext(
            life=point.life,
            launcher=point.launcher,
            hosts=point.hosts,
            tasks_per_node=point.config.workload.tasks_per_node,
            place=tool_place(point),
            layout=point.layout,
            deadline_s=point.config.cluster.deadlines.phase_s,
            run=ToolRun(self.tool, str(self.binary)),
            env=process_environment(point.env),
            watches=point.watches,
        )
        point.layout.tool_output_dir.mkdir(parents=True, exist_ok=True)

    def run(self, point: Point) -> None:
        assert self.context is not None
        on_mount = " on the mount" if point.target.mounts is not None else ""
        point.observer.step(f"running {self.tool}{on_mount}")
        self.context.place.make(*self.subdirs(point))
        self.document = self.run_tool(point, self.context)

    def summarise(self, point: Point) -> Summary:
        """The tool's document, each phase row saying what it ran on: a mount
        figure is never taken for another."""
        assert self.document is not None
        summary = self.document
        workload = point.config.workload
        where = {"target": workload.target, "interface": workload.interface}
        for row in summary["phases"]:
            row.update(where)
        if "suite" in summary:
            summary["suite"].update(where)
        write_json_atomic(point.layout.summary, summary)
        return summary

    def record(self, point: Point) -> None:
        if self.context is None:
            return
        workload = point.config.workload
        point.record.tool(self.context.run.record())
        point.record.target(ToolTarget(target=workload.target, interface=workload.interface,
                                       directory=self.context.place.describe()))  # fmt: skip

    def clean_up(self, point: Point) -> list[str]:
        context = self.context
        if context is None or point.config.workload.keep_files:
            return []
        interrupted = not isinstance(sys.exception(), Exception | None)
        # Not after Ctrl-C or SIGTERM through the launcher: stopping comes first.
        if interrupted and isinstance(context.place, MountPlace):
            return []
        note = remove_quietly(context.place)
        return [] if note is None else [note]
