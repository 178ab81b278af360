"""The command lines of the node programs: every argv the orchestration
builds to start BenchFS on the nodes, in one place.

The programs themselves live in ``benchfs.node`` (one module each, run as
``python -m benchfs.node.<program>``); the user CLI starts none of them:

- ``daemon`` (``benchfs run``): ``--config FILE``, a daemon started here; or
  ``--config-dir DIR [--shm-dir DIR]``, a rank of a launcher job that serves
  the config file of its rank;
- ``rank`` (``benchfs run``): ``SPEC.json``, a workload rank under MPI;
- ``mount`` (``benchfs run`` with ``workload.interface = "mount"``):
  ``--registry DIR --mount-root DIR --ready-dir DIR (--node NAME | --nodes
  NAME...) --threads N --attr-timeout S --entry-timeout S --rpc-deadline S
  --connect-deadline S``,
  one node's FUSE mount (``--nodes``: a rank of a launcher job, one per host);
- ``diagnose`` (``benchfs diagnose --nodes``, the preflight): ``--dir DIR
  --node-name NODE [--quick] [--preflight --transfer-size B --files N
  --file-size B --runtime S]``;
- ``host`` (``benchfs run``, hosts that need the helper): ``stop
  REGISTRY_DIR DEADLINE_S [PATH...]`` (the daemons' stop, then the paths
  removed) or ``clean PATH...``;
- ``workdir`` (``benchfs run``, a tool on the mount): ``exec MOUNT_ROOT
  TASKS_PER_NODE NODE... -- ARGV...``, a rank of the tool's job in its
  node's mount point; ``prepare DIR [SUBDIR...]``, ``remove DIR``,
  ``timestamp DIR`` or ``find DIR NEWER_NS`` on one host through its mount.

``python`` is the interpreter on the nodes: the one running the
orchestrator, which must exist at the same path everywhere.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from benchfs.cluster.hostfile import Host
from benchfs.launchers.base import Launcher

PACKAGE = "benchfs.node"
HostAction = Literal["stop", "clean", "sweep"]
WorkdirAction = Literal["prepare", "remove", "timestamp", "find"]


def program(name: str, *args: str, python: str = sys.executable) -> list[str]:
    """``python -m benchfs.node.<name> ARGS``."""
    return [python, "-m", f"{PACKAGE}.{name}", *args]


# ---------------------------------------------------------------- daemon


def daemon_argv(config: Path, *, python: str = sys.executable) -> list[str]:
    """One daemon, started here with its own config file."""
    return program("daemon", "--config", str(config), python=python)


def daemon_rank_argv(
    config_dir: Path, shm_dir: str | None = None, *, python: str = sys.executable
) -> list[str]:
    """A launcher rank that becomes the daemon of its rank's config file in ``config_dir``."""
    extra = ["--shm-dir", shm_dir] if shm_dir else []
    return program("daemon", "--config-dir", str(config_dir), *extra, python=python)


def daemons_job(
    launcher: Launcher,
    hosts: Sequence[Host],
    daemons_per_node: int,
    config_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    shm_dir: str | None = None,
    python: str = sys.executable,
) -> list[str]:
    """Every daemon of a run as one launcher job: ``daemons_per_node`` ranks per host."""
    argv = daemon_rank_argv(config_dir, shm_dir, python=python)
    return launcher.ranks_command(hosts, daemons_per_node, argv, env=env)


# ---------------------------------------------------------------- workload


def rank_argv(spec: Path, *, python: str = sys.executable) -> list[str]:
    """One workload rank (under MPI) reading the run's spec."""
    return program("rank", str(spec), python=python)


def workload_job(
    launcher: Launcher,
    hosts: Sequence[Host],
    tasks_per_node: int,
    spec: Path,
    *,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> list[str]:
    """The MPI job of the workload ranks: ``tasks_per_node`` on every host."""
    return launcher.ranks_command(hosts, tasks_per_node, rank_argv(spec, python=python), env=env)


# ---------------------------------------------------------------- mount


class MountArgs(NamedTuple):
    """Where the mounts of a run go, and what every one of them is asked: the
    settings as ``benchfs.mount.settings.MountSettings.to_argv`` wrote them."""

    registry_dir: Path
    mount_root: Path
    ready_dir: Path
    settings: tuple[str, ...] = ()

    def options(self) -> list[str]:
        return [
            "--registry", str(self.registry_dir),
            "--mount-root", str(self.mount_root),
            "--ready-dir", str(self.ready_dir),
            *self.settings,
        ]  # fmt: skip


def mount_argv(args: MountArgs, node: str, *, python: str = sys.executable) -> list[str]:
    """One node's mount, started here: ``MOUNT_ROOT/NODE``."""
    return program("mount", *args.options(), "--node", node, python=python)


def mounts_job(
    launcher: Launcher,
    hosts: Sequence[Host],
    args: MountArgs,
    *,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> list[str]:
    """Every host's mount as one launcher job: one rank per host, each
    mounting ``MOUNT_ROOT/<its host>``."""
    argv = program(
        "mount", *args.options(), "--nodes", *(host.name for host in hosts), python=python
    )
    return launcher.ranks_command(hosts, 1, argv, env=env)


# ---------------------------------------------------------------- diagnose


class PreflightArgs(NamedTuple):
    """The preflight pattern a diagnose worker runs instead of the diagnose plan."""

    transfer_size: int
    files: int
    file_size: int
    runtime_s: float


def diagnose_argv(
    directory: Path,
    node: str,
    *,
    quick: bool = False,
    preflight: PreflightArgs | None = None,
    python: str = sys.executable,
    scratch: str | None = None,
) -> list[str]:
    """A diagnose worker: measures ``directory`` as ``node``, prints its JSON on
    stdout; its test files go in ``directory/scratch`` (default: named by its pid)."""
    args = ["--dir", str(directory), "--node-name", node]
    if quick:
        args.append("--quick")
    if scratch:
        args += ["--scratch", scratch]
    if preflight is not None:
        args += [
            "--preflight",
            "--transfer-size", str(preflight.transfer_size),
            "--files", str(preflight.files),
            "--file-size", str(preflight.file_size),
            "--runtime", str(preflight.runtime_s),
        ]  # fmt: skip
    return program("diagnose", *args, python=python)


def diagnose_worker(
    launcher: Launcher,
    host: Host,
    directory: Path,
    *,
    quick: bool = False,
    preflight: PreflightArgs | None = None,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    scratch: str | None = None,
) -> list[str]:
    """The diagnose worker of one host, through the launcher."""
    argv = diagnose_argv(
        directory, host.name, quick=quick, preflight=preflight, python=python, scratch=scratch
    )
    return launcher.command(host, argv, env=env)


# ---------------------------------------------------------------- per-host helper


def host_argv(action: HostAction, *args: str, python: str = sys.executable) -> list[str]:
    """The per-host helper: ``stop REGISTRY_DIR DEADLINE_S [PATH...]``,
    ``clean PATH...`` or ``sweep MARKER PATH...``."""
    return program("host", action, *args, python=python)


def host_job(
    launcher: Launcher,
    hosts: Sequence[Host],
    action: HostAction,
    args: Sequence[str],
    *,
    python: str = sys.executable,
) -> list[str]:
    """The per-host helper once on every host (stop the daemons and clean up, or clean up)."""
    return launcher.ranks_command(hosts, 1, host_argv(action, *args, python=python))


# ---------------------------------------------------------------- a tool's directory on the mount


def tool_rank_argv(
    mount_root: Path,
    nodes: Sequence[str],
    tasks_per_node: int,
    argv: Sequence[str],
    *,
    python: str = sys.executable,
) -> list[str]:
    """A rank of a tool's job on the mount: ``argv`` run in the mount point of
    the rank's node (``MOUNT_ROOT/NODE``), so its relative paths are the
    same files of the cluster on every host."""
    return program(
        "workdir", "exec", str(mount_root), str(tasks_per_node), *nodes, "--", *argv,
        python=python,
    )  # fmt: skip


def workdir_command(
    launcher: Launcher,
    host: Host,
    action: WorkdirAction,
    directory: Path,
    *args: str,
    python: str = sys.executable,
) -> list[str]:
    """One step on a tool's directory, on ``host`` through its mount:
    ``prepare DIR [SUBDIR...]``, ``remove DIR``, ``timestamp DIR`` or
    ``find DIR NEWER_NS``."""
    argv = program("workdir", action, str(directory), *args, python=python)
    return launcher.command(host, argv)
