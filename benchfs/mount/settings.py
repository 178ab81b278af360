"""The mount contract: one settings model, written and read by this module only.

``MountSettings`` is every setting a mount is started with. Every entry point
builds one (``benchfs mount`` from its options, a run from its ``[mount]``
section and its deadlines, ``bench mount`` from its own); the engine takes
its fields as the keyword arguments of ``serve_mount`` (``engine_kwargs``);
a mount started in another process (``benchfs mount`` in the background, a
run's mount on every node) gets them as options written by ``to_argv`` and
read back by ``add_arguments``/``from_arguments``, one option per field, so
the two sides cannot drift apart. The bounds are the engine's own
(``benchfs_native.LIMITS``, through ``benchfs.config.model``). The fields are
those of ``analysis.manifest.MountOptions``, the shape a run records them in.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Annotated, Any, Self

from pydantic import Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from analysis.manifest import MountOptions
from benchfs.config.model import (
    MAX_MOUNT_SESSION_SPIN_US,
    MAX_MOUNT_THREADS,
    CacheSeconds,
    Deadlines,
    MountConfig,
)
from benchfs.errors import ConfigError

_OUT_OF_BOUNDS = frozenset({"greater_than", "greater_than_equal", "less_than_equal"})
# An RPC or the connection to every daemon: beyond an hour, a mistake.
DeadlineSeconds = Annotated[float, Field(gt=0, le=3600.0, allow_inf_nan=False)]


class MountSettings(MountOptions):
    """Everything a mount is started with (docs/MOUNT.md, "Options"): the recorded
    shape with defaults, the engine's bounds and the entry points' checks."""

    read_only: bool = False
    # Other users may reach the mount (root only); the kernel then checks modes.
    allow_other: bool = False
    threads: Annotated[int, Field(ge=0, le=MAX_MOUNT_THREADS)] = 4
    attr_timeout_s: CacheSeconds = 0.0
    entry_timeout_s: CacheSeconds = 0.0
    rpc_deadline_s: DeadlineSeconds = 30.0
    connect_deadline_s: DeadlineSeconds = 60.0
    # After serving a request itself, the session thread polls /dev/fuse
    # this long for the next one before sleeping (docs/MOUNT.md).
    session_spin_us: Annotated[int, Field(ge=0, le=MAX_MOUNT_SESSION_SPIN_US)] = 0

    @model_validator(mode="after")
    def _only_root_shares(self) -> Self:
        if self.allow_other and os.geteuid() != 0:
            raise ValueError("only root may let other users reach the mount")
        return self

    @classmethod
    def checked(cls, **values: Any) -> MountSettings:
        """The settings, or a ``ConfigError`` naming the option at fault."""
        try:
            return cls(**values)
        except ValidationError as error:
            first = error.errors()[0]
            if not first["loc"]:  # the model's own check
                message = str(first["msg"]).removeprefix("Value error, ")
                raise ConfigError(f"--allow-other: {message}") from error
            name = str(first["loc"][0])
            raise ConfigError(
                f"{option_of(name)}: {first['input']!r} {_expected(name, first)}"
            ) from error

    @classmethod
    def for_run(cls, mount: MountConfig, deadlines: Deadlines, daemons: int) -> MountSettings:
        """A run's mounts: its ``[mount]`` section and its deadlines (the connect's
        grown with the ``daemons`` it connects to); private and read-write, never
        ``allow_other``."""
        return cls.checked(
            **mount.model_dump(),
            rpc_deadline_s=deadlines.rpc_s,
            connect_deadline_s=deadlines.grown(deadlines.register_s, daemons),
        )

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``benchfs_native.serve_mount``, one per field."""
        return self.model_dump()

    def to_argv(self) -> list[str]:
        """The settings as options, read back by ``from_arguments``."""
        argv: list[str] = []
        for name, value in self.model_dump().items():
            if isinstance(value, bool):
                argv += [option_of(name)] if value else []
            else:
                argv += [option_of(name), repr(value)]
        return argv

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """The options ``to_argv`` writes, on ``parser``."""
        for name, field in cls.model_fields.items():
            if field.annotation is bool:
                parser.add_argument(option_of(name), dest=name, action="store_true")
            else:
                kind = int if field.annotation is int else float
                parser.add_argument(option_of(name), dest=name, type=kind, default=field.default)

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> MountSettings:
        return cls.checked(**{name: getattr(args, name) for name in cls.model_fields})

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> MountSettings:
        """The settings ``to_argv`` wrote."""
        parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
        cls.add_arguments(parser)
        try:
            return cls.from_arguments(parser.parse_args(list(argv)))
        except argparse.ArgumentError as error:
            raise ConfigError(f"mount settings {' '.join(argv)}: {error}") from error


def _expected(name: str, error: ErrorDetails) -> str:
    """What a field takes, from its bounds: "is not between 0 and 1000 microseconds"."""
    field = MountSettings.model_fields.get(name)
    if field is None or error["type"] not in _OUT_OF_BOUNDS:
        return f"is refused: {error['msg']}"
    bounds = {key: getattr(meta, key) for meta in field.metadata for key in ("ge", "gt", "le")
              if getattr(meta, key, None) is not None}  # fmt: skip
    unit = " seconds" if name.endswith("_s") else " microseconds" if name.endswith("_us") else ""
    if "le" not in bounds:
        return f"is refused: {error['msg']}"
    if "gt" in bounds:
        return f"is not in ({bounds['gt']:g}, {bounds['le']:g}]{unit}"
    return f"is not between {bounds.get('ge', 0):g} and {bounds['le']:g}{unit}"


def option_of(field: str) -> str:
    """``attr_timeout_s`` -> ``--attr-timeout``, ``session_spin_us`` -> ``--session-spin``."""
    return "--" + field.removesuffix("_s").removesuffix("_us").replace("_", "-")
