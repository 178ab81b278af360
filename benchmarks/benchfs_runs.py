"""One ``benchfs run`` of a benchmark: in a results directory of its own, its
run directory handed to the caller, the results removed after."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def finished_run(args: list[str], what: str, prefix: str) -> Iterator[Path]:
    """Runs ``benchfs run --results-dir DIR ARGS`` (DIR a new directory named
    from ``prefix``) and yields its run directory; a failed run exits naming
    ``what``, with the tail of its stderr. DIR is removed after the block."""
    results = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        argv = [sys.executable, "-m", "benchfs", "run", "--results-dir", str(results), *args]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join(done.stderr.splitlines()[-20:])
            raise SystemExit(f"{what} failed:\n{tail}")
        (run_dir,) = [p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")]
        yield run_dir
    finally:
        shutil.rmtree(results, ignore_errors=True)


def workload_summary(run_dir: Path) -> dict[str, Any]:
    """The run's ``workload/summary.json``."""
    found: dict[str, Any] = json.loads((run_dir / "workload" / "summary.json").read_text())
    return found
