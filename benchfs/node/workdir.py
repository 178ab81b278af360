"""``python -m benchfs.node.workdir``: a tool's directory on BenchFS's mount
(``workload.interface = "mount"``), reached through the mount of the host
this runs on, where the launcher started it:

- ``exec MOUNT_ROOT TASKS_PER_NODE NODE... -- ARGV...``: a rank of the
  tool's launcher job. It changes into its node's mount point
  (``MOUNT_ROOT/NODE``; ranks fill the nodes in order, TASKS_PER_NODE each,
  as the launchers place them) and becomes ARGV, whose paths relative to
  the mount point then name the same file of the cluster on every host;
- ``prepare DIR [SUBDIR...]``: create DIR (new) and its SUBDIRs, mode 0700;
- ``remove DIR``: remove DIR and everything in it;
- ``timestamp DIR``: the IO500 suite's timestamp file in DIR; prints its
  mtime in ns;
- ``find DIR NEWER_NS``: the IO500 suite's find over DIR's tree; prints
  ``{"scanned": N, "found": N, "elapsed_s": S}``.

DIR is a path through this host's mount point, and a run's
(``benchfs-<token>-p<k>``): a wrong argument cannot touch anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sys
from pathlib import Path
from typing import NoReturn

from benchfs.cluster.private import make_private_dir
from benchfs.daemon.settings import RANK_VARIABLES, launcher_rank
from benchfs.errors import ConfigError
from benchfs.node import run_program
from benchfs.workload.io500_find import find_tree, stamp

RUN_MARKER = "benchfs-"
USAGE = (
    "usage: python -m benchfs.node.workdir exec MOUNT_ROOT TASKS_PER_NODE NODE... -- ARGV..."
    " | prepare DIR [SUBDIR...] | remove DIR | timestamp DIR | find DIR NEWER_NS"
)


def node_of_rank(rank: int, tasks_per_node: int, nodes: list[str]) -> str:
    """The node of ``rank`` when ranks fill the nodes in order."""
    index = rank // tasks_per_node
    if index >= len(nodes):
        raise ConfigError(
            f"launcher rank {rank}: only {len(nodes)} nodes of {tasks_per_node} ranks each"
        )
    return nodes[index]


def exec_in_mount(
    mount_root: Path, tasks_per_node: int, nodes: list[str], argv: list[str]
) -> NoReturn:
    """Into this rank's node's mount point, then become ``argv`` (no return)."""
    rank = launcher_rank(os.environ)
    if rank is None:
        raise RuntimeError(f"no launcher rank in the environment ({', '.join(RANK_VARIABLES)})")
    node = node_of_rank(rank, tasks_per_node, nodes)
    mount_point = mount_root / node
    if not os.path.ismount(mount_point):
        raise ConfigError(
            f"rank {rank}: {mount_point} is not mounted on {socket.gethostname()}: "
            f"the launcher must place ranks {rank // tasks_per_node * tasks_per_node}.."
            f"{(rank // tasks_per_node + 1) * tasks_per_node - 1} on node {node}"
        )
    os.chdir(mount_point)
    sys.stdout.flush()
    os.execvp(argv[0], argv)


def _run_dir(text: str) -> Path:
    path = Path(text)
    if not path.is_absolute() or RUN_MARKER not in path.name:
        raise ConfigError(f"{text}: not a run's tool directory")
    return path


def prepare(directory: Path, subdirs: list[str]) -> int:
    make_private_dir(directory, exist_ok=False)
    for sub in subdirs:
        if Path(sub).is_absolute() or ".." in Path(sub).parts:
            raise ConfigError(f"{sub}: not a directory under {directory}")
        make_private_dir(directory / sub)
    return 0


def remove(directory: Path) -> int:
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(directory)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv

    def body() -> int:
        action, rest = (args[0], args[1:]) if args else ("", [])
        if action == "exec" and "--" in rest:
            split = rest.index("--")
            head, command = rest[:split], rest[split + 1 :]
            if len(head) >= 3 and command and head[1].isdigit() and int(head[1]) > 0:
                return exec_in_mount(Path(head[0]), int(head[1]), head[2:], command)
        elif action == "prepare" and rest:
            return prepare(_run_dir(rest[0]), rest[1:])
        elif action == "remove" and len(rest) == 1:
            return remove(_run_dir(rest[0]))
        elif action == "timestamp" and len(rest) == 1:
            print(stamp(_run_dir(rest[0])), flush=True)
            return 0
        elif action == "find" and len(rest) == 2 and rest[1].isdigit():
            print(json.dumps(find_tree(_run_dir(rest[0]), int(rest[1])).model_dump()), flush=True)
            return 0
        print(USAGE, file=sys.stderr)
        return 2

    return run_program(body, prefix=f"benchfs workdir {socket.gethostname()}: ")


if __name__ == "__main__":
    sys.exit(main())
