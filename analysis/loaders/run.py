"""Load a whole results directory into one ``RunData``.

Layout: ``analysis.layout`` (docs/ANALYSIS.md). ``manifest.json`` and
``workload/summary.json`` are required; ``traces/``, ``iostat/``,
``preflight/`` and the per-rank rows are optional, and what is absent is
listed in ``RunData.absent``; the per-transfer latencies and the logs are
read when they are there. ``RunData.files`` lists every file that was read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis import layout
from analysis.bounded import RESULTS_BYTES, check_nesting, read_bounded_text
from analysis.errors import DataFormatError, MissingDataError, UnreadableFileError
from analysis.io500 import validity
from analysis.jsonlines import read_json_lines
from analysis.loaders.diagnose import is_diagnose_document, parse_diagnose_json
from analysis.loaders.fio import parse_fio_json
from analysis.loaders.ior import parse_ior_json
from analysis.loaders.iostat import iostat_frame
from analysis.loaders.live import load_live_samples
from analysis.loaders.traces import TraceSet, load_traces
from analysis.loaders.verdicts import load_verdicts
from analysis.manifest import (
    HOSTS,
    INTERFACE,
    PREFLIGHT,
    START_TIME,
    SWEEP,
    ManifestPart,
    ToolDirManifest,
)
from analysis.verdicts import Verdicts

ToFrame = Callable[[str, Path], pd.DataFrame]
# What ``RunData.absent`` may name: the parts a run may lack.
OPTIONAL_PARTS = ("traces/", "iostat/", "preflight/", "workload per-rank rows")


@dataclass
class RunData:
    """Everything a run left behind, as DataFrames (None where a part is absent)."""

    path: Path
    manifest: dict[str, Any]
    workload: pd.DataFrame
    traces: TraceSet | None = None
    ranks: pd.DataFrame | None = None
    # One row per rank: when it began and ended connecting to the daemons (ns since the epoch).
    connects: pd.DataFrame | None = None
    iostat: pd.DataFrame | None = None
    preflight: pd.DataFrame | None = None
    # Every transfer's latency in ns per (phase, repetition), ranks in rank order.
    latencies: dict[tuple[str, int], npt.NDArray[np.uint64]] = field(default_factory=dict)
    # Logs by their path relative to the run directory, as text.
    logs: dict[str, str] = field(default_factory=dict)
    absent: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Every file read, relative to the run directory.
    files: list[str] = field(default_factory=list)
    # One row per phase and repetition (IOR's per-repetition names), when the summary has them.
    repetitions: pd.DataFrame | None = None
    # A suite run: ``suite`` (what ran), ``score``, ``bandwidth`` and ``metadata``.
    suite: dict[str, Any] | None = None
    # Per node and phase: healthy or slow, in which layer, since when (analysis.verdicts).
    verdicts: Verdicts | None = None
    # Every node's figures per interval while the phases ran (analysis.loaders.live).
    live: pd.DataFrame | None = None
    # A directory of tool outputs (analysis.sources.tool_dir): what stands for its manifest.
    tool_dir: ToolDirManifest | None = None

    @property
    def label(self) -> str:
        return str(self.manifest.get("label") or self.path.name)

    # The manifest's parts, typed by the records ``benchfs run`` writes (analysis.manifest).
    sweep = ManifestPart(SWEEP, "sweep")
    hosts = ManifestPart(HOSTS, "hosts")
    preflight_record = ManifestPart(PREFLIGHT, "preflight")
    interface = ManifestPart(INTERFACE, "interface")
    start_time = ManifestPart(START_TIME, "start_time")

    @property
    def config(self) -> dict[str, Any]:
        """The effective configuration saved with the run (empty if none)."""
        for key in ("effective_config", "config"):
            value = self.manifest.get(key)
            if isinstance(value, dict):
                return value
        return {}

    def read(self, path: Path) -> Path:
        """Note ``path`` as read; returns it."""
        self.files.append(str(path.relative_to(self.path)))
        return path


def load_run(path: Path | str, *, allow_partial: bool = False) -> RunData:
    """Read a results directory; missing required parts raise MissingDataError."""
    root = Path(path)
    if not root.is_dir():
        raise MissingDataError(f"{root}: not a results directory")
    paths = layout.RunLayout(root)
    required = (paths.manifest, paths.summary)
    missing = [str(path.relative_to(root)) for path in required if not path.is_file()]
    if missing:
        raise MissingDataError(f"{root}: results directory lacks {', '.join(missing)}")
    run = RunData(path=root, manifest={}, workload=pd.DataFrame())
    run.manifest = _json_object(run.read(paths.manifest))
    _check_data_version(paths.manifest, run.manifest)
    run.workload = load_workload_summary(run.read(paths.summary))
    run.repetitions = load_workload_repetitions(paths.summary)
    run.suite = load_suite_score(paths.summary)
    trace_files = sorted(paths.traces_dir.rglob(f"*{layout.TRACE_SUFFIX}"))
    if trace_files:
        run.traces = load_traces([paths.traces_dir], allow_partial=allow_partial)
        run.files += [str(p.relative_to(root)) for p in trace_files]
        run.notes += [loss.describe() for loss in run.traces.losses]
    else:
        run.absent.append("traces/")
    run.ranks = _ranks(run, paths.workload_dir)
    if run.ranks is None:
        run.absent.append("workload per-rank rows")
    if paths.connects.is_file():
        run.connects = pd.DataFrame(read_json_lines(run.read(paths.connects)))
    run.latencies = _latencies(run, paths.workload_dir)
    iostat_readers = [(_opens_with("sysstat"), _iostat_frame)]
    run.iostat = _tool_frames(paths.iostat_dir, iostat_readers, allow_partial, run)
    if run.iostat is None:
        run.absent.append("iostat/")
    preflight_readers = [
        (_opens_with("fio version"), _fio_frame),
        (is_diagnose_document, _diagnose_frame),
    ]
    run.preflight = _tool_frames(paths.preflight_dir, preflight_readers, allow_partial, run)
    if run.preflight is None:
        run.absent.append("preflight/")
    run.logs = _logs(run, paths)
    if paths.verdicts.is_file():
        run.verdicts = load_verdicts(run.read(paths.verdicts))
    if paths.live_samples.is_file():
        run.live, notes = load_live_samples(
            run.read(paths.live_samples), allow_partial=allow_partial
        )
        run.notes += notes
    return run


def load_workload_summary(path: Path) -> pd.DataFrame:
    """Phase rows with IOR's field names and a ``phase`` column.

    Accepts IOR's own JSON, ``{"phases": [...]}``, a list of phase objects,
    or an object keyed by phase name.
    """
    text = read_results_text(path)
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError:
        document = None
    from_ior = document is None or (isinstance(document, dict) and "summary" in document)
    if from_ior:
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
    # summaries written before phase rows named their kind and tool
    if "kind" not in frame.columns:
        frame["kind"] = "data"
    if "tool" not in frame.columns:
        frame["tool"] = "ior" if from_ior else "benchfs"
    return frame


SUITE_KEYS = ("suite", "score", "bandwidth", "metadata")


def load_suite_score(path: Path) -> dict[str, Any] | None:
    """A suite's ``suite``, ``score``, ``bandwidth``, ``metadata``, ``valid``
    and ``invalid_reasons``; None for a summary that is not a suite's."""
    try:
        document: Any = json.loads(read_results_text(path))
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("suite"), dict):
        return None
    for key in SUITE_KEYS[1:]:
        if not isinstance(document.get(key), int | float):
            raise DataFormatError(path, key, "a suite's summary needs a number here")
    found = {key: document[key] for key in SUITE_KEYS}
    if isinstance(document.get("valid"), bool):
        found["valid"] = document["valid"]
        found["invalid_reasons"] = [str(r) for r in document.get("invalid_reasons") or []]
    else:  # a summary from before validity was recorded: judged from its phases
        rows = [row for row in document.get("phases") or [] if isinstance(row, dict)]
        judged = validity(rows, document["suite"])
        found["valid"], found["invalid_reasons"] = judged.valid, list(judged.reasons)
    return found


def load_workload_repetitions(path: Path) -> pd.DataFrame | None:
    """Per-repetition rows with a ``phase`` column, or None when the summary has none.

    ``{"repetitions": [...]}`` as ``benchfs run`` writes it, or the ``Results``
    of IOR's own JSON (their ``access`` names the phase).
    """
    text = read_results_text(path)
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


def _check_data_version(path: Path, manifest: dict[str, Any]) -> None:
    """A results directory of the version this reader reads; else one error naming it."""
    version = manifest.get("data_version")
    if version == layout.DATA_VERSION and not isinstance(version, bool):
        return
    if isinstance(version, int) and not isinstance(version, bool) and version > layout.DATA_VERSION:
        reason = (
            f"data_version {version}: written by a newer benchfs (this one reads "
            f"{layout.DATA_VERSION}); upgrade to read it"
        )
    elif version is None:
        reason = "no data_version: not a BenchFS results directory"
    else:
        reason = f"data_version {version!r} is unknown (this benchfs reads {layout.DATA_VERSION})"
    raise DataFormatError(path, "data_version", reason)


def read_results_text(path: Path) -> str:
    """A results file: regular, bounded, UTF-8, nested within bounds (``analysis.bounded``)."""
    text = read_bounded_text(
        path, limit=RESULTS_BYTES, what="results file", error=UnreadableFileError
    )
    check_nesting(text, str(path), UnreadableFileError)
    return text


def _json_object(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(read_results_text(path))
    except json.JSONDecodeError as error:
        raise DataFormatError(
            path, f"line {error.lineno} column {error.colno}", error.msg
        ) from error
    if not isinstance(document, dict):
        raise DataFormatError(path, "top level", "expected a JSON object")
    return document


def _ranks(run: RunData, directory: Path) -> pd.DataFrame | None:
    for name in layout.RANK_FILES:
        path = directory / name
        if not path.is_file():
            continue
        run.read(path)
        if path.suffix == ".jsonl":
            return pd.DataFrame(read_json_lines(path))
        try:
            if path.suffix == ".csv":
                return pd.read_csv(path)
            return pd.DataFrame(json.loads(read_results_text(path)))
        except json.JSONDecodeError as error:
            where = f"line {error.lineno} column {error.colno}"
            raise DataFormatError(path, where, error.msg) from error
        except (ValueError, pd.errors.ParserError) as error:
            raise DataFormatError(path, "document", f"not a table of rank rows: {error}") from error
    return None


def _latencies(run: RunData, directory: Path) -> dict[tuple[str, int], npt.NDArray[np.uint64]]:
    found: dict[tuple[str, int], npt.NDArray[np.uint64]] = {}
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob(layout.LATENCY_GLOB)):
        key = layout.parse_latency_file_name(path.name)
        if key is None:
            continue
        try:
            values = np.load(run.read(path), mmap_mode="r")
        except (OSError, ValueError) as error:
            raise DataFormatError(path, "header", f"not a .npy array: {error}") from error
        found[key] = values.astype(np.uint64, copy=False)
    return found


def _logs(run: RunData, paths: layout.RunLayout) -> dict[str, str]:
    logs = sorted(paths.logs_dir.rglob("*")) if paths.logs_dir.is_dir() else []
    if paths.preflight_dir.is_dir():
        logs += sorted(paths.preflight_dir.rglob(f"*{layout.STDERR_SUFFIX}"))
    return {
        str(path.relative_to(run.path)): run.read(path).read_text(errors="replace")
        for path in logs
        if path.is_file()
    }


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


def _opens_with(first_key: str) -> Callable[[str], bool]:
    """Whether the first JSON object in a text opens with the tool's own first key.

    Documents that merely embed a tool's output (a summary, a worker's report)
    open with another key and are left alone.
    """
    pattern = re.compile(r'^[ \t]*\{\s*"' + re.escape(first_key) + '"', re.MULTILINE)
    return lambda text: pattern.search(text) is not None


def _tool_frames(
    directory: Path,
    readers: Sequence[tuple[Callable[[str], bool], ToFrame]],
    allow_partial: bool,
    run: RunData,
) -> pd.DataFrame | None:
    """Every file under ``directory`` that one of ``readers`` recognizes, as one frame
    with ``node`` (unless the document names its nodes) and ``source`` (the file)."""
    if not directory.is_dir():
        return None
    frames = []
    for path in sorted(directory.rglob("*.json")):
        text = path.read_text(errors="replace")
        to_frame = next((read for recognize, read in readers if recognize(text)), None)
        if to_frame is None:
            # A parsed summary or another tool's file is JSON; what is not, is damaged
            # (and must not read as "not in this run").
            problem = _not_json(text)
            if problem is None:
                continue
            run.read(path)
            if not allow_partial:
                raise DataFormatError(path, problem[0], problem[1])
            run.notes.append(f"{path}: skipped: {problem[1]} (at {problem[0]})")
            continue
        run.read(path)
        try:
            frame = to_frame(text, path)
        except ValueError as error:  # the tool parsers' format errors are ValueErrors
            if not allow_partial:
                raise DataFormatError(path, "document", str(error)) from error
            run.notes.append(f"{path}: skipped: {error}")
            continue
        if "node" not in frame.columns:
            frame = frame.assign(node=node_of(path, directory))
        frames.append(frame.assign(source=str(path.relative_to(directory))))
    return pd.concat(frames, ignore_index=True) if frames else None


def _not_json(text: str) -> tuple[str, str] | None:
    """Where and why ``text`` is not a JSON document; None when it is one."""
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        reason = "empty file" if not text.strip() else f"not valid JSON: {error.msg}"
        return f"line {error.lineno} column {error.colno}", reason
    return None


def _iostat_frame(text: str, path: Path) -> pd.DataFrame:
    return iostat_frame(text, str(path))


def _fio_frame(text: str, path: Path) -> pd.DataFrame:
    return parse_fio_json(text, str(path)).to_frame()


def _diagnose_frame(text: str, path: Path) -> pd.DataFrame:
    return parse_diagnose_json(text, str(path))


def flatten(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys: {"a": {"b": 1}} -> {"a.b": 1}."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat
