"""Serving one daemon from resolved settings (the engine does the work)."""

from __future__ import annotations

from pathlib import Path

import benchfs_native
from benchfs.cluster.private import make_private_dir
from benchfs.daemon.settings import DaemonSettings, load_daemon_config, resolve_daemon_config
from benchfs.errors import BenchfsError, ConfigError, EngineError


def serve(settings: DaemonSettings, source: str) -> benchfs_native.DaemonSummary:
    """Run the daemon until SIGTERM/SIGINT or a shutdown request.

    The engine prints the ``registered in <ms> ms`` line and the summary
    line on stderr. A startup failure raises ``EngineError`` (OS errors,
    with their errno) or ``ConfigError`` (a value the engine refused), one
    line naming the daemon (and ``source``, its config file) and the cause.
    """
    who = f"daemon {settings.node_name} (node {settings.node_id})"
    try:
        prepare_data_dir(Path(str(settings.data_dir)))
    except BenchfsError as error:
        raise type(error)(f"{who}: data_dir: {error}") from error
    try:
        return benchfs_native.serve_daemon(**settings.serve_kwargs())
    except OSError as error:
        detail = error.strerror or str(error)
        where = f": {error.filename}" if error.filename else ""
        raise EngineError(error.errno or 0, f"{who}: {detail}{where}") from error
    except ValueError as error:
        raise ConfigError(f"{source}: {who}: {error}") from error


def prepare_data_dir(data_dir: Path) -> None:
    """The data directory, private to this user (0700); refused when another
    user owns it, its parent or this user's temporary directory."""
    make_private_dir(data_dir)


def serve_file(
    path: Path, *, node_id: int | None = None, node_name: str | None = None
) -> benchfs_native.DaemonSummary:
    """Read a daemon config file, resolve its identity (``node_id`` and
    ``node_name`` override the file), and serve."""
    source = str(path)
    settings = resolve_daemon_config(
        load_daemon_config(path), source, node_id=node_id, node_name=node_name
    )
    return serve(settings, source)
