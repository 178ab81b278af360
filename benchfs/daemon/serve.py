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
    for key, directory in private_dirs(settings):
        try:
            make_private_dir(directory)
        except BenchfsError as error:
            raise type(error)(f"{source}: {who}: {key}: {error}") from error
    try:
        return benchfs_native.serve_daemon(**settings.serve_kwargs())
    except OSError as error:
        detail = error.strerror or str(error)
        where = f": {error.filename}" if error.filename else ""
        raise EngineError(error.errno or 0, f"{who}: {detail}{where}") from error
    except ValueError as error:
        raise ConfigError(f"{source}: {who}: {error}") from error


def private_dirs(settings: DaemonSettings) -> list[tuple[str, Path]]:
    """Every directory the daemon creates or writes into, by its key: each is
    made private to this user (0700) before the engine starts, and refused
    when another user owns it or could replace a component of its path
    (``benchfs.cluster.private``), whichever entry point started the daemon."""
    dirs = [
        ("data_dir", Path(str(settings.data_dir))),
        ("registry_dir", Path(settings.registry_dir)),
    ]
    if settings.trace_dir:
        dirs.append(("trace_dir", Path(settings.trace_dir)))
    return dirs


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
