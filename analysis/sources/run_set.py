"""A directory of results directories: the points of a sweep (or any runs kept together)."""

from __future__ import annotations

from pathlib import Path

from analysis.errors import MissingDataError
from analysis.layout import MANIFEST
from analysis.loaders.run import RunData, load_run
from analysis.sources.results import is_results_dir as is_run_dir


def is_run_set(path: Path) -> bool:
    """Whether ``path`` is a directory of results directories (and not one itself)."""
    return (
        path.is_dir()
        and not is_run_dir(path)
        and any(child.is_dir() and is_run_dir(child) for child in path.iterdir())
    )


def run_dirs_in(path: Path) -> list[Path]:
    """The results directories directly under ``path``, in name (time) order."""
    if not path.is_dir():
        raise MissingDataError(f"{path}: not a directory")
    found = sorted(child for child in path.iterdir() if child.is_dir() and is_run_dir(child))
    if not found:
        raise MissingDataError(
            f"{path}: neither a results directory (no {MANIFEST}) nor a directory of them"
        )
    return found


def load_run_set(path: Path | str, *, allow_partial: bool = False) -> list[RunData]:
    """Every results directory directly under ``path``."""
    return [load_run(child, allow_partial=allow_partial) for child in run_dirs_in(Path(path))]
