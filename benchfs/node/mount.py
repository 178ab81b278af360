"""``python -m benchfs.node.mount``: one node's FUSE mount of a run's cluster
(``workload.interface = "mount"``).

- ``--node NAME``: the mount of that node, started here;
- ``--nodes NAME...``: a rank of a launcher job that mounts every node at
  once (one rank per host, in host order); it mounts the node of its rank.

Either way the node's mount point is ``MOUNT_ROOT/NAME`` and, once the
mount is live on this host, its ready record ``READY_DIR/NAME.json``
(``benchfs.mount.run_mount``). It serves until SIGTERM/SIGINT, then unmounts,
removes the mount point and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from benchfs.daemon.settings import RANK_VARIABLES, launcher_rank
from benchfs.errors import ConfigError
from benchfs.mount.run_mount import serve_run_mount
from benchfs.mount.settings import MountSettings
from benchfs.node import run_program


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchfs.node.mount", description=__doc__)
    parser.add_argument("--registry", type=Path, required=True, help="the cluster's registry")
    parser.add_argument("--mount-root", type=Path, required=True, help="mount points go here")
    parser.add_argument("--ready-dir", type=Path, required=True, help="ready records go here")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--node", help="the node mounted here")
    which.add_argument("--nodes", nargs="+", help="the node of each launcher rank")
    MountSettings.add_arguments(parser)
    return parser


def node_of(args: argparse.Namespace) -> str:
    if args.node is not None:
        node: str = args.node
        return node
    rank = launcher_rank(os.environ)
    if rank is None:
        raise RuntimeError(f"no launcher rank in the environment ({', '.join(RANK_VARIABLES)})")
    if rank >= len(args.nodes):
        raise ConfigError(f"launcher rank {rank}: only {len(args.nodes)} nodes to mount")
    node = args.nodes[rank]
    return node


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> int:
        node = node_of(args)
        # A run's mount is read-write and this user's only (never allow_other).
        settings = MountSettings.from_arguments(args)
        ended = serve_run_mount(
            node, args.registry, args.mount_root / node, args.ready_dir / f"{node}.json", settings
        )
        print(f"benchfs mount {node}: unmounted ({ended})", file=sys.stderr, flush=True)
        return 0

    return run_program(body, prefix=f"benchfs mount {args.node or 'rank'}: ")


if __name__ == "__main__":
    sys.exit(main())
