"""Load engine event logs (one file per process) into one DataFrame per event kind.

Every frame has ``time_ns`` (absolute, ns since the Unix epoch), ``node``
(the node of the process that recorded the event), ``pid``, ``op``,
``status``, ``retries``, ``bytes``, ``peer`` (the record's node field by
name: this node for storage ops, submits and rpc_server, the target for
rpc_client) and the three per-kind columns named by the header.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis import layout
from analysis.errors import DataFormatError, MissingDataError
from analysis.loaders.trace_format import (
    MAX_TIME_NS,
    RECORD_DTYPE,
    RECORD_SIZE,
    TraceHeader,
    read_header,
)
from analysis.timing import step

TRACE_SUFFIX = layout.TRACE_SUFFIX
NO_OP = "none"


@dataclass(frozen=True)
class TraceLoss:
    """Data dropped from one file because ``allow_partial`` was given."""

    path: Path
    reason: str
    bytes_dropped: int
    records_dropped: int

    def describe(self) -> str:
        return (
            f"{self.path}: {self.reason}; dropped {self.bytes_dropped} bytes "
            f"({self.records_dropped} records)"
        )


@dataclass
class TraceSet:
    """All events of a set of trace files, one DataFrame per event kind name."""

    events: dict[str, pd.DataFrame]
    headers: list[TraceHeader]
    losses: list[TraceLoss] = field(default_factory=list)

    @property
    def start_unix_ns(self) -> int:
        """The earliest process start: time zero of the run's time axis."""
        return min((h.start_unix_ns for h in self.headers), default=0)

    @property
    def nodes(self) -> list[str]:
        return sorted({h.node for h in self.headers})

    @property
    def server_nodes(self) -> list[str]:
        """Nodes that serve data (daemons, stores): the targets of RPCs."""
        return sorted({h.node for h in self.headers if h.process != CLIENT_PROCESS})

    @property
    def event_count(self) -> int:
        return sum(len(frame) for frame in self.events.values())

    def kind(self, name: str) -> pd.DataFrame:
        """Events of one kind; raises MissingDataError naming the kinds present."""
        if name not in self.events:
            present = ", ".join(sorted(self.events)) or "none"
            raise MissingDataError(f"no '{name}' events in the traces (kinds present: {present})")
        return self.events[name]

    def has(self, name: str) -> bool:
        return name in self.events and len(self.events[name]) > 0


def trace_files(paths: Iterable[Path | str]) -> list[Path]:
    """Expand directories into their ``*.bftrace`` files; keep files as given."""
    found: list[Path] = []
    for item in map(Path, paths):
        if item.is_dir():
            found.extend(sorted(item.rglob(f"*{TRACE_SUFFIX}")))
        elif item.exists():
            found.append(item)
        else:
            raise MissingDataError(f"{item}: no such trace file or directory")
    return found


def load_traces(paths: Iterable[Path | str], *, allow_partial: bool = False) -> TraceSet:
    """Read every trace file (directories are searched for ``*.bftrace``)."""
    with step("traces"):
        return _load_traces(paths, allow_partial)


def _load_traces(paths: Iterable[Path | str], allow_partial: bool) -> TraceSet:
    files = trace_files(paths)
    if not files:
        raise MissingDataError("no trace files (*.bftrace) found")
    headers, losses = _read_headers(files, allow_partial)
    names = _NameTables.from_headers(headers)
    # Pass 1 validates every file and counts its events per kind, so that each
    # column is allocated once at full size; pass 2 copies straight into it.
    # Both read into the same two buffers, file after file: memory a process
    # touches for the first time costs a page fault a page (and huge pages a
    # compaction), more than the copies themselves.
    buffers = _Buffers(max((_record_count(h, True)[0] for h in headers), default=0))
    counts = [_count_kinds(header, allow_partial, losses, buffers) for header in headers]
    columns = _fill_columns(headers, counts, names, buffers)
    del buffers
    events = {name: _frame(parts, names) for name, parts in columns.items()}
    return TraceSet(events=events, headers=headers, losses=losses)


def _read_headers(
    files: list[Path], allow_partial: bool
) -> tuple[list[TraceHeader], list[TraceLoss]]:
    headers: list[TraceHeader] = []
    losses: list[TraceLoss] = []
    for path in files:
        try:
            headers.append(read_header(path))
        except DataFormatError as error:
            if not allow_partial:
                raise
            reason = f"whole file skipped: {error.reason} (at {error.position})"
            losses.append(TraceLoss(path, reason, path.stat().st_size, 0))
    return headers, losses


@dataclass(frozen=True)
class _Counted:
    """What pass 1 found in one file: its whole records and their count per kind."""

    records: int
    per_kind: dict[int, int]


WORDS = RECORD_SIZE // 8


class _Buffers:
    """The records of one file as read, and sorted by kind: as large as the largest file.

    Records are held as rows of six 64-bit words, which numpy gathers faster than
    records of a structured dtype, and read through ``_records`` (``RECORD_DTYPE``)."""

    def __init__(self, records: int) -> None:
        self.read = _unadvised((records, WORDS), np.int64)
        self.sorted = _unadvised((records, WORDS), np.int64)


def _records(words: npt.NDArray[np.int64]) -> npt.NDArray[np.void]:
    """Rows of words as records, without a copy."""
    return words.view(RECORD_DTYPE).reshape(len(words))


def _count_kinds(
    header: TraceHeader, allow_partial: bool, losses: list[TraceLoss], buffers: _Buffers
) -> _Counted:
    whole, kinds, loss = _scan_kinds(header, allow_partial, buffers)
    if loss is not None:
        losses.append(loss)
    per_id = np.bincount(kinds, minlength=256)
    return _Counted(whole, {kind_id: int(per_id[kind_id]) for kind_id in header.kinds})


def _fill_columns(
    headers: list[TraceHeader],
    counts: list[_Counted],
    names: _NameTables,
    buffers: _Buffers,
) -> dict[str, dict[str, npt.NDArray[np.generic]]]:
    totals: dict[str, int] = {}
    for header, counted in zip(headers, counts, strict=True):
        for kind_id, count in counted.per_kind.items():
            name = header.kinds[kind_id].name
            totals[name] = totals.get(name, 0) + count
    columns = {
        name: _allocate(total, names.kind_columns[name]) for name, total in totals.items() if total
    }
    filled = dict.fromkeys(columns, 0)
    for header, counted in zip(headers, counts, strict=True):
        words = _read_words(header, counted.records, buffers.read)  # validated in pass 1
        kinds = _records(words)["kind"]
        # One stable radix sort by kind, one row gather: each kind is then a
        # contiguous block (undeclared kinds, dropped with allow_partial, too).
        by_kind = buffers.sorted[: counted.records]
        np.take(words, np.argsort(kinds, kind="stable"), axis=0, out=by_kind)
        block_start = np.concatenate([[0], np.cumsum(np.bincount(kinds, minlength=256))])
        for kind_id, count in counted.per_kind.items():
            if count == 0:
                continue
            spec = header.kinds[kind_id]
            start = filled[spec.name]
            target = {
                name: array[start : start + count] for name, array in columns[spec.name].items()
            }
            first = int(block_start[kind_id])
            block = _records(by_kind[first : first + count])
            _copy_block(block, header, spec.columns, names, target)
            filled[spec.name] = start + count
    return columns


def _record_count(header: TraceHeader, allow_partial: bool) -> tuple[int, TraceLoss | None]:
    """Whole records in the file; a partial last record raises or is reported."""
    path = header.path
    whole, tail = divmod(path.stat().st_size - header.data_offset, RECORD_SIZE)
    if not tail:
        return whole, None
    at = header.data_offset + whole * RECORD_SIZE
    reason = f"truncated: {tail} bytes of a partial {RECORD_SIZE}-byte record at the end"
    if not allow_partial:
        raise DataFormatError(path, at, reason)
    return whole, TraceLoss(path, reason, tail, 0)


def _scan_kinds(
    header: TraceHeader, allow_partial: bool, buffers: _Buffers
) -> tuple[int, npt.NDArray[np.uint8], TraceLoss | None]:
    """The whole records and the kind of each; records of a kind the header
    does not define raise or are reported."""
    whole, loss = _record_count(header, allow_partial)
    whole = min(whole, len(buffers.read))  # a file grown since it was measured
    read = _records(_read_words(header, whole, buffers.read))
    kinds = read["kind"]
    late = np.flatnonzero(read["t_ns"] >= MAX_TIME_NS)
    if late.size:
        first = int(late[0])
        raise DataFormatError(
            header.path,
            header.data_offset + first * RECORD_SIZE,
            f"record {first} has a time beyond {MAX_TIME_NS} ns after the start",
        )
    known = np.isin(kinds, np.fromiter(header.kinds, dtype=np.uint8))
    if not known.all():
        path = header.path
        first = int(np.argmin(known))
        at = header.data_offset + first * RECORD_SIZE
        reason = f"record {first} has kind {int(kinds[first])}, which the header does not define"
        if not allow_partial:
            raise DataFormatError(path, at, reason)
        dropped = int((~known).sum())
        previous = loss.bytes_dropped if loss else 0
        loss = TraceLoss(
            path,
            reason if loss is None else f"{loss.reason}; {reason}",
            previous + dropped * RECORD_SIZE,
            dropped,
        )
    return whole, kinds, loss


def _read_words(
    header: TraceHeader, count: int, into: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The file's first ``count`` records, read into the first rows of ``into``."""
    chosen = into[:count]
    if count == 0:  # a header alone (a daemon killed before its first flush)
        return chosen
    with header.path.open("rb") as stream:
        stream.seek(header.data_offset)
        got = stream.readinto(chosen.data.cast("B"))
    if got != chosen.nbytes:
        at = header.data_offset + got
        raise DataFormatError(header.path, at, "the file shrank while it was read")
    return chosen


_BASE_COLUMNS: dict[str, type[np.generic]] = {
    "time_ns": np.int64, "node": np.int32, "pid": np.int32, "op": np.int32,
    "status": np.int16, "retries": np.uint16, "bytes": np.int64, "peer": np.int32,
}  # fmt: skip


def _allocate(count: int, kind_columns: tuple[str, str, str]) -> dict[str, npt.NDArray[np.generic]]:
    arrays: dict[str, npt.NDArray[np.generic]] = {
        name: _unadvised((count,), dtype) for name, dtype in _BASE_COLUMNS.items()
    }
    for name in kind_columns:
        arrays[name] = _unadvised((count,), np.int64)
    return arrays


def _unadvised(shape: tuple[int, ...], dtype: type[np.generic]) -> npt.NDArray[Any]:
    """An array in an anonymous mapping of its own, which numpy does not advise
    into huge pages: on a machine whose memory is fragmented, each fresh huge
    page numpy asks for waits for the kernel to compact memory, which took
    longer than the whole load. The kernel still gives huge pages where its
    policy is "always" and one is free."""
    count = int(np.prod(shape))
    nbytes = count * np.dtype(dtype).itemsize
    if nbytes == 0:
        return np.empty(shape, dtype=dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype, count=count).reshape(shape)


def _copy_block(
    block: npt.NDArray[np.void],
    header: TraceHeader,
    kind_columns: tuple[str, str, str],
    names: _NameTables,
    out: dict[str, npt.NDArray[np.generic]],
) -> None:
    """Copy one file's records of one kind into the (pre-sliced) output columns.

    The record's fields (``RECORD_DTYPE``, little-endian whatever the host) are
    read in place; its unsigned 64-bit fields become int64 columns."""
    time_ns = out["time_ns"]
    time_ns[:] = block["t_ns"]
    np.add(time_ns, np.int64(header.start_unix_ns), out=time_ns)
    np.take(names.op_lookup(header), block["op"], out=out["op"])
    names.node_codes_for_ids(block["node"], out=out["peer"])
    out["status"][:] = block["status"]
    out["retries"][:] = block["retries"]
    out["node"][:] = names.node_code[header.node]
    out["pid"][:] = header.pid
    for field_name, name in zip(("bytes", "d0", "d1", "d2"), ("bytes", *kind_columns), strict=True):
        out[name][:] = block[field_name]


CLIENT_PROCESS = "client"  # the `process` of an RPC client's trace header


@dataclass
class _NameTables:
    """Global categories shared by all files, so frames concatenate as codes."""

    nodes: list[str]
    node_code: dict[str, int]
    node_by_id: dict[int, str]
    ops: list[str]
    op_code: dict[str, int]
    kind_columns: dict[str, tuple[str, str, str]]

    @classmethod
    def from_headers(cls, headers: list[TraceHeader]) -> _NameTables:
        # Node ids name daemons: a client's header carries no id of its own,
        # so its id must not shadow the daemon that has it.
        node_by_id = {h.node_id: h.node for h in headers if h.process == CLIENT_PROCESS}
        node_by_id.update({h.node_id: h.node for h in headers if h.process != CLIENT_PROCESS})
        nodes = sorted({h.node for h in headers} | set(node_by_id.values()))
        ops = sorted({name for h in headers for name in h.ops.values()} | {NO_OP})
        kind_columns: dict[str, tuple[str, str, str]] = {}
        for header in headers:
            for spec in header.kinds.values():
                known = kind_columns.setdefault(spec.name, spec.columns)
                if known != spec.columns:
                    raise DataFormatError(
                        header.path,
                        "header",
                        f"kind '{spec.name}' names its columns {spec.columns}, "
                        f"other files name them {known}",
                    )
        return cls(
            nodes=nodes,
            node_code={name: i for i, name in enumerate(nodes)},
            node_by_id=node_by_id,
            ops=ops,
            op_code={name: i for i, name in enumerate(ops)},
            kind_columns=kind_columns,
        )

    def node_codes_for_ids(
        self, ids: npt.NDArray[np.integer], out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[np.int32]:
        """Map node ids to category codes, adding names for ids no header declared."""
        if ids.size == 0:
            return np.zeros(0, dtype=np.int32) if out is None else out
        present = np.flatnonzero(np.bincount(ids))  # linear, unlike np.unique's sort
        lookup = np.zeros(int(present[-1]) + 1, dtype=np.int32)
        for node_id in present.tolist():
            name = self.node_by_id.get(node_id, f"node-id-{node_id}")
            if name not in self.node_code:
                self.node_code[name] = len(self.nodes)
                self.nodes.append(name)
            lookup[node_id] = self.node_code[name]
        return np.take(lookup, ids, out=out)

    def op_lookup(self, header: TraceHeader) -> npt.NDArray[np.int32]:
        lookup = np.full(256, self.op_code[NO_OP], dtype=np.int32)
        for code, name in header.ops.items():
            if 0 <= code < 256:
                lookup[code] = self.op_code[name]
        return lookup


def _frame(columns: dict[str, npt.NDArray[np.generic]], names: _NameTables) -> pd.DataFrame:
    data: dict[str, object] = {}
    for name, array in columns.items():
        if name in ("node", "peer"):
            data[name] = _categorical(array, names.nodes)
        elif name == "op":
            data[name] = _categorical(array, names.ops)
        else:
            data[name] = array
    return pd.DataFrame(data, copy=False)


def _categorical(codes: npt.NDArray[np.generic], categories: list[str]) -> pd.Categorical:
    dtype = pd.CategoricalDtype(categories=list(categories))
    return pd.Categorical.from_codes(codes.astype(np.int32, copy=False), dtype=dtype)
