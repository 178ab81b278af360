"""Runs everything on this machine: the embedded default cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchfs.cluster.hostfile import Host
from benchfs.config.model import LauncherConfig
from benchfs.errors import LaunchError
from benchfs.launchers.base import (
    Capabilities,
    Launcher,
    env_prefix,
    get_launcher,
    launcher_class,
    rank_counts,
    register_launcher,
    require_argv,
)
from benchfs.launchers.mpirun import Flavour, configured_executable, mpich_library_dir


@register_launcher
@dataclass(frozen=True)
class LocalLauncher(Launcher):
    """One process: argv as is (``env VAR=value`` in front when env is given).
    Ranks: an MPI job on this machine by the launcher registered as
    ``ranks_through`` (mpirun: ``mpirun --oversubscribe -np N``; with the
    ``mpich`` flavour Hydra's ``mpiexec -n N``), started with ``mpirun`` as
    its executable (None: that launcher's default).
    """

    name = "local"
    capabilities = Capabilities(runs_here=True, needs_host_helper=False, inherits_environment=True)
    mpirun: str | None = None
    allow_run_as_root: bool | None = None
    ranks_through: str = "mpirun"
    flavour: Flavour = "openmpi"
    library_dir: str | None = None

    @classmethod
    def from_settings(cls, settings: LauncherConfig) -> LocalLauncher:
        mpich = settings.flavour == "mpich"
        return cls(
            mpirun=configured_executable(settings),
            flavour=settings.flavour,
            library_dir=mpich_library_dir() if mpich else None,
        )

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
        if not launcher_class(self.ranks_through).capabilities.ranks_here:
            raise LaunchError(
                f"local ranks: launcher {self.ranks_through!r} cannot start ranks on this machine"
            )
        ranks = get_launcher(
            self.ranks_through,
            executable=self.mpirun,
            allow_run_as_root=self.allow_run_as_root,
            flavour=self.flavour,
            library_dir=self.library_dir,
        )
        return ranks.ranks_on_this_host(total, argv, env=env)
