"""Which launcher a run uses: the config's choice, or one that fits ``--nodes``."""

from __future__ import annotations

from collections.abc import Mapping

from benchfs.cluster.hostfile import LOCAL_HOST_PREFIX
from benchfs.config.model import LauncherConfig
from benchfs.errors import LaunchError
from benchfs.launchers.base import Launcher, launcher_class


def launcher_name_for(settings: LauncherConfig, nodes_spec: str | None) -> str:
    """``auto``: local for the embedded cluster, srun inside Slurm, else mpirun."""
    if settings.name != "auto":
        return settings.name
    if embedded(nodes_spec):
        return "local"
    if nodes_spec == "slurm":
        return "srun"
    return "mpirun"


def launcher_name_in(nodes_spec: str | None, environ: Mapping[str, str]) -> str:
    """``benchfs diagnose``'s default: local for the embedded cluster, srun inside a
    Slurm job (``SLURM_JOB_ID``), else mpirun."""
    if embedded(nodes_spec):
        return "local"
    return "srun" if "SLURM_JOB_ID" in environ else "mpirun"


def embedded(nodes_spec: str | None) -> bool:
    """Whether ``--nodes`` names the embedded local cluster (``local0``, ...)."""
    return nodes_spec is None or nodes_spec.partition(":")[0] == LOCAL_HOST_PREFIX


def launcher_for(settings: LauncherConfig, nodes_spec: str | None) -> Launcher:
    """A launcher built from the ``[launcher]`` section for this ``--nodes`` value."""
    name = launcher_name_for(settings, nodes_spec)
    try:
        launcher = launcher_class(name).from_settings(settings)
    except (TypeError, ValueError) as error:
        raise LaunchError(f"launcher {name!r}: bad options in [launcher]: {error}") from error
    if embedded(nodes_spec) and not launcher.capabilities.runs_here:
        # Its nodes are not hosts: ssh cannot reach local0, and MPICH's Hydra
        # waits for it forever.
        raise LaunchError(
            f"launcher.name = {name!r} starts processes on named hosts, but the embedded "
            f"local cluster's nodes ({LOCAL_HOST_PREFIX}0, ...) are not hosts: give --nodes "
            "HOSTFILE, or keep launcher.name = 'auto' or 'local' (launcher.flavour and "
            "launcher.executable choose the MPI that starts the local ranks)"
        )
    return launcher
