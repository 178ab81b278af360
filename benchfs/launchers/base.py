"""What a launcher is, and the registry that finds one by name.

A launcher only builds argv tokens; it never starts anything. The caller
runs the command (see ``benchfs.cluster.processes``), which keeps launchers
trivially testable: tests assert the exact command lines.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from benchfs.cluster.hostfile import Host
from benchfs.errors import LaunchError


class Launcher(ABC):
    """Builds command lines that start processes on hosts."""

    name: ClassVar[str]

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


_LAUNCHERS: dict[str, type[Launcher]] = {}
L = TypeVar("L", bound=type[Launcher])


def register_launcher(cls: L) -> L:
    """Class decorator: make ``cls`` available as ``get_launcher(cls.name)``."""
    name = cls.name
    if name in _LAUNCHERS and _LAUNCHERS[name] is not cls:
        raise ValueError(f"launcher name {name!r} is already registered by {_LAUNCHERS[name]}")
    _LAUNCHERS[name] = cls
    return cls


def launcher_names() -> list[str]:
    """Names of every registered launcher, sorted."""
    return sorted(_LAUNCHERS)


def get_launcher(name: str, **options: Any) -> Launcher:
    """An instance of the launcher registered as ``name``, built with ``options``."""
    try:
        cls = _LAUNCHERS[name]
    except KeyError:
        known = ", ".join(launcher_names())
        raise LaunchError(f"unknown launcher {name!r}; known: {known}") from None
    factory: Callable[..., Launcher] = cls
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


def env_prefix(env: Mapping[str, str] | None) -> list[str]:
    """``env VAR=value ...`` tokens, or nothing when there is nothing to set."""
    checked = check_env(env)
    if not checked:
        return []
    return ["env", *(f"{key}={value}" for key, value in checked.items())]


def require_argv(argv: Sequence[str]) -> list[str]:
    if isinstance(argv, str):
        raise LaunchError(f"argv must be a sequence of tokens, not the string {argv!r}")
    if not argv:
        raise LaunchError("nothing to launch: argv is empty")
    return list(argv)
