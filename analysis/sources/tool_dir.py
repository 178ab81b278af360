"""A directory of IOR, mdtest or fio outputs (not made by ``benchfs run``) as a RunData.

Every file under the directory is looked at; those whose content a loader
recognizes are read (docs/ANALYSIS.md, "Tool outputs"), the others are
listed as ignored. The phases are those ``analysis.convert.summary`` builds,
so report and compare treat the directory like a results directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.convert.summary import ToolSummary, summarize_outputs
from analysis.errors import AnalysisError, MissingDataError
from analysis.loaders.detect import detect
from analysis.loaders.run import OPTIONAL_PARTS, RunData
from analysis.loaders.tools import LoadedOutput, load_tool_output
from analysis.manifest import ToolDirManifest

# Enough of a file to find the line that names its tool.
SNIFF_BYTES = 1 << 20
# What `benchfs report` writes into the directory it reports on.
_REPORT_FILES = frozenset({"report.md", "report.html"})
SOURCE = "tool outputs (not made by benchfs run)"


def tool_output_files(root: Path) -> tuple[list[Path], list[Path]]:
    """Files under ``root`` that hold a tool's output, and the others (report files aside)."""
    found: list[Path] = []
    ignored: list[Path] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if relative.parts[0] == "plots" or path.name in _REPORT_FILES:
            continue
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES).decode(errors="replace")
        (found if detect(head) is not None else ignored).append(path)
    return found, ignored


@dataclass(frozen=True)
class ToolOutputs:
    outputs: list[LoadedOutput]
    ignored: list[Path]  # files no loader recognized
    notes: list[str]  # files skipped with allow_partial, and why


def load_tool_outputs(root: Path, *, allow_partial: bool = False) -> ToolOutputs:
    """Parse every tool output under ``root``; with ``allow_partial`` a bad file becomes a note."""
    files, ignored = tool_output_files(root)
    outputs, notes = [], []
    for path in files:
        try:
            outputs.append(load_tool_output(path))
        except AnalysisError as error:
            if not allow_partial:
                raise
            notes.append(f"skipped: {error}")  # the error names the file
    return ToolOutputs(outputs, ignored, notes)


def load_tool_dir(path: Path | str, *, allow_partial: bool = False) -> RunData:
    """A RunData whose workload phases come from the tool outputs under ``path``."""
    root = Path(path)
    if not root.is_dir():
        what = "not a directory" if root.exists() else "no such directory"
        raise MissingDataError(f"{root}: {what}")
    found = load_tool_outputs(root, allow_partial=allow_partial)
    if not found.outputs:
        raise no_outputs_error(root)
    summary = summarize_outputs(found.outputs, root)
    manifest = _manifest(root, summary, found.ignored)
    run = RunData(
        path=root,
        manifest=manifest.model_dump(),
        tool_dir=manifest,
        workload=pd.DataFrame(summary.phases),
        ranks=summary.ranks,
        notes=found.notes,
    )
    run.absent += [part for part in OPTIONAL_PARTS if part != "workload per-rank rows"]
    if run.ranks is None:
        run.absent.append("workload per-rank rows")
    return run


def no_outputs_error(root: Path) -> MissingDataError:
    return MissingDataError(
        f"{root}: not a results directory (no manifest.json) and holds no IOR, mdtest or fio output"
    )


def _manifest(root: Path, summary: ToolSummary, ignored: list[Path]) -> ToolDirManifest:
    tools = sorted({str(entry["tool"]) for entry in summary.outputs})
    return ToolDirManifest(
        label=root.resolve().name,
        source=SOURCE,
        tools=", ".join(tools),
        tool_outputs=summary.outputs,
        ignored_files=[str(path.relative_to(root)) for path in ignored],
    )
