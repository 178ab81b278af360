"""Writes that are all or nothing: a temp file in the same directory, fsync,
then rename over the target. A crash or Ctrl-C leaves the old file or the new
one, never half of one, and no stray temp files."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically (parents must exist)."""
    descriptor, temp_name = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, 0o644)  # mkstemp makes 0600; results are meant to be shared
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, data: Any) -> Path:
    """JSON with sorted keys and a trailing newline, written atomically."""
    return write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; some file systems refuse, which is harmless.
    try:
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)
