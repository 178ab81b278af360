"""``mpirun`` of OpenMPI or MPICH (Hydra).

OpenMPI: ``mpirun [--allow-run-as-root] [--mca k v]... -np N -H h1:k,h2:k
--map-by slot [-x VAR=value]... [extra]... argv``.
MPICH:   ``mpiexec [-iface IF] [extra...] -hosts h1,h2 -ppn k -n N -genv
MPI4PY_MPIABI mpich [-genv LD_LIBRARY_PATH dir] [-genv VAR value]... argv``
(``-hosts h1:a,h2:b`` without ``-ppn`` when hosts differ in rank counts).
A host list too long for one argument goes in a file (``host_lists``):
``--hostfile F`` (lines ``h slots=k``) for OpenMPI, ``-f F`` for MPICH.
Hydra's proxies on the other hosts connect back to mpiexec at the address of
this machine's host name, unless ``-iface`` names the interface whose address
they can reach; when they cannot, Hydra 4.0.2 waits forever, so waits on it
end at the proxies' "unable to connect to server" line. mpi4py's
wheel holds one module per MPI; without ``MPI4PY_MPIABI`` it loads the
default ``libmpi.so`` (OpenMPI on Debian), whose ranks under Hydra each run
alone as rank 0 of 1. Its MPICH module needs ``libmpi.so.12``, which Debian
calls ``libmpich.so.12``: ``make build`` links it into ``<venv>/lib/mpich``,
which then goes into the ranks' ``LD_LIBRARY_PATH`` (``mpich_library_dir``).
``command()`` for one host is the same with one rank on that host; under a
run's session base (``SESSION_BASE_VARIABLE``), OpenMPI's gets a base of its
own (``--mca orte_tmpdir_base BASE/h-<digest of the host>``).
On this machine only (``ranks_on_this_host``, what the local launcher uses):
``mpirun [--allow-run-as-root] --oversubscribe -np N [-x VAR=value]... argv``,
so a local cluster can run more ranks than the machine has cores.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from benchfs.cluster.hostfile import Host
from benchfs.cluster.stuck import StuckOutput
from benchfs.config.model import LauncherConfig
from benchfs.errors import LaunchError
from benchfs.launchers.base import (
    Capabilities,
    Launcher,
    rank_counts,
    register_launcher,
    require_argv,
    split_secrets,
)
from benchfs.launchers.host_lists import fits_one_argument, host_list_file

Flavour = Literal["openmpi", "mpich"]
# Where ``make build`` links MPICH's library under the name mpi4py asks for.
MPICH_LIBRARY_DIR = Path(sys.prefix) / "lib" / "mpich"
# What a proxy that cannot reach mpiexec prints before it exits; mpiexec
# waits for it forever.
HYDRA_UNREACHED = re.compile(r"^\[proxy:[^]]*\] .*unable to connect to server")
# The base of OpenMPI's session directories (``<base>/ompi.<host>.<uid>/...``)
# that a run names for its mpiruns and their daemons.
SESSION_BASE_VARIABLE = "OMPI_MCA_orte_tmpdir_base"
SESSION_BASE_MCA = "orte_tmpdir_base"


def hydra_executable() -> str:
    """MPICH's launcher when ``executable`` is unset: ``mpiexec.hydra`` (MPICH
    installs it under that name too) or Debian's ``mpiexec.mpich``, found on
    PATH; else ``mpiexec``. With both MPIs installed, Debian's alternatives
    give plain ``mpiexec`` to OpenMPI, which refuses Hydra's options."""
    names = ("mpiexec.hydra", "mpiexec.mpich")
    return next((name for name in names if shutil.which(name)), "mpiexec")


def configured_executable(settings: LauncherConfig) -> str | None:
    """``launcher.executable``; unset, MPICH's launcher by its own name
    (``hydra_executable``), and None (the launcher's default) for OpenMPI."""
    if settings.executable:
        return settings.executable
    return hydra_executable() if settings.flavour == "mpich" else None


def mpich_library_dir() -> str | None:
    """``<venv>/lib/mpich`` when it holds ``libmpi.so.12``, else None."""
    return str(MPICH_LIBRARY_DIR) if (MPICH_LIBRARY_DIR / "libmpi.so.12").exists() else None


def require_interface(name: str) -> None:
    """Refuses an interface this machine does not have: Hydra would fail only
    once it starts, with its own error."""
    try:
        socket.if_nametoindex(name)
    except OSError:
        raise LaunchError(
            f"launcher.network_interface: this machine has no network interface {name!r}"
        ) from None


@register_launcher
@dataclass(frozen=True)
class MpirunLauncher(Launcher):
    """Options: ``flavour`` (openmpi|mpich), ``executable`` (default mpirun
    for OpenMPI, mpiexec for MPICH; from settings, ``hydra_executable()``),
    ``mca`` (OpenMPI MCA parameters, e.g. ``{"plm_rsh_agent": "/path/agent"}``),
    ``extra_args`` (placed before the host options), ``allow_run_as_root``
    (OpenMPI; None: only when root), ``library_dir`` (MPICH: put first in the
    ranks' ``LD_LIBRARY_PATH``), ``network_interface`` (MPICH: Hydra's
    ``-iface``), ``host_file_dir`` (where a host list too long for one
    argument is written: ``host_lists``).
    """

    name = "mpirun"
    capabilities = Capabilities(ranks_here=True)
    flavour: Flavour = "openmpi"
    executable: str | None = None
    mca: Mapping[str, str] = field(default_factory=dict)
    extra_args: Sequence[str] = ()
    allow_run_as_root: bool | None = None
    library_dir: str | None = None
    network_interface: str | None = None
    host_file_dir: str | None = None

    def __post_init__(self) -> None:
        if self.flavour not in ("openmpi", "mpich"):
            raise LaunchError(f"mpirun flavour must be 'openmpi' or 'mpich', got {self.flavour!r}")
        if self.mca and self.flavour != "openmpi":
            raise LaunchError("mpirun: MCA parameters apply only to the openmpi flavour")
        if self.network_interface and self.flavour != "mpich":
            raise LaunchError(
                "launcher.network_interface applies only to the mpich flavour "
                "(OpenMPI: launcher.mca oob_tcp_if_include)"
            )

    @classmethod
    def from_settings(cls, settings: LauncherConfig) -> MpirunLauncher:
        mpich = settings.flavour == "mpich"
        if settings.network_interface and mpich:
            require_interface(settings.network_interface)
        return cls(
            flavour=settings.flavour,
            executable=configured_executable(settings),
            mca=dict(settings.mca),
            extra_args=tuple(settings.extra_args),
            library_dir=mpich_library_dir() if mpich else None,
            network_interface=settings.network_interface,
        )

    def command(
        self, host: Host, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> list[str]:
        base = os.environ.get(SESSION_BASE_VARIABLE)
        if self.flavour != "openmpi" or not base or SESSION_BASE_MCA in self.mca:
            return self.ranks_command([host], 1, argv, env=env)
        # One-host commands run side by side (the reachability check, the
        # preflight's workers, iostat), and OpenMPI's jobs on one base race:
        # the last to leave ``ompi.<host>.<uid>`` removes it while another
        # creates its own directory there ("mkdir ... File exists"). A short
        # name, as PMIx's socket paths under it have at most 107 bytes.
        digest = hashlib.sha256(host.name.encode()).hexdigest()[:8]
        own = replace(self, mca={**self.mca, SESSION_BASE_MCA: f"{base}/h-{digest}"})
        return own.ranks_command([host], 1, argv, env=env)

    def ranks_on_this_host(
        self, count: int, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> list[str]:
        placement = ["--oversubscribe", "-np"] if self.flavour == "openmpi" else ["-n"]
        return [
            *self.prologue(),
            *placement,
            str(count),
            *self.env_options(env),
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
        total = str(sum(counts))
        pairs = list(zip((host.name for host in hosts), counts, strict=True))
        if self.flavour == "openmpi":
            listed = self.hosts_option(
                "-H", [f"{name}:{n}" for name, n in pairs],
                "--hostfile", [f"{name} slots={n}" for name, n in pairs],
            )  # fmt: skip
            placement = ["-np", total, *listed, "--map-by", "slot"]
        elif len(set(counts)) == 1:
            names = [name for name, _ in pairs]
            listed = self.hosts_option("-hosts", names, "-f", names)
            placement = [*listed, "-ppn", str(counts[0]), "-n", total]
        else:
            with_counts = [f"{name}:{n}" for name, n in pairs]
            placement = [*self.hosts_option("-hosts", with_counts, "-f", with_counts), "-n", total]
        return [*self.prologue(), *placement, *self.env_options(env), *require_argv(argv)]

    def hosts_option(
        self, option: str, entries: Sequence[str], file_option: str, lines: Sequence[str]
    ) -> list[str]:
        """``option h1,h2,...``, or ``file_option FILE`` with one line per host
        when the list is too long for one argument (``host_lists``)."""
        joined = ",".join(entries)
        if fits_one_argument(joined):
            return [option, joined]
        text = "".join(f"{line}\n" for line in lines)
        directory = Path(self.host_file_dir) if self.host_file_dir else None
        return [file_option, str(host_list_file(text, directory))]

    def with_host_files_in(self, directory: Path) -> MpirunLauncher:
        return replace(self, host_file_dir=str(directory))

    def stuck_output(self) -> StuckOutput | None:
        # OpenMPI's mpirun exits when its daemons cannot reach it; Hydra's waits.
        if self.flavour != "mpich":
            return None
        now = f" (now {self.network_interface!r})" if self.network_interface else ""
        return StuckOutput(
            HYDRA_UNREACHED,
            "Hydra's proxies cannot reach mpiexec on this machine: launcher.network_interface "
            f"must name this machine's interface on the hosts' network{now}",
        )

    def prologue(self) -> list[str]:
        """The executable and the options that do not depend on the hosts."""
        if self.flavour == "mpich":
            iface = ["-iface", self.network_interface] if self.network_interface else []
            return [self.executable or "mpiexec", *iface, *self.extra_args]
        root = self.allow_run_as_root
        if root is None:
            root = os.geteuid() == 0
        tokens = [self.executable or "mpirun"]
        if root:
            tokens.append("--allow-run-as-root")
        for key, value in self.mca.items():
            tokens += ["--mca", key, str(value)]
        return [*tokens, *self.extra_args]

    def env_options(self, env: Mapping[str, str] | None) -> list[str]:
        """Options that set ``env`` in every rank."""
        tokens: list[str] = []
        if self.flavour == "mpich":
            tokens += ["-genv", "MPI4PY_MPIABI", "mpich"]
            if self.library_dir:
                inherited = os.environ.get("LD_LIBRARY_PATH")
                path = f"{self.library_dir}:{inherited}" if inherited else self.library_dir
                tokens += ["-genv", "LD_LIBRARY_PATH", path]
        plain, secret = split_secrets(env)
        for key, value in plain.items():
            tokens += (
                ["-x", f"{key}={value}"] if self.flavour == "openmpi" else ["-genv", key, value]
            )
        if secret:  # by name: the value comes from mpirun's own environment
            if self.flavour == "openmpi":
                tokens += [token for key in secret for token in ("-x", key)]
            else:
                tokens += ["-genvlist", ",".join(secret)]
        return tokens
