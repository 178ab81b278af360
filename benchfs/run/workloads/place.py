"""Where a tool works (``workload.tool``, a suite's IOR and mdtest, the io500
binary), and how its directory is made, stamped, scanned and removed.

- On a ``posix:PATH`` target: ``PATH/benchfs-<token>-p<k>/``, an absolute
  path every rank uses as is; this process makes and removes it.
- On BenchFS's mount: ``benchfs-<token>-p<k>/`` of the file system. Each
  node's mount point is its own (``<mount root>/<node>``), and on a cluster
  a host has only its own. So each rank of the tool's job first changes
  into its node's mount point and the tool names its files relative to it
  (``python -m benchfs.node.workdir exec``): the same relative path is the
  same file on every host, whatever the tool's options (IOR's ``-C`` reads
  another rank's file, a shared file is one path for all ranks). fio runs
  per host in that host's mount point. Making, stamping, scanning and
  removing the directory go through the first node's mount, by
  ``python -m benchfs.node.workdir`` started there through the launcher:
  this process may have no mount at all.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.private import make_private_dir
from benchfs.cluster.processes import describe_status, stop_processes, wait_process
from benchfs.errors import LaunchError, ToolError
from benchfs.launchers.base import Launcher
from benchfs.launchers.programs import WorkdirAction, tool_rank_argv, workdir_command
from benchfs.run.daemons import log_tail
from benchfs.workload.io500_find import FindCount, find_tree, stamp

STOP_GRACE_S = 5.0


class PosixPlace:
    """A ``posix:`` target's directory, as this process sees it."""

    def __init__(self, directory: Path, *, removes_here: bool = True) -> None:
        self.directory = directory.absolute()
        # Removed by this process only when the hosts are this machine.
        self.removes_here = removes_here

    @property
    def target(self) -> str:
        return f"posix:{self.directory.parent}"

    def describe(self) -> str:
        return str(self.directory)

    def rank_argv(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def host_dir(self, host: str) -> Path:
        return self.directory / host

    def make(self, *subdirs: str) -> None:
        make_private_dir(self.directory, exist_ok=False)
        for sub in subdirs:
            make_private_dir(self.directory / sub)

    def remove(self) -> None:
        if self.removes_here:
            shutil.rmtree(self.directory, ignore_errors=True)

    def timestamp(self) -> int:
        return stamp(self.directory)

    def find(self, newer_than_ns: int) -> FindCount:
        return find_tree(self.directory, newer_than_ns)


@dataclass
class MountPlace:
    """``name`` in the file system, through every node's own mount point
    (``mount_root/<node>``); the steps on the directory run on ``hosts[0]``."""

    life: Lifecycle
    launcher: Launcher
    hosts: Sequence[Host]
    tasks_per_node: int
    mount_root: Path
    name: str
    log_dir: Path  # the steps' output, private to the run
    deadline_s: float
    env: Mapping[str, str] | None = None
    python: str = sys.executable
    target: str = "benchfs"

    @property
    def directory(self) -> Path:
        """The directory as the tool's ranks name it: relative to their mount point."""
        return Path(self.name)

    def describe(self) -> str:
        return str(self.mount_root / "<node>" / self.name)

    def rank_argv(self, argv: Sequence[str]) -> list[str]:
        nodes = [host.name for host in self.hosts]
        return tool_rank_argv(self.mount_root, nodes, self.tasks_per_node, argv,
                              python=self.python)  # fmt: skip

    def host_dir(self, host: str) -> Path:
        """Where fio on ``host`` works: through that host's own mount point."""
        return self.mount_root / host / self.name / host

    def _through_first(self) -> Path:
        return self.mount_root / self.hosts[0].name / self.name

    def make(self, *subdirs: str) -> None:
        self._step("prepare", *subdirs)

    def remove(self) -> None:
        self._step("remove")

    def timestamp(self) -> int:
        return int(self._step("timestamp"))

    def find(self, newer_than_ns: int) -> FindCount:
        try:
            return FindCount.model_validate_json(self._step("find", str(newer_than_ns)))
        except (ValueError, KeyError, TypeError) as error:
            raise ToolError(f"find on {self.hosts[0].name}: unreadable answer: {error}") from None

    def _step(self, action: WorkdirAction, *args: str) -> str:
        """Run one step on the first host; its last line of output."""
        host = self.hosts[0]
        argv = workdir_command(self.launcher, host, action, self._through_first(), *args,
                               python=self.python)  # fmt: skip
        make_private_dir(self.log_dir)
        stdout, stderr = self.log_dir / f"{action}.out", self.log_dir / f"{action}.log"
        what = f"{action} of {self.name} on {host.name}"
        process = self.life.start(argv, name=what, env=self.env, stdout=stdout, stderr=stderr,
                                  stuck_when=self.launcher.stuck_output())  # fmt: skip
        try:
            code = wait_process(process, self.deadline_s)
        except LaunchError as error:
            stop_processes([process], STOP_GRACE_S)
            raise ToolError(f"{error} (cluster.deadlines.phase_s)") from None
        finally:
            process.close_files()
        if code != 0:
            told = log_tail(stderr) or log_tail(stdout) or "nothing"
            raise ToolError(f"{what} {describe_status(code)}: {told}")
        lines = [line for line in stdout.read_text(errors="replace").splitlines() if line.strip()]
        return lines[-1] if lines else ""


ToolPlace = PosixPlace | MountPlace


def remove_quietly(place: ToolPlace) -> str | None:
    """Remove the tool's directory; a note instead of an error when it cannot."""
    try:
        place.remove()
    except (ToolError, OSError) as error:
        return f"the tool's directory {place.describe()} not removed: {error}"
    return None
