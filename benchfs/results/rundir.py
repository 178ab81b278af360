"""One directory per run: ``<base>/<UTC timestamp>-<label>/``."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from benchfs.cluster.private import PRIVATE_MODE, make_private_dir
from benchfs.errors import BenchfsError

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
TIMESTAMP_FORMAT = "%Y%m%dT%H%M%SZ"


def create_run_dir(base: Path, label: str, *, now: datetime | None = None) -> Path:
    """Create and return a new, empty run directory under ``base``, mode 0700
    (``base`` is created 0700 when missing and must not be another user's).

    Two runs started in the same second (a sweep, parallel jobs sharing a
    results dir) get ``-2``, ``-3``, ... suffixes: ``mkdir`` without
    ``exist_ok`` is the atomic claim, so no two runs share a directory.
    """
    if not _LABEL.match(label):
        raise BenchfsError(
            f"run label {label!r}: use letters, digits, '.', '_' and '-', starting with a "
            "letter or digit"
        )
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    stem = f"{moment.strftime(TIMESTAMP_FORMAT)}-{label}"
    try:
        make_private_dir(base)
    except OSError as error:
        raise BenchfsError(f"{base}: cannot create results directory: {error}") from error
    for attempt in range(1, 10_000):
        path = base / (stem if attempt == 1 else f"{stem}-{attempt}")
        try:
            path.mkdir(mode=PRIVATE_MODE)
            path.chmod(PRIVATE_MODE)
        except FileExistsError:
            continue
        except OSError as error:
            raise BenchfsError(f"{path}: cannot create run directory: {error}") from error
        return path
    raise BenchfsError(f"{base}: too many runs named {stem}")
