"""Load a whole results directory into one ``RunData``.

Layout (see docs/ANALYSIS.md): ``manifest.json`` and ``workload/summary.json``
are required; ``traces/``, ``iostat/``, ``preflight/`` and the per-rank rows
are optional, and what is absent is listed in ``RunData.absent``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.errors import DataFormatError, MissingDataError
from analysis.loaders.fio import parse_fio_json
from analysis.loaders.ior import parse_ior_json
from analysis.loaders.iostat import parse_iostat_json
from analysis.loaders.traces import TRACE_SUFFIX, TraceSet, load_traces

MANIFEST = "manifest.json"
WORKLOAD_SUMMARY = "workload/summary.json"
RANK_FILES = ("workload/ranks.csv", "workload/ranks.jsonl", "workload/ranks.json")
OPTIONAL_PARTS = ("traces/", "iostat/", "preflight/", "workload per-rank rows")


@dataclass
class RunData:
    """Everything a run left behind, as DataFrames (None where a part is absent)."""

    path: Path
    manifest: dict[str, Any]
    workload: pd.DataFrame
    traces: TraceSet | None = None
    ranks: pd.DataFrame | None = None
    iostat: pd.DataFrame | None = None
    preflight: pd.DataFrame | None = None
    absent: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # One row per phase and repetition (IOR's per-repetition names), when the summary has them.
    repetitions: pd.DataFrame | None = None

    @property
    def label(self) -> str:
        return str(self.manifest.get("label") or self.path.name)

    @property
    def config(self) -> dict[str, Any]:
        """The effective configuration saved with the run (empty if none)."""
        for key in ("effective_config", "config"):
            value = self.manifest.get(key)
            if isinstance(value, dict):
                return value
        return {}


def load_run(path: Path | str, *, allow_partial: bool = False) -> RunData:
    """Read a results directory; missing required parts raise MissingDataError."""
    root = Path(path)
    if not root.is_dir():
        raise MissingDataError(f"{root}: not a results directory")
    missing = [part for part in (MANIFEST, WORKLOAD_SUMMARY) if not (root / part).is_file()]
    if missing:
        raise MissingDataError(f"{root}: results directory lacks {', '.join(missing)}")
    run = RunData(
        path=root,
        manifest=_json_object(root / MANIFEST),
        workload=load_workload_summary(root / WORKLOAD_SUMMARY),
        repetitions=load_workload_repetitions(root / WORKLOAD_SUMMARY),
    )
    trace_dir = root / "traces"
    if trace_dir.is_dir() and any(trace_dir.rglob(f"*{TRACE_SUFFIX}")):
        run.traces = load_traces([trace_dir], allow_partial=allow_partial)
        run.notes += [loss.describe() for loss in run.traces.losses]
    else:
        run.absent.append("traces/")
    run.ranks = _ranks(root)
    if run.ranks is None:
        run.absent.append("workload per-rank rows")
    run.iostat = _tool_frames(root / "iostat", "sysstat", _iostat_frame, allow_partial, run)
    if run.iostat is None:
        run.absent.append("iostat/")
    run.preflight = _tool_frames(root / "preflight", "fio version", _fio_frame, allow_partial, run)
    if run.preflight is None:
        run.absent.append("preflight/")
    return run


def load_workload_summary(path: Path) -> pd.DataFrame:
    """Phase rows with IOR's field names and a ``phase`` column.

    Accepts IOR's own JSON, ``{"phases": [...]}``, a list of phase objects,
    or an object keyed by phase name.
    """
    text = path.read_text(errors="replace")
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError:
        document = None
    if document is None or (isinstance(document, dict) and "summary" in document):
        frame = parse_ior_json(text, str(path)).summary
    elif isinstance(document, dict) and isinstance(document.get("phases"), list):
        frame = pd.DataFrame(document["phases"])
    elif isinstance(document, list):
        frame = pd.DataFrame(document)
    elif isinstance(document, dict) and all(isinstance(v, dict) for v in document.values()):
        frame = pd.DataFrame([{"phase": name, **row} for name, row in document.items()])
    else:
        raise DataFormatError(path, "top level", "workload summary has no phases")
    if "phase" not in frame.columns:
        if "operation" not in frame.columns:
            raise DataFormatError(path, "phases", "phase rows name neither 'phase' nor 'operation'")
        frame.insert(0, "phase", frame["operation"])
    return frame


def load_workload_repetitions(path: Path) -> pd.DataFrame | None:
    """Per-repetition rows with a ``phase`` column, or None when the summary has none.

    ``{"repetitions": [...]}`` as ``benchfs run`` writes it, or the ``Results``
    of IOR's own JSON (their ``access`` names the phase).
    """
    text = path.read_text(errors="replace")
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError:
        document = None
    if document is None or (isinstance(document, dict) and "summary" in document):
        frame = parse_ior_json(text, str(path)).results
    elif isinstance(document, dict) and isinstance(document.get("repetitions"), list):
        frame = pd.DataFrame(document["repetitions"])
    else:
        return None
    if frame.empty:
        return None
    if "phase" not in frame.columns:
        if "access" not in frame.columns:
            raise DataFormatError(path, "repetitions", "rows name neither 'phase' nor 'access'")
        frame.insert(0, "phase", frame["access"])
    return frame


def _json_object(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise DataFormatError(
            path, f"line {error.lineno} column {error.colno}", error.msg
        ) from error
    if not isinstance(document, dict):
        raise DataFormatError(path, "top level", "expected a JSON object")
    return document


def _ranks(root: Path) -> pd.DataFrame | None:
    for name in RANK_FILES:
        path = root / name
        if not path.is_file():
            continue
        if path.suffix == ".csv":
            return pd.read_csv(path)
        if path.suffix == ".jsonl":
            return pd.read_json(path, lines=True)
        return pd.DataFrame(json.loads(path.read_text()))
    return None


def node_of(path: Path, part_dir: Path) -> str:
    """The node a per-node file belongs to: ``<part>/<node>/<any>.json``, else the file
    name (``<part>/node03.json``, ``<part>/node03.iostat.json``)."""
    relative = path.relative_to(part_dir)
    if len(relative.parts) >= 2 and relative.parts[-2] != "raw":
        return relative.parts[-2]
    name = path.name
    for suffix in (".json", ".iostat", ".fio", ".preflight"):
        name = name.removesuffix(suffix)
    return name


def _is_tool_output(text: str, first_key: str) -> bool:
    """Whether the first JSON object in ``text`` opens with the tool's own first key.

    Documents that merely embed a tool's output (a summary, a worker's report)
    open with another key and are left alone.
    """
    pattern = r'^[ \t]*\{\s*"' + re.escape(first_key) + '"'
    return re.search(pattern, text, re.MULTILINE) is not None


def _tool_frames(
    directory: Path,
    first_key: str,
    to_frame: Callable[[str, Path], pd.DataFrame],
    allow_partial: bool,
    run: RunData,
) -> pd.DataFrame | None:
    if not directory.is_dir():
        return None
    frames = []
    for path in sorted(directory.rglob("*.json")):
        text = path.read_text(errors="replace")
        if not _is_tool_output(text, first_key):
            continue  # a parsed summary or another tool's file
        try:
            frame = to_frame(text, path)
        except ValueError as error:  # the tool parsers' format errors are ValueErrors
            if not allow_partial:
                raise DataFormatError(path, "document", str(error)) from error
            run.notes.append(f"{path}: skipped: {error}")
            continue
        frames.append(
            frame.assign(node=node_of(path, directory), source=str(path.relative_to(directory)))
        )
    return pd.concat(frames, ignore_index=True) if frames else None


def _iostat_frame(text: str, path: Path) -> pd.DataFrame:
    frame = parse_iostat_json(text, str(path)).to_frame()
    if "timestamp" in frame.columns:
        stamps = pd.to_datetime(frame["timestamp"], utc=True, errors="coerce", format="ISO8601")
        # pandas may pick micro- or nanosecond resolution; the frame wants ns
        frame["time_ns"] = stamps.dt.as_unit("ns").astype("int64").where(stamps.notna())
    return frame


def _fio_frame(text: str, path: Path) -> pd.DataFrame:
    return parse_fio_json(text, str(path)).to_frame()
