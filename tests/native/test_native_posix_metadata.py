"""`benchfs_native.run_posix_metadata_phase`: mdtest's file phases with plain
POSIX calls on a directory, checked against the directory itself: what a
create made exists with the bytes written, a stat and a read see it, a
remove takes it; a directory per rank and one shared by all; the stonewall
and its wear-out; errors naming their path."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import benchfs_native as bn

RANKS = 3
ITEMS = 25
WRITE = 3901  # IO500's mdtest-hard file size


def phase(directory: Path, name: str, **arguments: Any) -> dict[str, Any]:
    return dict(bn.run_posix_metadata_phase(directory=str(directory), phase=name, **arguments))


@pytest.mark.parametrize("unique_dir", [True, False], ids=["unique-dir", "shared-dir"])
def test_every_phase_against_the_directory(tmp_path: Path, unique_dir: bool) -> None:
    common: dict[str, Any] = dict(
        prefix="md", items=ITEMS, ranks=RANKS, unique_dir=unique_dir, write_bytes=WRITE
    )
    progress = tmp_path / "progress.bin"
    root = tmp_path / "root"
    root.mkdir()
    dirs = set()
    for rank in range(RANKS):
        r = phase(root, "create", rank=rank, progress_path=str(progress), **common)
        assert (r["phase"], r["ops"], r["items_reached"]) == ("create", ITEMS, ITEMS)
        assert r["bytes"] == ITEMS * WRITE and not r["stonewalled"]
        lat = np.frombuffer(r["latency_ns"], dtype="<u8")
        assert lat.size == ITEMS and int(lat.max()) == r["max_ns"]
        assert r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"]
        assert r["start_unix_ns"] < r["end_unix_ns"] and (r["rpcs"], r["retries"]) == (0, 0)
        assert np.frombuffer(progress.read_bytes(), dtype="<u8").tolist() == [ITEMS * WRITE, ITEMS]
        dirs.add(r["dir"])
    expected = {f"file.mdtest.{rank}.{i}" for rank in range(RANKS) for i in range(ITEMS)}
    if unique_dir:
        assert dirs == {f"md/tree.{rank}" for rank in range(RANKS)}
    else:
        assert dirs == {"md/tree.shared"}
    files = [p for d in dirs for p in (root / d).iterdir()]
    assert {p.name for p in files} == expected
    # Nobody else's: the files and the trees are the owner's only.
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}
    assert {stat.S_IMODE((root / d).stat().st_mode) for d in dirs} == {0o700}
    # Each file its item's own bytes (the rank's pattern), all of them written.
    contents = [p.read_bytes() for p in files]
    assert {len(c) for c in contents} == {WRITE} and len(set(contents)) == len(files)
    for rank in range(RANKS):
        s = phase(root, "stat", rank=rank, **common)
        assert (s["ops"], s["bytes"]) == (ITEMS, 0)
        r = phase(root, "read", rank=rank, read_bytes=WRITE, **common)
        assert (r["ops"], r["bytes"]) == (ITEMS, ITEMS * WRITE)
        gone = phase(root, "remove", rank=rank, **common)
        assert gone["ops"] == ITEMS
    assert [p for d in dirs for p in (root / d).iterdir()] == []


def test_stonewall_then_wear_out_reaches_every_item(tmp_path: Path) -> None:
    # Far more items than 50 ms can create: the stonewall stops the phase.
    common: dict[str, Any] = dict(prefix="sw", items=10_000_000)
    first = phase(tmp_path, "create", stonewall_s=0.05, **common)
    reached = first["items_reached"]
    assert first["stonewalled"] and 0 < first["ops"] == reached < 10_000_000
    # The wear-out goes on from there to a common target, without a stonewall.
    target = reached + 7
    rest = phase(tmp_path, "create", **{**common, "items": target, "first_item": reached})
    assert (rest["ops"], rest["items_reached"], rest["stonewalled"]) == (7, target, False)
    assert len(list((tmp_path / "sw/tree.0").iterdir())) == target
    assert phase(tmp_path, "stat", **{**common, "items": target})["ops"] == target
    assert phase(tmp_path, "remove", **{**common, "items": target})["ops"] == target
    assert list((tmp_path / "sw/tree.0").iterdir()) == []


def test_errors_name_their_path_or_argument(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"md/tree\.0/file\.mdtest\.0\.0"):
        phase(tmp_path, "stat", prefix="md", items=1)
    phase(tmp_path, "create", prefix="md", items=1)
    with pytest.raises(FileExistsError, match=r"file\.mdtest\.0\.0"):
        phase(tmp_path, "create", prefix="md", items=1)
    with pytest.raises(ValueError, match="phase"):
        phase(tmp_path, "mkdir", prefix="md", items=1)
    with pytest.raises(ValueError, match="stonewall_s"):
        phase(tmp_path, "stat", prefix="md", items=1, stonewall_s=1.0)
    with pytest.raises(ValueError, match="rank"):
        phase(tmp_path, "create", prefix="md", items=1, rank=2, ranks=2)
    with pytest.raises(ValueError, match="prefix"):
        phase(tmp_path, "create", prefix="../md", items=1)


def test_arguments_cross_as_one_dict_and_a_bad_one_is_named(tmp_path: Path) -> None:
    """The keyword arguments reach the engine as one dict: a key omitted
    takes its default, and an unknown, missing or mistyped key is a Python
    error naming it, as for a signature that lists them."""
    made = phase(tmp_path, "create", prefix="md", items=2)
    assert (made["kind"], made["dir"]) == ("file", "md/tree.0")
    with pytest.raises(TypeError, match="unexpected keyword argument 'itemz'"):
        phase(tmp_path, "stat", prefix="md", itemz=2)
    with pytest.raises(TypeError, match="missing required keyword argument: 'items'"):
        phase(tmp_path, "stat", prefix="md")
    with pytest.raises(TypeError, match=r"run_posix_metadata_phase\(\).*\bitems\b"):
        phase(tmp_path, "stat", prefix="md", items="2")
    with pytest.raises(TypeError, match=r"\bkind\b"):
        phase(tmp_path, "stat", prefix="md", items=2, kind=3)
    with pytest.raises(ValueError, match="kind"):
        phase(tmp_path, "stat", prefix="md", items=2, kind="files")
    with pytest.raises(OverflowError, match=r"\brank\b"):
        phase(tmp_path, "stat", prefix="md", items=2, rank=-1)
    assert phase(tmp_path, "remove", prefix="md", items=2, progress_path=None)["ops"] == 2


def test_read_verification_finds_the_file_whose_bytes_changed(tmp_path: Path) -> None:
    """mdtest -X: every file holds its own item's bytes; a read with verify
    counts the files whose bytes are not theirs and goes on."""
    common: dict[str, Any] = dict(
        prefix="mdv", items=ITEMS, rank=1, ranks=2, unique_dir=False, seed=77,
        write_bytes=WRITE, read_bytes=WRITE,
    )  # fmt: skip
    phase(tmp_path, "create", **common)
    good = phase(tmp_path, "read", verify=True, **common)
    assert (good["ops"], good["verify_errors"], good["first_bad_item"]) == (ITEMS, 0, None)
    files = tmp_path / "mdv" / "tree.shared"
    # One byte flipped in item 7; item 12 given item 11's bytes; item 20 cut short.
    with (files / "file.mdtest.1.7").open("r+b") as handle:
        handle.seek(2000)
        flipped = bytes([handle.read(1)[0] ^ 1])
        handle.seek(2000)
        handle.write(flipped)
    (files / "file.mdtest.1.12").write_bytes((files / "file.mdtest.1.11").read_bytes())
    with (files / "file.mdtest.1.20").open("r+b") as handle:
        handle.truncate(WRITE - 1)
    bad = phase(tmp_path, "read", verify=True, **common)
    assert (bad["ops"], bad["verify_errors"], bad["first_bad_item"]) == (ITEMS, 3, 7)
    # Without verify the same read counts nothing; another seed is all wrong.
    assert phase(tmp_path, "read", **common)["verify_errors"] == 0
    assert phase(tmp_path, "read", verify=True, **{**common, "seed": 78})["verify_errors"] == ITEMS


@pytest.mark.parametrize("unique_dir", [True, False], ids=["unique-dir", "shared-dir"])
def test_directory_phases_against_the_directory(tmp_path: Path, unique_dir: bool) -> None:
    common: dict[str, Any] = dict(
        kind="dir", prefix="md", items=ITEMS, ranks=RANKS, unique_dir=unique_dir
    )
    made = [phase(tmp_path, "create", rank=rank, **common) for rank in range(RANKS)]
    assert {(m["kind"], m["ops"], m["bytes"]) for m in made} == {("dir", ITEMS, 0)}
    entries = [p for d in {m["dir"] for m in made} for p in (tmp_path / d).iterdir()]
    expected = {f"dir.mdtest.{rank}.{i}" for rank in range(RANKS) for i in range(ITEMS)}
    assert {p.name for p in entries} == expected and all(p.is_dir() for p in entries)
    assert {stat.S_IMODE(p.stat().st_mode) for p in entries} == {0o700}
    for rank in range(RANKS):
        assert phase(tmp_path, "stat", rank=rank, **common)["ops"] == ITEMS
    (tmp_path / made[2]["dir"] / "dir.mdtest.2.4" / "inside").touch()
    with pytest.raises(OSError, match=r"dir\.mdtest\.2\.4"):
        phase(tmp_path, "remove", rank=2, **common)
    (tmp_path / made[2]["dir"] / "dir.mdtest.2.4" / "inside").unlink()
    phase(tmp_path, "remove", rank=2, first_item=4, **common)
    for rank in (0, 1):
        assert phase(tmp_path, "remove", rank=rank, **common)["ops"] == ITEMS
    assert [p for d in {m["dir"] for m in made} for p in (tmp_path / d).iterdir()] == []
    with pytest.raises(ValueError, match="no directory phase"):
        phase(tmp_path, "read", prefix="md", items=1, kind="dir")
    with pytest.raises(ValueError, match="kind"):
        phase(tmp_path, "create", prefix="md", items=1, kind="dirs")
