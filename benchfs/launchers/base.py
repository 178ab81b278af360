"""What a launcher is, what it can do, and the registry that finds one by name.

A launcher only builds argv tokens; it never starts anything. The caller
runs the command (see ``benchfs.cluster.processes``), which keeps launchers
trivially testable: tests assert the exact command lines. What a launcher
can do is said by its ``capabilities``, never by its name, so that a new
launcher is one class here and nothing else changes. Its options come
from the run config's ``[launcher]`` section through ``from_settings``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from benchfs.cluster.hostfile import Host
from benchfs.cluster.stuck import StuckOutput
from benchfs.config.model import LauncherConfig
from benchfs.errors import LaunchError
from benchfs.registry import Registry


@dataclass(frozen=True)
class Capabilities:
    """What the processes a launcher starts have in common.

    - ``runs_here``: every host is this machine. The orchestrator then starts
      each daemon itself, gives each node its own directory
      (``<dir>/<node>``) and removes files directly.
    - ``needs_host_helper``: stopping daemons and removing files on the hosts
      takes a node job per host (``python -m benchfs.node.host``).
    - ``inherits_environment``: processes see the orchestrator's environment
      as is; otherwise the variables that tune UCX and BenchFS are passed on.
    - ``ranks_here``: this launcher can start an MPI job on this machine
      (``ranks_on_this_host``), for launchers that delegate rank jobs.
    """

    runs_here: bool = False
    needs_host_helper: bool = True
    inherits_environment: bool = False
    ranks_here: bool = False


class Launcher(ABC):
    """Builds command lines that start processes on hosts."""

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities] = Capabilities()

    @classmethod
    def from_settings(cls, settings: LauncherConfig) -> Launcher:
        """An instance with the options of the ``[launcher]`` section that apply to it."""
        return cls()

    def ranks_on_this_host(
        self, count: int, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> list[str]:
        """argv that runs an MPI job of ``count`` ranks of ``argv`` on this machine."""
        raise LaunchError(f"launcher {self.name!r} cannot start ranks on this machine")

    def with_host_files_in(self, directory: Path) -> Launcher:
        """This launcher, writing the host lists too long for one argument
        into ``directory`` (``benchfs.launchers.host_lists``); the same one
        when it never needs to."""
        return self

    def stuck_output(self) -> StuckOutput | None:
        """The line this launcher prints when its job can no longer finish
        but it keeps running (None: it ends by itself when its job fails)."""
        return None

    @abstractmethod
    def command(
        self, host: Host, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> list[str]:
        """argv that runs one process of ``argv`` on ``host`` with ``env`` added."""

    @abstractmethod
    def ranks_command(
        self,
        hosts: Sequence[Host],
        ranks_per_host: int | None,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
    ) -> list[str]:
        """argv that runs an MPI job of ``argv`` over ``hosts``.

        ``ranks_per_host`` ranks on every host, or each host's slots when None.
        """


_LAUNCHERS: Registry[type[Launcher]] = Registry("launcher", LaunchError)
L = TypeVar("L", bound=type[Launcher])


def register_launcher(cls: L) -> L:
    """Class decorator: make ``cls`` available as ``get_launcher(cls.name)``."""
    _LAUNCHERS.register(cls)
    return cls


def launcher_names() -> list[str]:
    """Names of every registered launcher, sorted."""
    return _LAUNCHERS.names()


def launcher_class(name: str) -> type[Launcher]:
    """The launcher registered as ``name``."""
    return _LAUNCHERS.get(name)


def get_launcher(name: str, **options: Any) -> Launcher:
    """An instance of the launcher registered as ``name``, built with ``options``."""
    factory: Callable[..., Launcher] = launcher_class(name)
    try:
        return factory(**options)
    except TypeError as error:
        raise LaunchError(f"launcher {name!r}: bad options {sorted(options)}: {error}") from error


def rank_counts(hosts: Sequence[Host], ranks_per_host: int | None) -> list[int]:
    """Ranks per host as launched: ``ranks_per_host`` each, or the hosts' slots."""
    if not hosts:
        raise LaunchError("cannot launch ranks on an empty host list")
    if ranks_per_host is not None and ranks_per_host < 1:
        raise LaunchError(f"ranks per host must be at least 1, got {ranks_per_host}")
    return [host.slots if ranks_per_host is None else ranks_per_host for host in hosts]


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """A copy of ``env`` with names checked, so no token can smuggle options."""
    checked: dict[str, str] = {}
    for key, value in (env or {}).items():
        if (
            not key
            or not (key[0].isalpha() or key[0] == "_")
            or not all(c.isalnum() or c == "_" for c in key)
        ):
            raise LaunchError(f"invalid environment variable name {key!r}")
        checked[key] = value
    return checked


# Variables whose values never go on a command line, which any user of the
# node can read (/proc/PID/cmdline): a launcher passes them on by name, from
# its own environment, which holds them (the processes a run starts get the
# run's environment: benchfs.cluster.processes.process_environment).
SECRET_VARIABLES = frozenset({"BENCHFS_SESSION_KEY"})


def split_secrets(env: Mapping[str, str] | None) -> tuple[dict[str, str], list[str]]:
    """``env`` checked, as the variables to set by value and the names of the
    secret ones, to pass on by name."""
    checked = check_env(env)
    plain = {key: value for key, value in checked.items() if key not in SECRET_VARIABLES}
    return plain, [key for key in checked if key in SECRET_VARIABLES]


def env_prefix(env: Mapping[str, str] | None) -> list[str]:
    """``env VAR=value ...`` tokens, or nothing when there is nothing to set.
    A secret variable is left to the environment the process inherits."""
    plain, _ = split_secrets(env)
    if not plain:
        return []
    return ["env", *(f"{key}={value}" for key, value in plain.items())]


def require_argv(argv: Sequence[str]) -> list[str]:
    if isinstance(argv, str):
        raise LaunchError(f"argv must be a sequence of tokens, not the string {argv!r}")
    if not argv:
        raise LaunchError("nothing to launch: argv is empty")
    return list(argv)
