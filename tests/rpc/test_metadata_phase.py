"""The engine's mdtest-style metadata phase against four real daemons,
checked against the namespace: what a create made exists with the size
written, a stat and a read see it, what a remove took is gone; a directory
per rank and one shared by all; the stonewall and its wear-out; once over
shared memory and once over tcp."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import Cluster

from analysis.loaders.traces import load_traces

pytestmark = pytest.mark.timeout(120)

RANKS = 3
ITEMS = 25
WRITE = 3901  # IO500's mdtest-hard file size


def names(c: Any, directory: str) -> list[str]:
    return [entry["name"] for entry in c.readdir(directory)]


@pytest.mark.parametrize("unique_dir", [True, False], ids=["unique-dir", "shared-dir"])
def test_every_phase_against_the_namespace(
    cluster: Cluster, unique_dir: bool, tmp_path: Path
) -> None:
    prefix = f"md-{cluster.transport}-{'u' if unique_dir else 's'}"
    common: dict[str, Any] = dict(
        prefix=prefix, items=ITEMS, ranks=RANKS, unique_dir=unique_dir, write_bytes=WRITE
    )
    progress = tmp_path / "progress.bin"
    with cluster.client(trace_dir=str(tmp_path / "traces"), name="md") as c:
        dirs = set()
        for rank in range(RANKS):
            r = c.run_metadata_phase(
                phase="create", rank=rank, progress_path=str(progress), **common
            )
            assert (r["phase"], r["ops"], r["items_reached"]) == ("create", ITEMS, ITEMS)
            assert r["bytes"] == ITEMS * WRITE and not r["stonewalled"]
            lat = np.frombuffer(r["latency_ns"], dtype="<u8")
            assert lat.size == ITEMS and int(lat.max()) == r["max_ns"]
            assert r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"]
            assert r["start_unix_ns"] < r["end_unix_ns"] and r["rpcs"] >= 2 * ITEMS
            assert np.frombuffer(progress.read_bytes(), dtype="<u8").tolist() == [
                ITEMS * WRITE,
                ITEMS,
            ]
            dirs.add(r["dir"])
        expected = {f"file.mdtest.{rank}.{i}" for rank in range(RANKS) for i in range(ITEMS)}
        if unique_dir:
            assert dirs == {f"{prefix}/tree.{rank}" for rank in range(RANKS)}
            listed = {name for d in dirs for name in names(c, d)}
        else:
            assert dirs == {f"{prefix}/tree.shared"}
            listed = set(names(c, dirs.pop()))
        assert listed == expected
        assert (
            c.stat(f"{prefix}/tree.{1 if unique_dir else 'shared'}/file.mdtest.1.7")["size"]
            == WRITE
        )
        for rank in range(RANKS):
            s = c.run_metadata_phase(phase="stat", rank=rank, **common)
            assert (s["ops"], s["bytes"]) == (ITEMS, 0)
            r = c.run_metadata_phase(phase="read", rank=rank, read_bytes=WRITE, **common)
            assert (r["ops"], r["bytes"]) == (ITEMS, ITEMS * WRITE)
        # Rank 1's files go; the others' stay.
        gone = c.run_metadata_phase(phase="remove", rank=1, **common)
        assert gone["ops"] == ITEMS
        with pytest.raises(FileNotFoundError):
            c.stat(f"{gone['dir']}/file.mdtest.1.0")
        remaining = {name for d in {f"{prefix}/tree.{r}" for r in range(RANKS)}
                     | {f"{prefix}/tree.shared"} for name in names_or_none(c, d)}  # fmt: skip
        assert remaining == {n for n in expected if not n.startswith("file.mdtest.1.")}
        # Stat of a removed file fails the phase, naming the file.
        with pytest.raises(FileNotFoundError, match=r"file\.mdtest\.1\.0"):
            c.run_metadata_phase(phase="stat", rank=1, **common)
        for rank in (0, 2):
            c.run_metadata_phase(phase="remove", rank=rank, **common)
        for d in {f"{prefix}/tree.{r}" for r in range(RANKS)} | {f"{prefix}/tree.shared"}:
            assert names_or_none(c, d) == []
        rpcs = c.counters()["rpcs"]
    client = load_traces([tmp_path / "traces"]).kind("rpc_client")
    assert len(client) == rpcs
    assert {"create", "write", "stat", "read", "unlink"} <= set(client["op"].astype(str))


def names_or_none(c: Any, directory: str) -> list[str]:
    try:
        return names(c, directory)
    except FileNotFoundError:
        return []


def test_stonewall_then_wear_out_creates_exactly_the_items(cluster: Cluster) -> None:
    common: dict[str, Any] = dict(prefix=f"mdwear-{cluster.transport}", items=100_000)
    with cluster.client() as c:
        first = c.run_metadata_phase(phase="create", stonewall_s=0.05, **common)
        reached = first["items_reached"]
        assert first["stonewalled"] and 0 < reached < 100_000, first
        assert first["ops"] == reached
        # Wear-out to a few items further, as a rank behind the furthest one does.
        target = reached + 5
        rest = c.run_metadata_phase(
            phase="create", first_item=reached, **{**common, "items": target}
        )
        assert (rest["ops"], rest["items_reached"], rest["stonewalled"]) == (5, target, False)
        directory = first["dir"]
        assert len(names(c, directory)) == target
        # The later phases operate on the items created, no more.
        stats = c.run_metadata_phase(phase="stat", **{**common, "items": target})
        assert stats["ops"] == target
        removed = c.run_metadata_phase(phase="remove", **{**common, "items": target})
        assert removed["ops"] == target
        assert names_or_none(c, directory) == []


def test_read_verification_finds_the_files_whose_bytes_changed(cluster: Cluster) -> None:
    """mdtest -X through the engine: each file holds its own item's bytes; a
    read with verify counts the files whose bytes are not theirs and goes on."""
    common: dict[str, Any] = dict(
        prefix=f"mdv-{cluster.transport}", items=ITEMS, rank=2, ranks=RANKS, unique_dir=False,
        seed=5, write_bytes=WRITE, read_bytes=WRITE,
    )  # fmt: skip
    with cluster.client() as c:
        made = c.run_metadata_phase(phase="create", **common)
        good = c.run_metadata_phase(phase="read", verify=True, **common)
        assert (good["ops"], good["verify_errors"], good["first_bad_item"]) == (ITEMS, 0, None)
        # Item 4 overwritten in its middle, item 9 given item 8's bytes.
        handle = c.open(f"{made['dir']}/file.mdtest.2.4")
        c.write(handle, 1000, b"\0" * 8)
        c.close(handle)
        eight = c.open(f"{made['dir']}/file.mdtest.2.8", 0)
        copied = c.read(eight, 0, WRITE)
        c.close(eight)
        handle = c.open(f"{made['dir']}/file.mdtest.2.9")
        c.write(handle, 0, copied)
        c.close(handle)
        bad = c.run_metadata_phase(phase="read", verify=True, **common)
        assert (bad["ops"], bad["verify_errors"], bad["first_bad_item"]) == (ITEMS, 2, 4)
        assert c.run_metadata_phase(phase="read", **common)["verify_errors"] == 0
        c.run_metadata_phase(phase="remove", **common)


def test_bad_arguments_name_themselves(cluster: Cluster) -> None:
    with cluster.client() as c:
        with pytest.raises(ValueError, match="phase"):
            c.run_metadata_phase(phase="mkdir", prefix="x", items=1)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="stonewall_s"):
            c.run_metadata_phase(phase="stat", prefix="x", items=1, stonewall_s=1.0)
        with pytest.raises(ValueError, match="rank"):
            c.run_metadata_phase(phase="create", prefix="x", items=1, rank=2, ranks=2)
        with pytest.raises(ValueError, match="prefix"):
            c.run_metadata_phase(phase="create", prefix="../x", items=1)
        with pytest.raises(ValueError, match="first_item"):
            c.run_metadata_phase(phase="create", prefix="x", items=1, first_item=2)


@pytest.mark.parametrize("unique_dir", [True, False], ids=["unique-dir", "shared-dir"])
def test_directory_phases_against_the_namespace(cluster: Cluster, unique_dir: bool) -> None:
    prefix = f"mdd-{cluster.transport}-{'u' if unique_dir else 's'}"
    common: dict[str, Any] = dict(
        kind="dir", prefix=prefix, items=ITEMS, ranks=RANKS, unique_dir=unique_dir
    )
    with cluster.client() as c:
        made = [c.run_metadata_phase(phase="create", rank=r, **common) for r in range(RANKS)]
        assert {(m["kind"], m["phase"], m["ops"], m["bytes"]) for m in made} == {
            ("dir", "create", ITEMS, 0)
        }
        dirs = {m["dir"] for m in made}
        expected = {f"dir.mdtest.{rank}.{i}" for rank in range(RANKS) for i in range(ITEMS)}
        listed = {(e["name"], e["kind"]) for d in dirs for e in c.readdir(d)}
        assert listed == {(name, "dir") for name in expected}
        for rank in range(RANKS):
            assert c.run_metadata_phase(phase="stat", rank=rank, **common)["ops"] == ITEMS
        # A directory with something in it is not removed: the phase fails, naming it.
        c.close(c.create(f"{made[1]['dir']}/dir.mdtest.1.3/inside"))
        with pytest.raises(OSError, match=r"dir\.mdtest\.1\.3"):
            c.run_metadata_phase(phase="remove", rank=1, **common)
        c.unlink(f"{made[1]['dir']}/dir.mdtest.1.3/inside")
        c.run_metadata_phase(phase="remove", rank=1, first_item=3, **common)
        for rank in (0, 2):
            assert c.run_metadata_phase(phase="remove", rank=rank, **common)["ops"] == ITEMS
        assert {name for d in dirs for name in names(c, d)} == set()
        with pytest.raises(FileNotFoundError, match=r"dir\.mdtest\.0\.0"):
            c.run_metadata_phase(phase="stat", rank=0, **common)
        with pytest.raises(ValueError, match="no directory phase"):
            c.run_metadata_phase(phase="read", rank=0, **common)
        with pytest.raises(ValueError, match="kind"):
            c.run_metadata_phase(phase="create", prefix="x", items=1, kind="dirs")  # type: ignore[arg-type]
