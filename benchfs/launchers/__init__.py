"""Launchers: tiny classes that turn (hosts, argv, env) into a command line,
and the command lines of the node programs they start.

``get_launcher("local" | "mpirun" | "srun", **options)``; importing this
package registers the built-in ones. ``benchfs.launchers.programs`` holds
every argv of a node program (``python -m benchfs.node.<program>``).
"""

from benchfs.launchers.base import (
    Capabilities,
    Launcher,
    get_launcher,
    launcher_class,
    launcher_names,
    rank_counts,
    register_launcher,
)
from benchfs.launchers.local import LocalLauncher
from benchfs.launchers.mpirun import MpirunLauncher
from benchfs.launchers.select import launcher_for, launcher_name_for
from benchfs.launchers.srun import SrunLauncher

__all__ = [
    "Capabilities",
    "Launcher",
    "LocalLauncher",
    "MpirunLauncher",
    "SrunLauncher",
    "get_launcher",
    "launcher_class",
    "launcher_for",
    "launcher_name_for",
    "launcher_names",
    "rank_counts",
    "register_launcher",
]
