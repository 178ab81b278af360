"""The engine's binary event log, version 1 (docs/TRACE_FORMAT.md).

Only the layout lives here: the magic, the fixed prefix, the record dtype and
the parsing of the self-describing JSON header. Names of kinds, ops and the
``d0..d2`` columns always come from the header, never from tables of our own.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.errors import DataFormatError

MAGIC = b"BFSTRACE"
FORMAT_VERSION = 1
PREFIX = struct.Struct("<8sII")  # magic, format version, header length
RECORD_DTYPE = np.dtype(
    [
        ("t_ns", "<u8"),
        ("kind", "u1"),
        ("op", "u1"),
        ("node", "<u2"),
        ("status", "<i2"),
        ("retries", "<u2"),
        ("bytes", "<u8"),
        ("d0", "<u8"),
        ("d1", "<u8"),
        ("d2", "<u8"),
    ]
)
RECORD_SIZE = RECORD_DTYPE.itemsize  # 48
# A header is a few hundred bytes; anything far larger is a corrupt length field.
MAX_HEADER_BYTES = 1 << 20
# Times are start_unix_ns + t_ns as int64 ns: each half below 2^62 (year 2116,
# 146 years of trace), so the sum never overflows.
MAX_TIME_NS = 1 << 62


@dataclass(frozen=True)
class KindSpec:
    """One event kind as the header names it: its name and its d0..d2 columns."""

    name: str
    d0: str
    d1: str
    d2: str

    @property
    def columns(self) -> tuple[str, str, str]:
        return (self.d0, self.d1, self.d2)


@dataclass(frozen=True)
class TraceHeader:
    """The header of one trace file (one engine process)."""

    path: Path
    node: str
    node_id: int
    pid: int
    process: str
    start_unix_ns: int
    kinds: dict[int, KindSpec]
    ops: dict[int, str]
    data_offset: int
    raw: dict[str, Any]


def read_header(path: Path) -> TraceHeader:
    """Read and validate the prefix and JSON header of ``path``."""
    with path.open("rb") as stream:
        prefix = stream.read(PREFIX.size)
        if len(prefix) < PREFIX.size:
            raise DataFormatError(path, len(prefix), "file ends inside the 16-byte prefix")
        magic, version, header_len = PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise DataFormatError(path, 0, f"bad magic {magic!r}, expected {MAGIC!r}")
        if version != FORMAT_VERSION:
            raise DataFormatError(
                path, 8, f"trace data version {version}; this reader reads {FORMAT_VERSION}"
            )
        if header_len > MAX_HEADER_BYTES:
            raise DataFormatError(path, 12, f"implausible header length {header_len}")
        text = stream.read(header_len)
    if len(text) < header_len:
        raise DataFormatError(
            path, PREFIX.size + len(text), f"file ends inside the {header_len}-byte header"
        )
    try:
        document = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        at = PREFIX.size + getattr(error, "pos", getattr(error, "start", 0))
        raise DataFormatError(path, at, f"header is not valid JSON: {error}") from error
    if not isinstance(document, dict):
        raise DataFormatError(path, PREFIX.size, "header JSON is not an object")
    return _header_from_json(path, document, PREFIX.size + header_len)


def _header_from_json(path: Path, doc: dict[str, Any], data_offset: int) -> TraceHeader:
    at = PREFIX.size
    if doc.get("version") != FORMAT_VERSION:
        raise DataFormatError(
            path, at, f"header version {doc.get('version')!r}; this reader reads {FORMAT_VERSION}"
        )
    if doc.get("record_size") != RECORD_SIZE:
        raise DataFormatError(
            path, at, f"record_size {doc.get('record_size')!r}, expected {RECORD_SIZE}"
        )
    start = doc.get("start_unix_ns")
    if isinstance(start, int) and not 0 <= start < MAX_TIME_NS:
        raise DataFormatError(
            path, at, f"start_unix_ns {start} is not a time (0 to {MAX_TIME_NS - 1})"
        )
    try:
        kinds = {
            int(key): KindSpec(str(spec["name"]), str(spec["d0"]), str(spec["d1"]), str(spec["d2"]))
            for key, spec in doc["kinds"].items()
        }
        ops = {int(key): str(name) for key, name in doc["ops"].items()}
        return TraceHeader(
            path=path,
            node=str(doc["node"]),
            node_id=int(doc["node_id"]),
            pid=int(doc["pid"]),
            process=str(doc.get("process", "")),
            start_unix_ns=int(doc["start_unix_ns"]),
            kinds=kinds,
            ops=ops,
            data_offset=data_offset,
            raw=doc,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise DataFormatError(path, at, f"header lacks or mangles a field: {error!r}") from error
