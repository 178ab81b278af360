"""``benchfs mount`` and ``benchfs umount``: the running cluster as a FUSE
file system (docs/MOUNT.md)."""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Annotated

import typer

from benchfs.cluster.lifecycle import Lifecycle, Terminated
from benchfs.cluster.private import make_user_root, private_umask, user_temp_root
from benchfs.mount.control import mount_in_background, serve_in_foreground, unmount
from benchfs.mount.settings import MountSettings

# The options default to the model's own defaults (one shape: benchfs.mount.settings).
DEFAULTS = MountSettings()

#: What ``serve_in_foreground`` returns when a signal ended the mount.
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def _default_log(mountpoint: Path) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(mountpoint.resolve()).strip("/")) or "root"
    return make_user_root(user_temp_root()) / f"mount-{name}.log"


def mount(
    mountpoint: Annotated[Path, typer.Argument(help="An empty directory to mount on.")],
    registry: Annotated[
        Path,
        typer.Option("--registry", help="The daemons' registry directory.", show_default=False),
    ],
    foreground: Annotated[
        bool, typer.Option("--foreground", help="Serve in this process until unmounted.")
    ] = False,
    read_only: Annotated[bool, typer.Option("--read-only", help="Refuse every change.")] = False,
    allow_other: Annotated[
        bool, typer.Option("--allow-other", help="Let other users reach the mount (root only).")
    ] = False,
    threads: Annotated[
        int,
        typer.Option(
            "--threads",
            help="Worker threads for large transfers and queued requests (0: none).",
        ),
    ] = DEFAULTS.threads,
    attr_timeout: Annotated[
        float, typer.Option("--attr-timeout", help="Seconds the kernel may cache attributes.")
    ] = DEFAULTS.attr_timeout_s,
    entry_timeout: Annotated[
        float, typer.Option("--entry-timeout", help="Seconds the kernel may cache name lookups.")
    ] = DEFAULTS.entry_timeout_s,
    rpc_deadline: Annotated[
        float,
        typer.Option("--rpc-deadline", help="Seconds before an unanswered RPC is an error."),
    ] = DEFAULTS.rpc_deadline_s,
    connect_deadline: Annotated[
        float, typer.Option("--connect-deadline", help="Seconds to reach every daemon at start.")
    ] = DEFAULTS.connect_deadline_s,
    session_spin: Annotated[
        int,
        typer.Option(
            "--session-spin",
            help="Microseconds the session thread polls for the next request "
            "before sleeping (0: none).",
        ),
    ] = DEFAULTS.session_spin_us,
    log: Annotated[
        Path | None,
        typer.Option("--log", help="The background mount's log (default: per-user temp dir)."),
    ] = None,
) -> None:
    """Mount the daemons of a registry; in the background unless --foreground."""
    private_umask()
    settings = MountSettings.checked(
        read_only=read_only,
        allow_other=allow_other,
        threads=threads,
        attr_timeout_s=attr_timeout,
        entry_timeout_s=entry_timeout,
        rpc_deadline_s=rpc_deadline,
        connect_deadline_s=connect_deadline,
        session_spin_us=session_spin,
    )
    if foreground:
        ended = serve_in_foreground(registry, mountpoint, settings)
        if ended in STOP_SIGNALS:  # unmounted on the way out; exits 128 + the signal
            raise Terminated(signal.Signals[ended])
        return
    log_path = log if log is not None else _default_log(mountpoint)
    with Lifecycle():  # SIGTERM/SIGHUP while it mounts: the mount process stops too
        process = mount_in_background(registry, mountpoint, settings, log_path)
    typer.echo(f"mounted {mountpoint} (pid {process.pid}, log {log_path})")


def umount(
    mountpoint: Annotated[Path, typer.Argument(help="A BenchFS mount point.")],
) -> None:
    """Unmount a BenchFS mount; its mount process then exits."""
    unmount(mountpoint)
