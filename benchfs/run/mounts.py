"""BenchFS mounted on every node of a run (``workload.interface = "mount"``):
starting the mounts once the daemons have registered, waiting until each is
live, watching them, and unmounting on every exit path.

Each node mounts at ``<data dir>/benchfs-<token>-mnt-p<k>/<node>``: node-local,
private (0700), the run's own, and naming the run's token, so a later
``benchfs clean`` finds what a killed run left. The mounts are started
through the launcher like the daemons (``benchfs.launchers.programs``): one
``python -m benchfs.node.mount --node NAME`` each when the launcher runs
everything here, else one launcher job with a rank per host. A mount is
live when its program has seen it in its host's ``/proc/self/mountinfo``
and answered a ``stat`` through it (its ready record).

Stopping: SIGTERM (the mount programs unmount and remove their mount
points), SIGKILL after the grace period; then whatever is still mounted
under the root is unmounted with ``fusermount3 -u`` (``-z`` as the last
resort) here, or by the per-host helper on other hosts, before anything is
removed: a directory holding a mount is never deleted through it.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.manifest import MountNode, MountRecord
from benchfs.cluster.deadline import wait_until
from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.private import make_private_dir
from benchfs.cluster.processes import ManagedProcess, describe_status, stop_processes
from benchfs.cluster.stuck import StuckOutput
from benchfs.errors import LaunchError
from benchfs.launchers.base import Launcher
from benchfs.launchers.programs import MountArgs, mount_argv, mounts_job
from benchfs.mount.cleanup import mounts_under, unmount_all_under
from benchfs.mount.run_mount import READY, MountReady
from benchfs.mount.settings import MountSettings
from benchfs.run.daemons import log_tail, ranks_named

# Beyond the mount programs' own unmount, before SIGKILL.
MOUNT_STOP_GRACE_S = 10.0


@dataclass(frozen=True)
class MountCommand:
    """One process to start: a node's mount, or a launcher job of all of them."""

    name: str
    argv: list[str]
    nodes: tuple[str, ...]
    log_name: str


def mount_root(data_base: Path, scratch_name: str, point: int) -> Path:
    """Where the nodes' mount points of one sweep point go (on every host)."""
    return data_base / f"{scratch_name}-mnt-p{point}"


def mount_args(
    settings: MountSettings, registry_dir: Path, root: Path, ready_dir: Path
) -> MountArgs:
    return MountArgs(registry_dir, root, ready_dir, tuple(settings.to_argv()))


def mount_commands(
    launcher: Launcher,
    hosts: Sequence[Host],
    args: MountArgs,
    *,
    env: Mapping[str, str] | None = None,
    python: str,
) -> list[MountCommand]:
    """On this machine: one command per node. Otherwise one launcher job,
    a rank per host mounting that host's node."""
    if launcher.capabilities.runs_here:
        return [
            MountCommand(
                f"mount {host.name}",
                launcher.command(host, mount_argv(args, host.name, python=python), env=env),
                (host.name,),
                f"{host.name}.log",
            )
            for host in hosts
        ]
    argv = mounts_job(launcher, hosts, args, env=env, python=python)
    name = f"mounts ({launcher.name} on {len(hosts)} hosts)"
    return [MountCommand(name, argv, tuple(h.name for h in hosts), f"mounts-{launcher.name}.log")]


class MountGroup:
    """The mounts of one sweep point, one per node."""

    def __init__(
        self,
        commands: Sequence[MountCommand],
        args: MountArgs,
        settings: MountSettings,
        log_dir: Path,
        *,
        removes_here: bool,
    ) -> None:
        self.commands = list(commands)
        self.args = args
        # What ``args`` asks every mount, for the manifest.
        self.settings = settings
        self.log_dir = log_dir
        # The launcher runs everything here: unmount and remove here too.
        self.removes_here = removes_here
        self.processes: list[ManagedProcess] = []
        self.ready: dict[str, MountReady] = {}
        self.problems: list[str] = []
        self.stopped = False

    @property
    def nodes(self) -> list[str]:
        return [node for command in self.commands for node in command.nodes]

    def mount_point(self, node: str) -> Path:
        return self.args.mount_root / node

    def log_path(self, command: MountCommand) -> Path:
        return self.log_dir / command.log_name

    def start(
        self,
        life: Lifecycle,
        env: Mapping[str, str] | None = None,
        stuck_when: StuckOutput | None = None,
    ) -> None:
        make_private_dir(self.log_dir)
        make_private_dir(self.args.ready_dir)
        if self.removes_here:
            make_private_dir(self.args.mount_root, exist_ok=False)
        # After the processes stop on any exit (error, Ctrl-C, SIGTERM): nothing stays mounted.
        life.on_exit(self.clean_up)
        self.processes += life.start_logged(self.commands, self.log_dir, env, stuck_when)

    def not_live(self) -> list[str]:
        return [n for n in self.nodes if not (self.args.ready_dir / f"{n}.json").is_file()]

    def _missing(self) -> str | None:
        missing = self.not_live()
        if not missing:
            return None
        return f"not live on {', '.join(missing)} ({len(self.nodes) - len(missing)} of " \
            f"{len(self.nodes)} mounted)"  # fmt: skip

    def wait_live(self, deadline_s: float) -> None:
        """Every node's mount live, or an error naming the node and its log."""
        try:
            wait_until(
                self._missing,
                deadline_s=deadline_s,
                what=f"{len(self.nodes)} mounts under {self.args.mount_root}",
                watch=self.processes,
            )
        except LaunchError as error:
            raise LaunchError(self._with_logs(str(error), set(self.not_live()))) from None
        for node in self.nodes:
            path = self.args.ready_dir / f"{node}.json"
            self.ready[node] = READY.validate_json(path.read_bytes())

    def dead(self) -> str | None:
        """A message naming the mount that ended, None while all serve."""
        for process, command in zip(self.processes, self.commands, strict=True):
            code = process.returncode
            if code is None:
                continue
            who = process.describe()
            if len(command.nodes) > 1:
                ranks = ranks_named(self.log_path(command).read_text(errors="replace"))
                names = [command.nodes[r] for r in ranks if r < len(command.nodes)]
                if names:
                    who = f"mount {', '.join(names)} (in {who})"
            return self._with_logs(f"{who} {describe_status(code)} during the run")
        return None

    def _with_logs(self, message: str, nodes: set[str] | None = None) -> str:
        """The message and what the mounts said: those that ended, or those of ``nodes``."""
        tails = []
        for command, process in zip(self.commands, self.processes, strict=True):
            if process.returncode is not None or (nodes and nodes & set(command.nodes)):
                tail = log_tail(self.log_path(command))
                where = self.log_path(command)
                tails.append(f"{command.name} logged: {tail or 'nothing'} (log {where})")
        return "; ".join([message, *tails])

    def stop(self, grace_s: float = MOUNT_STOP_GRACE_S) -> None:
        """SIGTERM (each unmounts), SIGKILL after ``grace_s``; then nothing
        stays mounted here. Problems are kept, not raised."""
        if self.stopped:
            return
        self.stopped = True
        stop_processes(self.processes, grace_s)
        for process in self.processes:
            code = process.popen.returncode
            process.close_files()
            if process.ending == "SIGKILL":
                self.problems.append(
                    f"{process.describe()} did not unmount within {grace_s:g} s and was killed"
                )
            elif code:
                self.problems.append(f"{process.describe()} {describe_status(code)}")
        self.clean_up()

    def clean_up(self) -> None:
        """Unmount what is left under the root on this machine and remove it
        (other hosts: the per-host helper does, see ``benchfs.run.cluster``)."""
        if not self.removes_here:
            return
        root = self.args.mount_root
        if not root.exists():
            return
        unmounted, problems = unmount_all_under(root)
        self.problems += [f"still mounted: {problem}" for problem in problems]
        self.problems += [f"{path} was still mounted and was unmounted" for path in unmounted]
        if mounts_under(root):
            self.problems.append(f"{root} not removed: a mount under it could not be unmounted")
            return
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(root)

    def record(self) -> MountRecord:
        """The mounts for the manifest: options, and per node where and what."""
        args = self.args
        return MountRecord(
            options=self.settings,
            root=str(args.mount_root),
            nodes={
                node: MountNode(**READY.dump_python(self.ready[node]))
                if node in self.ready
                else MountNode(mount_point=str(self.mount_point(node)))
                for node in self.nodes
            },
        )
