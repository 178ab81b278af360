"""Slurm's ``srun``, for runs inside an allocation.

One process: ``srun --overlap --quit-on-interrupt -w host -N1 -n1
[--export=ALL,VAR=value] [env VAR=a,b] argv``: a single SIGINT, which stops
a watch such as iostat's, ends the step (srun by default only prints the
step's state and wants a second one within a second). srun splits
``--export`` on commas, so a value holding one is set by ``env``.
Ranks: ``srun --overlap --mpi=pmix -w h1,h2 -N2 -n N --ntasks-per-node=k ... argv``;
when hosts differ in rank counts, ``-w`` repeats each host once per rank with
``--distribution=arbitrary``; a list too long for one argument goes in a
file, whose path ``-w`` takes (``host_lists``). ``--overlap`` lets job steps share the nodes,
so daemons and workload ranks run side by side (drop it with overlap=False).
``--mpi=pmix``: the workload's OpenMPI ranks find one another through the
PMIx server slurmstepd runs for the step; under a site's ``MpiDefault=none``
each would otherwise abort in MPI_Init. An ``--mpi`` in ``extra_args`` comes
later on the line and wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from benchfs.cluster.hostfile import Host
from benchfs.config.model import LauncherConfig
from benchfs.launchers.base import (
    Launcher,
    env_prefix,
    rank_counts,
    register_launcher,
    require_argv,
    split_secrets,
)
from benchfs.launchers.host_lists import fits_one_argument, host_list_file


@register_launcher
@dataclass(frozen=True)
class SrunLauncher(Launcher):
    name = "srun"
    executable: str = "srun"
    overlap: bool = True
    mpi: str = "pmix"
    extra_args: Sequence[str] = ()
    host_file_dir: str | None = None

    @classmethod
    def from_settings(cls, settings: LauncherConfig) -> SrunLauncher:
        if settings.executable:
            return cls(executable=settings.executable, extra_args=tuple(settings.extra_args))
        return cls(extra_args=tuple(settings.extra_args))

    def command(
        self, host: Host, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> list[str]:
        return [
            *self._prologue(["--quit-on-interrupt"]),
            "-w",
            host.name,
            "-N1",
            "-n1",
            *self._environment(env),
            *require_argv(argv),
        ]

    def ranks_command(
        self,
        hosts: Sequence[Host],
        ranks_per_host: int | None,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
    ) -> list[str]:
        counts = rank_counts(hosts, ranks_per_host)
        nodes, total = f"-N{len(hosts)}", f"-n{sum(counts)}"
        if len(set(counts)) == 1:
            names = self._node_list([host.name for host in hosts])
            placement = ["-w", names, nodes, total, f"--ntasks-per-node={counts[0]}"]
        else:
            repeated = self._node_list(
                [host.name for host, count in zip(hosts, counts, strict=True) for _ in range(count)]
            )
            placement = ["-w", repeated, nodes, total, "--distribution=arbitrary"]
        mpi = [f"--mpi={self.mpi}"]
        return [*self._prologue(mpi), *placement, *self._environment(env), *require_argv(argv)]

    def _node_list(self, names: Sequence[str]) -> str:
        """``h1,h2,...``, or the path of a file of one name per line when the
        list is too long for one argument (srun reads ``-w`` as a file when it
        holds a ``/``)."""
        joined = ",".join(names)
        if fits_one_argument(joined):
            return joined
        directory = Path(self.host_file_dir) if self.host_file_dir else None
        return str(host_list_file("".join(f"{name}\n" for name in names), directory))

    def with_host_files_in(self, directory: Path) -> SrunLauncher:
        return replace(self, host_file_dir=str(directory))

    def _prologue(self, own: Sequence[str]) -> list[str]:
        overlap = ["--overlap"] if self.overlap else []
        return [self.executable, *overlap, *own, *self.extra_args]

    def _environment(self, env: Mapping[str, str] | None) -> list[str]:
        """``--export=ALL,VAR=value,...`` and, for values holding a comma
        (``UCX_TLS=rc,sm,self``), ``env VAR=value`` before the program:
        srun splits ``--export`` on commas and has no escape for them."""
        plain, secret = split_secrets(env)
        listed = [f"{key}={value}" for key, value in plain.items() if "," not in value]
        # A secret by name: srun takes its value from its own environment.
        exported = ["--export=ALL," + ",".join([*listed, *secret])] if listed or secret else []
        return [*exported, *env_prefix({k: v for k, v in plain.items() if "," in v})]
