"""Launchers: tiny classes that turn (hosts, argv, env) into a command line.

``get_launcher("local" | "mpirun" | "srun", **options)``; importing this
package registers the built-in ones.
"""

from benchfs.launchers.base import (
    Launcher,
    get_launcher,
    launcher_names,
    rank_counts,
    register_launcher,
)
from benchfs.launchers.local import LocalLauncher
from benchfs.launchers.mpirun import MpirunLauncher
from benchfs.launchers.select import launcher_for, launcher_name_for
from benchfs.launchers.srun import SrunLauncher

__all__ = [
    "Launcher",
    "LocalLauncher",
    "MpirunLauncher",
    "SrunLauncher",
    "get_launcher",
    "launcher_for",
    "launcher_name_for",
    "launcher_names",
    "rank_counts",
    "register_launcher",
]
