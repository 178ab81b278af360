"""`workload.target = "posix:PATH"` for real: no daemons, the same workload
from the same 4 MPI ranks with pwrite/pread on a temporary directory, the
files checked on disk, the preflight and iostat still run, the file system
recorded per host; and `benchfs compare` between a BenchFS run and a posix
run of the same workload."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from run_helpers import (
    benchfs_run,
    environment,
    manifest,
    needs_fio_and_iostat,
    run_dirs,
    small_args,
    summary,
)

from benchfs.tools.fsinfo import inspect_directory

MIB = 1 << 20
PATTERN_MAGIC = 0x4246_5350  # "BFSP": the writer's stamp in every 4 KiB block
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def posix_args(tmp_path: Path, target: Path, *extra: str) -> list[str]:
    return small_args(tmp_path, "--set", f"workload.target=posix:{target}", "--verify", *extra)


@needs_fio_and_iostat
def test_posix_target_writes_and_reads_real_files(tmp_path: Path) -> None:
    target = tmp_path / "fs"
    target.mkdir()
    args = posix_args(
        tmp_path, target,
        "--set", "workload.keep_files=true",
        "--set", "preflight.enabled=true",
        "--set", "preflight.runtime_s=2",
    )  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    assert "daemons" not in done.stderr  # none started, none stopped
    (run_dir,) = run_dirs(tmp_path / "results")
    document = summary(run_dir)
    assert document["parameters"]["target"] == f"posix:{target}"
    for phase in document["phases"]:
        assert (phase["bytes"], phase["ops"], phase["errors"]) == (4 * MIB, 64, 0)
    assert document["phases"][1]["verify_errors"] == 0
    assert np.load(run_dir / "workload" / "latency-write-0.npy").size == 64
    # The files, on disk: one per rank, 1 MiB, nobody else's to read, each
    # block stamped with its offset and the writer's rank.
    (kept,) = target.iterdir()  # the preflight's node directories are gone
    assert kept.name.startswith("benchfs-") and stat.S_IMODE(kept.stat().st_mode) == 0o700
    files = sorted(kept.iterdir())
    assert [path.name for path in files] == [f"testfile.{rank:08}" for rank in range(4)]
    for rank, path in enumerate(files):
        assert path.stat().st_size == MIB
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        data = path.read_bytes()
        for offset in (0, 512 * 1024, MIB - 4096):
            stamp = data[offset : offset + 16]
            assert int.from_bytes(stamp[:8], "little") == ~offset & (2**64 - 1)
            assert int.from_bytes(stamp[8:], "little") == (PATTERN_MAGIC << 32) | rank
    record = manifest(run_dir)
    assert record["daemons"] == []
    expected = inspect_directory(target)
    systems = record["target"]["file_systems"]
    assert sorted(systems) == ["local0", "local1", "local2", "local3"]
    for found in systems.values():
        assert (found["fs_type"], found["mount_point"]) == (expected.fs_type, expected.mount_point)
    assert record["preflight"]["status"] == "run"
    assert record["preflight"]["directory"] == str(target)
    assert sorted(path.name for path in (run_dir / "iostat").iterdir()) == [
        f"local{i}.json" for i in range(4)
    ]


def test_compare_a_benchfs_run_with_a_posix_run(tmp_path: Path) -> None:
    target = tmp_path / "fs"
    target.mkdir()
    assert benchfs_run(small_args(tmp_path, "--label", "engine")).returncode == 0
    done = benchfs_run(posix_args(tmp_path, target, "--label", "posix"))
    assert done.returncode == 0, done.stderr
    assert list(target.iterdir()) == []  # the ranks removed their directory
    engine, posix = sorted(run_dirs(tmp_path / "results"), key=lambda p: p.name.endswith("posix"))
    assert summary(engine)["parameters"]["target"] == "benchfs"
    compared = subprocess.run(
        [sys.executable, "-m", "benchfs", "compare", str(engine), str(posix), "--json"],
        capture_output=True, text=True, env=environment(), timeout=120,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    document = json.loads(compared.stdout)
    rows = {(row["phase"], row["metric"]): row for row in document["metrics"]}
    for phase in ("write", "read"):
        row = rows[(phase, "bwMeanMIB")]
        assert row["A"] == pytest.approx(summary(engine)["phases"][phase == "read"]["bwMeanMIB"])
        assert row["B"] == pytest.approx(summary(posix)["phases"][phase == "read"]["bwMeanMIB"])
