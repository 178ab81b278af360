"""JSON-lines files read through one reader: every object, and a bad line named
by its file and number."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.errors import DataFormatError
from analysis.jsonlines import json_object_lines, read_json_lines


def test_every_object_is_read_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "ranks.jsonl"
    path.write_text('{"rank": 0}\n\n{"rank": 1, "phase": "write"}\n')
    assert read_json_lines(path) == [{"rank": 0}, {"rank": 1, "phase": "write"}]


def test_a_bad_line_is_named_by_its_file_and_number(tmp_path: Path) -> None:
    path = tmp_path / "connects.jsonl"
    path.write_text('{"rank": 0}\n{"rank": \n')
    with pytest.raises(DataFormatError, match=r"connects\.jsonl: .* \(at line 2\)$"):
        read_json_lines(path)
    path.write_text('{"rank": 0}\n\n[1, 2]\n')
    with pytest.raises(DataFormatError, match=r"expected a JSON object \(at line 3\)$"):
        read_json_lines(path)


def test_a_last_line_cut_short_is_left_out_with_a_note_only_when_allowed() -> None:
    notes: list[str] = []
    text = '{"a": 1}\n{"a": 2'
    assert json_object_lines(text, "live", allow_partial=True, notes=notes) == [(1, {"a": 1})]
    assert notes == ["live: line 2 was cut short; left out"]
    with pytest.raises(DataFormatError, match="at line 2"):
        json_object_lines(text, "live")
