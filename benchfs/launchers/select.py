"""Which launcher a run uses: the config's choice, or one that fits ``--nodes``."""

from __future__ import annotations

from typing import Any

from benchfs.cluster.hostfile import LOCAL_HOST_PREFIX
from benchfs.config.model import LauncherConfig
from benchfs.launchers.base import Launcher, get_launcher


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
    options: dict[str, Any] = {}
    if name == "mpirun":
        options = {
            "flavour": settings.flavour,
            "executable": settings.executable,
            "mca": dict(settings.mca),
            "extra_args": tuple(settings.extra_args),
        }
    elif name == "srun":
        options = {"extra_args": tuple(settings.extra_args)}
        if settings.executable:
            options["executable"] = settings.executable
    elif name == "local" and settings.executable:
        options = {"mpirun": settings.executable}
    return get_launcher(name, **options)
