"""Whatever records are written in the trace format come back field for field."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.loaders.trace_format import MAX_TIME_NS
from analysis.loaders.traces import load_traces
from analysis.synthetic import KINDS, OPS, empty_records, trace_header, write_trace

U64 = st.integers(0, 2**62)
# A record's time after the start; the loader refuses 2**62 ns and beyond.
TIME = st.integers(0, MAX_TIME_NS - 1)
RECORD = st.tuples(
    TIME, st.sampled_from([1, 2, 3, 4]), st.integers(0, 13), st.integers(0, 3),
    st.integers(-32768, 32767), st.integers(0, 65535), U64, U64, U64, U64,
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.lists(RECORD, min_size=1, max_size=50))
def test_roundtrip(rows: list[tuple[int, ...]]) -> None:
    records = empty_records(len(rows))
    for index, row in enumerate(rows):
        records[index] = row
    with tempfile.TemporaryDirectory() as directory:
        path = write_trace(Path(directory) / "t.bftrace", trace_header("n0", 0, 9, 1000), records)
        traces = load_traces([path])
    for kind_id, spec in KINDS.items():
        expected = records[records["kind"] == int(kind_id)]
        if len(expected) == 0:
            assert spec["name"] not in traces.events
            continue
        frame = traces.events[spec["name"]]
        assert frame["time_ns"].tolist() == (expected["t_ns"].astype(np.int64) + 1000).tolist()
        assert frame["status"].tolist() == expected["status"].tolist()
        assert frame["retries"].tolist() == expected["retries"].tolist()
        assert frame["bytes"].tolist() == expected["bytes"].astype(np.int64).tolist()
        for column in ("d0", "d1", "d2"):
            assert frame[spec[column]].tolist() == expected[column].astype(np.int64).tolist()
        ops = [OPS.get(str(code), "none") for code in expected["op"]]
        assert frame["op"].astype(str).tolist() == ops
        peers = ["n0" if node == 0 else f"node-id-{node}" for node in expected["node"]]
        assert frame["peer"].astype(str).tolist() == peers
