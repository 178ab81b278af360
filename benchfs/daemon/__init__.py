"""One daemon of the file system: its config file and how it is served."""

from benchfs.daemon.config import (
    DaemonFile,
    DaemonSettings,
    load_daemon_config,
    parse_daemon_config,
    resolve_daemon_config,
)
from benchfs.daemon.serve import serve

__all__ = [
    "DaemonFile",
    "DaemonSettings",
    "load_daemon_config",
    "parse_daemon_config",
    "resolve_daemon_config",
    "serve",
]
