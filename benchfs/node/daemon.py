"""``python -m benchfs.node.daemon``: one daemon of a run.

- ``--config FILE``: the daemon of this file (started here, one process per
  daemon);
- ``--config-dir DIR [--shm-dir DIR]``: a rank of a launcher job that starts
  every daemon at once; it serves ``DIR/daemon-<rank>.toml`` (node ids follow
  the ranks) and first creates the shared-memory directory UCX is told to use.

It serves until SIGTERM/SIGINT or a shutdown request and exits 0 after a
clean stop.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from benchfs.cluster.private import make_private_dir
from benchfs.daemon import block_stop_signals
from benchfs.daemon.serve import serve_file
from benchfs.daemon.settings import RANK_VARIABLES, daemon_config_path, launcher_rank
from benchfs.errors import ConfigError
from benchfs.node import run_program


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchfs.node.daemon", description=__doc__)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--config", type=Path, help="the daemon's config file")
    which.add_argument("--config-dir", type=Path, help="serve daemon-<launcher rank>.toml of DIR")
    parser.add_argument("--shm-dir", help="create this shared-memory directory first")
    return parser


def rank_from_env(env: Mapping[str, str] | None = None) -> int:
    """The launcher rank of this process (which daemon of the job it is)."""
    rank = launcher_rank(os.environ if env is None else env)
    if rank is None:
        raise RuntimeError(f"no launcher rank in the environment ({', '.join(RANK_VARIABLES)})")
    return rank


def config_file(args: argparse.Namespace) -> Path:
    if args.config is not None:
        path: Path = args.config
        return path
    path = daemon_config_path(args.config_dir, rank_from_env())
    if not path.is_file():
        raise ConfigError(f"{path}: no daemon config for this rank")
    return path


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> int:
        path = config_file(args)
        if args.shm_dir:
            make_private_dir(Path(args.shm_dir))
        block_stop_signals()
        serve_file(path)
        return 0

    return run_program(body)


if __name__ == "__main__":
    sys.exit(main())
