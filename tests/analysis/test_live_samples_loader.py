"""live/samples.jsonl read back: one row per line, a bad line named by its number."""

from __future__ import annotations

import json

import pytest

from analysis.errors import DataFormatError
from analysis.loaders.live import parse_live_samples

ROW = {"phase": "write", "repetition": 0, "node": "local3", "start_s": 1.0, "end_s": 2.0,
       "judged_ms": 40.5, "others_ms": 1.1, "slow": True, "storage_op_ms": 39.0}  # fmt: skip


def test_every_line_is_a_row_with_its_figures() -> None:
    text = "".join(json.dumps({**ROW, "node": n}) + "\n" for n in ("local0", "local3"))
    frame, notes = parse_live_samples(text, "samples.jsonl")
    assert list(frame["node"]) == ["local0", "local3"] and notes == []
    assert list(frame["storage_op_ms"]) == [39.0, 39.0]


def test_a_bad_line_names_its_number() -> None:
    text = json.dumps(ROW) + "\n{not json\n" + json.dumps(ROW) + "\n"
    with pytest.raises(DataFormatError, match="line 2"):
        parse_live_samples(text, "samples.jsonl")
    with pytest.raises(DataFormatError, match=r"names its phase and node \(at line 1\)"):
        parse_live_samples('{"phase": "write"}\n', "samples.jsonl")


def test_a_last_line_cut_short_is_left_out_only_when_partial_is_allowed() -> None:
    text = json.dumps(ROW) + "\n" + json.dumps(ROW)[:20]
    with pytest.raises(DataFormatError, match="line 2"):
        parse_live_samples(text, "samples.jsonl")
    frame, notes = parse_live_samples(text, "samples.jsonl", allow_partial=True)
    assert len(frame) == 1 and notes == ["samples.jsonl: line 2 was cut short; left out"]


def test_no_samples_is_an_empty_table_with_the_key_columns() -> None:
    frame, _ = parse_live_samples("", "samples.jsonl")
    assert frame.empty and {"phase", "node", "judged_ms"} <= set(frame.columns)
