"""The settings of a mount, checked once, as keyword arguments of the
engine's ``serve_mount`` and as options of ``benchfs mount``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from benchfs.errors import ConfigError

MAX_THREADS = 256
# Longest session spin (the engine's bound): beyond it the spin only takes
# a core from the daemons and the programs.
MAX_SESSION_SPIN_US = 1000


@dataclass(frozen=True)
class MountSettings:
    read_only: bool = False
    allow_other: bool = False
    threads: int = 4
    attr_timeout_s: float = 0.0
    entry_timeout_s: float = 0.0
    rpc_deadline_s: float = 30.0
    connect_deadline_s: float = 60.0
    # After serving a request itself, the session thread polls /dev/fuse
    # this long for the next one before sleeping (docs/MOUNT.md).
    session_spin_us: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.threads <= MAX_THREADS:
            raise ConfigError(f"--threads: {self.threads} is not between 0 and {MAX_THREADS}")
        for name in ("attr_timeout_s", "entry_timeout_s"):
            value = getattr(self, name)
            if not 0.0 <= value <= 3600.0:
                raise ConfigError(f"--{_flag(name)}: {value} is not between 0 and 3600 seconds")
        for name in ("rpc_deadline_s", "connect_deadline_s"):
            value = getattr(self, name)
            if not 0.0 < value <= 3600.0:
                raise ConfigError(f"--{_flag(name)}: {value} is not in (0, 3600] seconds")
        if not 0 <= self.session_spin_us <= MAX_SESSION_SPIN_US:
            raise ConfigError(
                f"--session-spin: {self.session_spin_us} is not between 0 and "
                f"{MAX_SESSION_SPIN_US} microseconds"
            )
        if self.allow_other and os.geteuid() != 0:
            raise ConfigError("--allow-other: only root may let other users reach the mount")

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``benchfs_native.serve_mount``."""
        return {
            "read_only": self.read_only,
            "allow_other": self.allow_other,
            "threads": self.threads,
            "attr_timeout_s": self.attr_timeout_s,
            "entry_timeout_s": self.entry_timeout_s,
            "rpc_deadline_s": self.rpc_deadline_s,
            "connect_deadline_s": self.connect_deadline_s,
            "session_spin_us": self.session_spin_us,
        }

    def cli_args(self) -> list[str]:
        """The same settings as options of ``benchfs mount``."""
        args = [
            "--threads",
            str(self.threads),
            "--attr-timeout",
            repr(self.attr_timeout_s),
            "--entry-timeout",
            repr(self.entry_timeout_s),
            "--rpc-deadline",
            repr(self.rpc_deadline_s),
            "--connect-deadline",
            repr(self.connect_deadline_s),
            "--session-spin",
            str(self.session_spin_us),
        ]
        if self.read_only:
            args.append("--read-only")
        if self.allow_other:
            args.append("--allow-other")
        return args


def _flag(name: str) -> str:
    return name.removesuffix("_s").replace("_", "-")
