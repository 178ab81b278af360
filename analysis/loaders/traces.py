"""Load engine event logs (one file per process) into one DataFrame per event kind.

Every frame has ``time_ns`` (absolute, ns since the Unix epoch), ``node``
(the node of the process that recorded the event), ``pid``, ``op``,
``status``, ``retries``, ``bytes``, ``peer`` (the record's node field by
name: this node for storage ops, submits and rpc_server, the target for
rpc_client) and the three per-kind columns named by the header.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis import layout
from analysis.errors import DataFormatError, MissingDataError
from analysis.loaders.trace_format import MAX_TIME_NS, RECORD_SIZE, TraceHeader, read_header
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
    counts = [_count_kinds(header, allow_partial, losses) for header in headers]
    columns = _fill_columns(headers, counts, names)
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


def _count_kinds(
    header: TraceHeader, allow_partial: bool, losses: list[TraceLoss]
) -> dict[int, int]:
    kinds, loss = _scan_kinds(header, allow_partial)
    if loss is not None:
        losses.append(loss)
    per_id = np.bincount(kinds, minlength=256)
    return {kind_id: int(per_id[kind_id]) for kind_id in header.kinds}


def _fill_columns(
    headers: list[TraceHeader], counts: list[dict[int, int]], names: _NameTables
) -> dict[str, dict[str, npt.NDArray[np.generic]]]:
    totals: dict[str, int] = {}
    for header, per_kind in zip(headers, counts, strict=True):
        for kind_id, count in per_kind.items():
            name = header.kinds[kind_id].name
            totals[name] = totals.get(name, 0) + count
    columns = {
        name: _allocate(total, names.kind_columns[name]) for name, total in totals.items() if total
    }
    filled = dict.fromkeys(columns, 0)
    for header, per_kind in zip(headers, counts, strict=True):
        words = _read_words(header)  # validated in pass 1
        kinds = (words[:, 1] & 0xFF).astype(np.uint8)
        # One stable radix sort by kind, one row gather: each kind is then a
        # contiguous block (undeclared kinds, dropped with allow_partial, too).
        by_kind = words[np.argsort(kinds, kind="stable")]
        block_start = np.concatenate([[0], np.cumsum(np.bincount(kinds, minlength=256))])
        del words, kinds
        for kind_id, count in per_kind.items():
            if count == 0:
                continue
            spec = header.kinds[kind_id]
            start = filled[spec.name]
            target = {
                name: array[start : start + count] for name, array in columns[spec.name].items()
            }
            first = int(block_start[kind_id])
            _copy_block(by_kind[first : first + count], header, spec.columns, names, target)
            filled[spec.name] = start + count
        del by_kind
    return columns


# A record is six little-endian 64-bit words: t_ns, a word packing kind (bits
# 0-7), op (8-15), node (16-31), status (32-47) and retries (48-63), then
# bytes, d0, d1, d2. Reading words lets the packed fields be split with shifts.
WORDS = RECORD_SIZE // 8
KIND_BYTE = 8


def _kind_bytes(words: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    return (words[:, 1] & 0xFF).astype(np.uint8)


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
    header: TraceHeader, allow_partial: bool
) -> tuple[npt.NDArray[np.uint8], TraceLoss | None]:
    """The kind byte of every record, read through a mapping (no copy of the file);
    records of a kind the header does not define raise or are reported."""
    whole, loss = _record_count(header, allow_partial)
    if whole == 0:
        return np.zeros(0, dtype=np.uint8), loss
    mapped = np.memmap(
        header.path, dtype=np.uint8, mode="r", offset=header.data_offset,
        shape=(whole, RECORD_SIZE),
    )  # fmt: skip
    kinds = np.array(mapped[:, KIND_BYTE])
    late = np.flatnonzero(np.array(mapped[:, :8]).view("<u8").ravel() >= MAX_TIME_NS)
    del mapped
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
    return kinds, loss


def _read_words(header: TraceHeader) -> npt.NDArray[np.int64]:
    """The file's whole records as an (n, 6) int64 array."""
    whole, _ = _record_count(header, allow_partial=True)
    flat = np.fromfile(header.path, dtype="<i8", count=whole * WORDS, offset=header.data_offset)
    return flat.reshape(whole, WORDS)


_BASE_COLUMNS: dict[str, type[np.generic]] = {
    "time_ns": np.int64, "node": np.int32, "pid": np.int32, "op": np.int32,
    "status": np.int16, "retries": np.uint16, "bytes": np.int64, "peer": np.int32,
}  # fmt: skip


def _allocate(count: int, kind_columns: tuple[str, str, str]) -> dict[str, npt.NDArray[np.generic]]:
    arrays: dict[str, npt.NDArray[np.generic]] = {
        name: np.empty(count, dtype=dtype) for name, dtype in _BASE_COLUMNS.items()
    }
    for name in kind_columns:
        arrays[name] = np.empty(count, dtype=np.int64)
    return arrays


def _copy_block(
    block: npt.NDArray[np.int64],
    header: TraceHeader,
    kind_columns: tuple[str, str, str],
    names: _NameTables,
    out: dict[str, npt.NDArray[np.generic]],
) -> None:
    """Copy one file's records of one kind into the (pre-sliced) output columns."""
    time_ns = out["time_ns"]
    time_ns[:] = block[:, 0]
    np.add(time_ns, np.int64(header.start_unix_ns), out=time_ns)
    packed = block[:, 1]
    out["op"][:] = names.op_lookup(header)[(packed >> 8) & 0xFF]
    out["peer"][:] = names.node_codes_for_ids((packed >> 16) & 0xFFFF)
    out["status"][:] = ((packed >> 32) & 0xFFFF).astype(np.uint16).view(np.int16)
    out["retries"][:] = (packed >> 48) & 0xFFFF
    out["node"][:] = names.node_code[header.node]
    out["pid"][:] = header.pid
    out["bytes"][:] = block[:, 2]
    for word, name in enumerate(kind_columns, start=3):
        out[name][:] = block[:, word]


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

    def node_codes_for_ids(self, ids: npt.NDArray[np.integer]) -> npt.NDArray[np.int32]:
        """Map node ids to category codes, adding names for ids no header declared."""
        if ids.size == 0:
            return np.zeros(0, dtype=np.int32)
        present = np.flatnonzero(np.bincount(ids))  # linear, unlike np.unique's sort
        lookup = np.zeros(int(present[-1]) + 1, dtype=np.int32)
        for node_id in present.tolist():
            name = self.node_by_id.get(node_id, f"node-id-{node_id}")
            if name not in self.node_code:
                self.node_code[name] = len(self.nodes)
                self.nodes.append(name)
            lookup[node_id] = self.node_code[name]
        return np.asarray(lookup[ids], dtype=np.int32)

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
