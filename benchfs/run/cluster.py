"""The daemons of a run across the points of a sweep, and the run's
temporary files on this machine and on the nodes."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.layout import RunLayout
from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.private import check_path, make_private_dir, user_temp_root
from benchfs.cluster.processes import (
    describe_status,
    process_environment,
    start_process,
    stop_processes,
    wait_process,
)
from benchfs.config.model import RunConfig
from benchfs.config.plan import needs_daemon_restart
from benchfs.errors import LaunchError
from benchfs.launchers.base import Launcher
from benchfs.launchers.programs import HostAction, host_job
from benchfs.mount.settings import MountSettings
from benchfs.run.daemons import (
    DaemonGroup,
    daemon_commands,
    daemon_slots,
    log_tail,
    write_daemon_configs,
)
from benchfs.run.leftovers import LiveRun
from benchfs.run.mounts import MountGroup, mount_args, mount_commands, mount_root
from benchfs.run.observer import RunObserver

# Beyond the daemons' own drain deadline, before SIGKILL.
STOP_MARGIN_S = 5.0
NODE_JOB_DEADLINE_S = 60.0


def forwarded_environment(env: Mapping[str, str]) -> dict[str, str]:
    """Variables that tune UCX and BenchFS, for processes on other hosts."""
    return {
        key: value
        for key, value in sorted(env.items())
        if key.startswith(("UCX_", "BENCHFS_")) and key != "BENCHFS_NODE_NAME"
    }


def check_local_dirs(config: RunConfig) -> None:
    """The directories this machine's daemons will create or write into, checked
    before anything starts (``check_path``): the daemons check them again as
    they create them, but a run should not get as far as starting them."""
    check_path(data_base(config))
    if config.cluster.registry_dir:
        check_path(Path(config.cluster.registry_dir))
    if config.workload.posix_path:
        check_path(Path(config.workload.posix_path))


def data_base(config: RunConfig) -> Path:
    """Where the run's data directories go: ``cluster.data_dir``, else this
    user's temporary directory."""
    data_dir = config.cluster.data_dir
    return Path(data_dir) if data_dir else user_temp_root()


@dataclass
class Scratch:
    """The temporary files of one invocation (see benchfs.run.orchestrate)."""

    token: str
    root: Path
    shm_dir: Path | None
    # The run's record for a later clean-up, should this process die first.
    live: LiveRun | None = None

    def claim(self, path: Path) -> Path:
        """Note ``path`` as the run's, before creating it."""
        if self.live is not None:
            self.live.add_path(path)
        return path

    @property
    def name(self) -> str:
        return f"benchfs-{self.token}"

    def generation_dir(self, generation: int) -> Path:
        return self.root / f"g{generation}"

    def point_dir(self, index: int) -> Path:
        return self.root / f"p{index}"


class Cluster:
    """The daemons of the current daemon configuration, restarted when it changes."""

    def __init__(
        self,
        life: Lifecycle,
        scratch: Scratch,
        observer: RunObserver,
        env: Mapping[str, str],
        python: str = sys.executable,
    ) -> None:
        self.life = life
        self.scratch = scratch
        self.observer = observer
        self.env = env
        self.python = python
        self.generation = -1
        self.group: DaemonGroup | None = None
        self.config: RunConfig | None = None
        self.hosts: list[Host] = []
        self.launcher: Launcher | None = None
        self.node_paths: list[Path] = []
        # Data dirs this run created on this machine (removed again when empty).
        self.created: set[Path] = set()
        # Paths on the nodes (and their shared-memory dirs) still to remove there.
        self.unclean: list[Path] = []
        self.shm_used = False
        self.notes: list[str] = []
        # The mounts of the current point (workload.interface = "mount").
        self.mounts: MountGroup | None = None

    def ensure(self, config: RunConfig, hosts: list[Host], launcher: Launcher) -> bool:
        """Daemons for this config on these hosts; True when (re)started."""
        if (
            self.group is not None
            and self.config is not None
            and not needs_daemon_restart(self.config, config)
            and hosts == self.hosts
            and self.launcher == launcher
        ):
            return False
        self.stop()
        self.start(config, hosts, launcher)
        return True

    def without_daemons(self, hosts: list[Host], launcher: Launcher) -> None:
        """No daemons (a posix: target): stop any, keep the hosts for the ranks."""
        self.stop()
        self.config, self.hosts, self.launcher = None, hosts, launcher

    def launch_env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        if self.launcher is not None and not self.launcher.capabilities.inherits_environment:
            env.update(forwarded_environment(self.env))
        if self.scratch.shm_dir is not None:
            env["UCX_POSIX_DIR"] = str(self.scratch.shm_dir)
        return env

    def start(self, config: RunConfig, hosts: list[Host], launcher: Launcher) -> None:
        self.generation += 1
        self.config, self.hosts, self.launcher = config, hosts, launcher
        cluster = config.cluster
        base = self.scratch.generation_dir(self.generation)
        if cluster.registry_dir:
            registry = Path(cluster.registry_dir) / f"{self.scratch.name}-g{self.generation}"
            self.scratch.claim(registry)
            self.life.remove_at_exit(registry)
        else:
            registry = base / "registry"
        data_root = data_base(config) / f"{self.scratch.name}-g{self.generation}"
        self.scratch.claim(data_root)
        self.node_paths = [data_root]
        if not data_root.parent.exists():
            self.created.add(data_root.parent)
        if launcher.capabilities.needs_host_helper:
            if self.scratch.live is not None:
                self.scratch.live.reach_hosts(launcher.name, config.launcher, hosts, self.python)
            if not self.unclean and not self.shm_used:
                self.life.on_exit(self.clean_remaining)
            self.unclean.append(data_root)
            self.shm_used = True
        else:
            # The daemons create their data dirs 0700 (benchfs.daemon.serve).
            self.life.remove_at_exit(data_root)
            if self.scratch.shm_dir is not None:
                make_private_dir(self.scratch.shm_dir)
        slots = daemon_slots(hosts, cluster.daemons_per_node, str(data_root))
        trace_dir = base / "traces"
        make_private_dir(trace_dir)
        config_dir = base / "configs"
        write_daemon_configs(slots, cluster, config_dir, registry, trace_dir)
        commands = daemon_commands(
            launcher,
            slots,
            hosts,
            cluster.daemons_per_node,
            config_dir,
            env=self.launch_env(),
            shm_dir=None if self.scratch.shm_dir is None else str(self.scratch.shm_dir),
            python=self.python,
        )
        group = DaemonGroup(commands, slots, registry, base / "logs", trace_dir)
        self.group = group
        self.life.on_exit(lambda: self.collect(group))
        self.observer.step(f"starting {len(slots)} daemons on {len(hosts)} hosts")
        group.start(self.life, process_environment(self.env), launcher.stuck_output())
        self.observer.step(f"waiting for {len(slots)} daemons to register")
        group.wait_registered(cluster.deadlines.grown(cluster.deadlines.register_s, len(slots)))
        self.observer.step(f"publishing the {len(slots)} members in one file")
        group.publish_members()

    def mount(self, config: RunConfig, point: int, log_dir: Path) -> MountGroup:
        """Mount the running daemons on every host and wait until each mount is live."""
        assert self.group is not None and self.launcher is not None
        self.unmount()
        launcher = self.launcher
        root = self.scratch.claim(mount_root(data_base(config), self.scratch.name, point))
        ready_dir = self.scratch.root / f"mounts-p{point}"
        settings = MountSettings.for_run(
            config.mount, config.cluster.deadlines, len(self.group.slots)
        )
        args = mount_args(settings, self.group.registry_dir, root, ready_dir)
        commands = mount_commands(
            launcher, self.hosts, args, env=self.launch_env(), python=self.python
        )
        removes_here = not launcher.capabilities.needs_host_helper
        if not removes_here:
            self.unclean.append(root)  # the per-host helper unmounts and removes it
        group = MountGroup(commands, args, settings, log_dir, removes_here=removes_here)
        self.mounts = group
        self.observer.step(f"mounting BenchFS on {len(group.nodes)} nodes")
        group.start(self.life, process_environment(self.env), launcher.stuck_output())
        deadlines = config.cluster.deadlines
        group.wait_live(deadlines.grown(deadlines.mount_s, len(group.nodes)))
        return group

    def unmount(self) -> None:
        """Stop the point's mounts (each unmounts); what is left is unmounted."""
        group, self.mounts = self.mounts, None
        if group is None:
            return
        self.observer.step(f"unmounting BenchFS on {len(group.nodes)} nodes")
        group.stop()
        self.notes += group.problems

    def stop(self) -> None:
        """Stop the daemons gracefully, collect their traces, remove their data."""
        self.unmount()  # first: a mount outlives no daemon
        group, config = self.group, self.config
        if group is None or config is None:
            return
        self.group = None
        deadline = config.cluster.deadlines.shutdown_s
        self.observer.step(f"stopping {len(group.slots)} daemons")
        helper = self.launcher is not None and self.launcher.capabilities.needs_host_helper
        if helper:
            # One job stops the daemons and then removes the run's paths on
            # each host; should it fail, the clean-up below runs on its own.
            stop = [str(group.registry_dir), f"{deadline:g}", *self.host_paths()]
            if self.run_on_hosts("stop", stop, "stop daemons and clean up", deadline):
                self.unclean, self.shm_used = [], False
            for process in group.processes:
                with contextlib.suppress(LaunchError):
                    wait_process(process, STOP_MARGIN_S)
        group.stop(deadline + STOP_MARGIN_S)
        self.notes += group.exit_problems
        self.collect(group)
        if helper:
            self.clean_remaining()
        else:
            for path in self.node_paths:
                shutil.rmtree(path, ignore_errors=True)
                if path.parent in self.created:
                    with contextlib.suppress(OSError):  # not empty: another run uses it
                        path.parent.rmdir()
        shutil.rmtree(group.registry_dir, ignore_errors=True)

    def collect(self, group: DaemonGroup) -> None:
        """Daemon traces and logs into every run directory they served."""
        for run_dir in group.served:
            layout = RunLayout(run_dir)
            traces, logs = layout.traces_dir, layout.daemon_logs_dir
            if group.trace_dir is not None and group.trace_dir.is_dir():
                traces.mkdir(parents=True, exist_ok=True)
                for path in sorted(group.trace_dir.iterdir()):
                    _link_or_copy(path, traces / path.name)
            if group.log_dir.is_dir():
                logs.mkdir(parents=True, exist_ok=True)
                for path in sorted(group.log_dir.iterdir()):
                    _link_or_copy(path, logs / path.name)

    def run_on_hosts(
        self,
        action: HostAction,
        args: list[str],
        what: str,
        deadline_s: float,
        on: tuple[Sequence[Host], Launcher] | None = None,
    ) -> bool:
        """Run the per-host helper once on every host (or those of ``on``,
        through its launcher), within a deadline; True when it succeeded
        everywhere, else the error is in ``notes``."""
        hosts, launcher = on if on is not None else (self.hosts, self.launcher)
        if launcher is None or not hosts:
            return True
        argv = host_job(launcher, hosts, action, args, python=self.python)
        log = self.scratch.root / f"host-{action}.log"
        process = start_process(
            argv,
            name=f"{what} on {len(hosts)} hosts",
            env=process_environment(self.env),
            stdout=log,
            stderr=subprocess.STDOUT,
            stuck_when=launcher.stuck_output(),
        )
        try:
            per_node = 0.0 if self.config is None else self.config.cluster.deadlines.per_node_s
            code = wait_process(process, deadline_s + NODE_JOB_DEADLINE_S + per_node * len(hosts))
        except LaunchError as error:
            self.notes.append(str(error))
            stop_processes([process], STOP_MARGIN_S)
            return False
        if code != 0:
            self.notes.append(f"{what}: {describe_status(code)}: {log_tail(log)}")
        return code == 0

    def host_paths(self) -> list[str]:
        """The run's paths still to remove on the hosts: data and mount
        directories, and the shared-memory dir."""
        if not self.unclean and not self.shm_used:
            return []
        paths = [str(path) for path in self.unclean]
        if self.scratch.shm_dir is not None:
            paths.append(str(self.scratch.shm_dir))
        return paths

    def clean_remaining(self) -> None:
        """Remove the run's data and shared-memory dirs on every host."""
        paths = self.host_paths()
        self.unclean, self.shm_used = [], False
        if paths:
            self.run_on_hosts("clean", paths, "clean up", 0)


def _link_or_copy(source: Path, target: Path) -> None:
    if target.exists() or not source.is_file():
        return
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
