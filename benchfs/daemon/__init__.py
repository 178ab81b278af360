"""One daemon of the file system: its settings (the daemon contract) and how it is served."""

from benchfs.daemon.serve import serve, serve_file
from benchfs.daemon.settings import (
    DaemonSettings,
    daemon_config_path,
    load_daemon_config,
    parse_daemon_config,
    resolve_daemon_config,
    settings_for,
    settings_toml,
    write_daemon_config,
)
from benchfs.daemon.signals import block_stop_signals

__all__ = [
    "DaemonSettings",
    "block_stop_signals",
    "daemon_config_path",
    "load_daemon_config",
    "parse_daemon_config",
    "resolve_daemon_config",
    "serve",
    "serve_file",
    "settings_for",
    "settings_toml",
    "write_daemon_config",
]
