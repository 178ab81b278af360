"""The scope a benchmark runs in: a ``Lifecycle`` (SIGTERM and SIGHUP unwind
as ``Terminated``; what it starts is stopped) and a fresh private directory
under the one given, removed on every exit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchfs.cluster.lifecycle import Lifecycle
from benchfs.errors import ToolError


@contextmanager
def bench_scope(
    directory: Path | None, prefix: str, *, grace_s: float = 10.0
) -> Iterator[tuple[Lifecycle, Path]]:
    """The scope and its directory in ``directory`` (default: the temp dir)."""
    if directory is not None and not directory.is_dir():
        raise ToolError(f"benchmark directory {directory} does not exist")
    with Lifecycle(grace_s=grace_s) as life:
        yield life, life.temp_dir(prefix, directory)
