"""The manifest: contents per the results contract, round trip, version checks."""

from __future__ import annotations

import json
import sys
import types
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

import benchfs_native
from analysis.manifest import NativeBuild, NativeUnavailable
from benchfs import __version__
from benchfs.cluster.hostfile import Host
from benchfs.config import RunConfig, effective_config
from benchfs.errors import BenchfsError
from benchfs.results import (
    DATA_VERSION,
    ExcludedHost,
    RanksRecord,
    SweepRecord,
    create_run_dir,
    finish_manifest,
    load_manifest,
    native_build_info,
    new_manifest,
    write_manifest,
)

START = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
END = datetime(2026, 1, 2, 3, 9, 5, tzinfo=UTC)
ENV = {
    "UCX_TLS": "tcp",
    "OMPI_MCA_btl": "self,tcp",
    "BENCHFS_TRACE": "1",
    "SLURM_JOB_ID": "42",
    "HOME": "/root",
    "SLURM_CPUS_ON_NODE": "8",
}


def test_manifest_round_trip(tmp_path: Path) -> None:
    run_dir = create_run_dir(tmp_path, "demo", now=START)
    given = [Host("n1", 2), Host("n2", 2), Host("n3", 2)]
    slow = ExcludedHost(name="n3", reason="read latency", evidence={"r_await_ms": 2100.0})
    manifest = new_manifest(
        label="demo",
        command_line=["benchfs", "run", "--nodes", "hosts"],
        effective_config=effective_config(RunConfig()),
        hosts_given=given,
        hosts_used=given[:2],
        excluded=[slow],
        sweep=SweepRecord(index=1, count=3, values={"workload.transfer_size": "1m"}),
        env=ENV,
        now=START,
    )
    assert manifest.status == "running"
    assert manifest.environment == {
        "BENCHFS_TRACE": "1",
        "OMPI_MCA_btl": "self,tcp",
        "SLURM_JOB_ID": "42",
        "UCX_TLS": "tcp",
    }
    write_manifest(run_dir, manifest)
    assert load_manifest(run_dir) == manifest

    ranks = RanksRecord(launcher="mpirun", per_host={"n1": 2, "n2": 2}, total=4)
    done = finish_manifest(manifest.model_copy(update={"ranks": ranks}), "completed", now=END)
    write_manifest(run_dir, done)
    loaded = load_manifest(run_dir / "manifest.json")
    assert loaded.status == "completed"
    assert loaded.end_time == END
    assert loaded.ranks == ranks
    assert [p.name for p in run_dir.iterdir()] == ["manifest.json"]

    raw = json.loads((run_dir / "manifest.json").read_text())
    assert raw["data_version"] == DATA_VERSION
    assert raw["package"] == {"name": "benchfs", "version": __version__}
    assert raw["effective_config"]["workload"]["transfer_size"] == 1 << 20
    assert raw["hosts"]["excluded"] == [
        {"name": "n3", "reason": "read latency", "evidence": {"r_await_ms": 2100.0}}
    ]
    assert raw["hosts"]["used"] == [{"name": "n1", "slots": 2}, {"name": "n2", "slots": 2}]
    assert raw["start_time"] == "2026-01-02T03:04:05Z"
    assert "available" in raw["native"]


def test_native_build_info_absent_or_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "benchfs_native", None)  # import fails as if absent
    absent = native_build_info()
    assert isinstance(absent, NativeUnavailable)
    assert absent.reason.startswith("ModuleNotFoundError: ")

    engine = types.ModuleType("benchfs_native")
    engine.build_info = lambda: {"profile": "release", "git_revision": "abc123"}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benchfs_native", engine)
    # A build that reports less than the record holds is recorded as unreadable.
    partial = native_build_info()
    assert isinstance(partial, NativeUnavailable)
    assert partial.reason.startswith("ValidationError: "), partial.reason


def test_the_native_record_holds_what_the_engine_reports() -> None:
    info = benchfs_native.build_info()
    built = native_build_info()
    assert isinstance(built, NativeBuild)
    assert built.model_dump(exclude={"available"}) == info


def test_rank_totals_must_add_up() -> None:
    with pytest.raises(ValidationError, match="total 5 != sum of per_host 4"):
        RanksRecord(launcher="local", per_host={"a": 4}, total=5)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{", "manifest is not valid JSON"),
        ('{"label": "x"}', "not a BenchFS manifest (no data_version)"),
        ('{"data_version": 99}', "data_version 99 written by a newer benchfs; upgrade"),
        ('{"data_version": 0}', "data_version 0 unsupported"),
        ('{"data_version": 1, "label": "x"}', "command_line: Field required"),
    ],
)
def test_load_rejects_bad_manifests(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(content)
    with pytest.raises(BenchfsError) as error:
        load_manifest(path)
    assert str(error.value).startswith(f"{path}: ")
    assert reason in str(error.value)
    with pytest.raises(BenchfsError, match="cannot read manifest"):
        load_manifest(tmp_path / "elsewhere")
