"""Thresholds from TOML: overrides, unknown keys and bad values are errors naming them."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchfs.errors import ConfigError
from benchfs.health.thresholds import Thresholds, load_thresholds, threshold_keys


def test_defaults_without_a_file() -> None:
    assert load_thresholds(None) == Thresholds()
    assert "seq_read_min_MiB_s" in threshold_keys()


@pytest.mark.parametrize("table", ["", "[thresholds]\n"])
def test_overrides_flat_or_in_a_table(tmp_path: Path, table: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(f"{table}seq_read_min_MiB_s = 500\nmin_nodes = 3\n")
    loaded = load_thresholds(path)
    assert loaded.seq_read_min_MiB_s == 500.0
    assert loaded.min_nodes == 3 and isinstance(loaded.min_nodes, int)
    assert loaded.seq_write_min_MiB_s == Thresholds().seq_write_min_MiB_s


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("seq_read_min = 5\n", "unknown threshold key 'seq_read_min'"),
        ("seq_read_min_MiB_s = 'fast'\n", "threshold 'seq_read_min_MiB_s' must be a number"),
        ("outlier_z = -1\n", "'outlier_z' must not be negative"),
        ("[thresholds]\noutlier_z = 3\n[other]\nx = 1\n", "unknown key 'other'"),
        ("outlier_z = \n", "invalid TOML"),
    ],
)
def test_bad_files_name_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_thresholds(path)
    assert str(caught.value).startswith(str(path))
    assert expected in str(caught.value)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read thresholds file"):
        load_thresholds(tmp_path / "none.toml")


def test_docs_list_every_threshold_with_its_default() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "DIAGNOSE.md").read_text()
    for key, value in Thresholds().to_dict().items():
        assert f"| `{key}` | {value:g} |" in docs, key
