"""The folder of real IOR and mdtest outputs the loader tests read
(tests/analysis/data/tool-outputs)."""

from __future__ import annotations

import shutil
from pathlib import Path

TOOL_OUTPUTS = Path(__file__).parent / "analysis" / "data" / "tool-outputs"
SHARED = TOOL_OUTPUTS
LOCAL = TOOL_OUTPUTS / "local"


def output(name: str) -> Path:
    """A file of the folder by its path relative to it (``local/ior_stonewall.txt``)."""
    path = TOOL_OUTPUTS / name
    assert path.is_file(), f"missing test data {path}"
    return path


def copy_outputs(target: Path, *names: str) -> Path:
    """A directory holding copies of the named outputs (their base names kept)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(output(name), target / Path(name).name)
    return target


def all_files() -> list[Path]:
    """Every file of the folder but the READMEs."""
    return sorted(p for p in TOOL_OUTPUTS.rglob("*") if p.is_file() and p.name != "README.md")
