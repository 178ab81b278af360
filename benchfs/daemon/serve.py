"""Serving one daemon from resolved settings (the engine does the work)."""

from __future__ import annotations

import benchfs_native
from benchfs.daemon.config import DaemonSettings
from benchfs.errors import ConfigError, EngineError


def serve(settings: DaemonSettings) -> benchfs_native.DaemonSummary:
    """Run the daemon until SIGTERM/SIGINT or a shutdown request.

    The engine prints the ``registered in <ms> ms`` line and the summary
    line on stderr. A startup failure raises ``EngineError`` (OS errors,
    with their errno) or ``ConfigError`` (a value the engine refused), one
    line naming the daemon and the cause.
    """
    who = f"daemon {settings.node_name} (node {settings.node_id})"
    try:
        return benchfs_native.serve_daemon(**settings.serve_kwargs())
    except OSError as error:
        detail = error.strerror or str(error)
        where = f": {error.filename}" if error.filename else ""
        raise EngineError(error.errno or 0, f"{who}: {detail}{where}") from error
    except ValueError as error:
        raise ConfigError(f"{settings.source}: {who}: {error}") from error
