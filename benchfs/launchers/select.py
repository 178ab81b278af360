"""Which launcher a run uses: the config's choice, or one that fits ``--nodes``."""

from __future__ import annotations

from benchfs.cluster.hostfile import LOCAL_HOST_PREFIX
from benchfs.config.model import LauncherConfig
from benchfs.errors import LaunchError
from benchfs.launchers.base import Launcher, launcher_class


def launcher_name_for(settings: LauncherConfig, nodes_spec: str | None) -> str:
    """``auto``: local for the embedded cluster, srun inside Slurm, else mpirun."""
    if settings.name != "auto":
        return settings.name
    if nodes_spec is None or nodes_spec.partition(":")[0] == LOCAL_HOST_PREFIX:
        return "local"
    if nodes_spec == "slurm":
        return "srun"
    return "mpirun"


def launcher_for(settings: LauncherConfig, nodes_spec: str | None) -> Launcher:
    """A launcher built from the ``[launcher]`` section for this ``--nodes`` value."""
    name = launcher_name_for(settings, nodes_spec)
    try:
        return launcher_class(name).from_settings(settings)
    except (TypeError, ValueError) as error:
        raise LaunchError(f"launcher {name!r}: bad options in [launcher]: {error}") from error
