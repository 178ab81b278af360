"""Runs everything on this machine: the embedded default cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchfs.cluster.hostfile import Host
from benchfs.launchers.base import (
    Launcher,
    env_prefix,
    rank_counts,
    register_launcher,
    require_argv,
)
from benchfs.launchers.mpirun import MpirunLauncher


@register_launcher
@dataclass(frozen=True)
class LocalLauncher(Launcher):
    """One process: argv as is (``env VAR=value`` in front when env is given).
    Ranks: a local OpenMPI ``mpirun --oversubscribe -np N``, so a local
    cluster can run more ranks than this machine has cores.
    """

    name = "local"
    mpirun: str = "mpirun"
    allow_run_as_root: bool | None = None

    def command(
        self, host: Host, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> list[str]:
        return [*env_prefix(env), *require_argv(argv)]

    def ranks_command(
        self,
        hosts: Sequence[Host],
        ranks_per_host: int | None,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
    ) -> list[str]:
        total = sum(rank_counts(hosts, ranks_per_host))
        mpirun = MpirunLauncher(
            flavour="openmpi", executable=self.mpirun, allow_run_as_root=self.allow_run_as_root
        )
        return [
            *mpirun.prologue(),
            "--oversubscribe",
            "-np",
            str(total),
            *mpirun.env_options(env),
            *require_argv(argv),
        ]
