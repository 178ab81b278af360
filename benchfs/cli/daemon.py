"""``benchfs daemon``: run one daemon of the file system in the foreground, by hand.

``benchfs run`` starts its daemons with the node program
``python -m benchfs.node.daemon`` instead; both serve through ``benchfs.daemon``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchfs.cluster.private import private_umask
from benchfs.daemon import block_stop_signals, serve_file


def daemon(
    config: Annotated[
        Path,
        typer.Option("--config", help="The daemon's TOML config file.", show_default=False),
    ],
    node_id: Annotated[
        int | None,
        typer.Option("--node-id", help="Placement id (overrides the file and the launcher rank)."),
    ] = None,
    node_name: Annotated[
        str | None,
        typer.Option("--node-name", help="Registry name (overrides the file)."),
    ] = None,
) -> None:
    """Serve until SIGTERM/SIGINT or a shutdown request; exit 0 after a clean stop."""
    private_umask()
    block_stop_signals()
    serve_file(config, node_id=node_id, node_name=node_name)
