"""Live progress: the engine's 16-byte records summed over ranks, the phase
file rank 0 writes, and tolerance of files that are absent or half written."""

from __future__ import annotations

import struct
from pathlib import Path

from benchfs.config import RunConfig
from benchfs.workload.progress import (
    PhaseStatus,
    current_progress,
    read_record,
    read_status,
    write_status,
)
from benchfs.workload.spec import workload_spec

MiB = 1 << 20
S = 1_000_000_000


def test_records_and_status(tmp_path: Path) -> None:
    spec = workload_spec(
        RunConfig(), hosts=["a", "b"], node_names=["a", "b"], registry_dir=tmp_path / "r",
        workload_dir=tmp_path / "w", state_dir=tmp_path / "s", trace_dir=None,
    )  # fmt: skip
    assert current_progress(spec) is None
    spec.phase_file.parent.mkdir(parents=True)
    write_status(spec.phase_file, PhaseStatus(0, "write", "running", 10 * S, 32 * MiB))
    assert read_status(spec.phase_file) == PhaseStatus(0, "write", "running", 10 * S, 32 * MiB)
    assert current_progress(spec, now_unix_ns=12 * S).bytes == 0  # type: ignore[union-attr]

    directory = spec.progress_dir(0, "write")
    directory.mkdir(parents=True)
    spec.progress_path(0, "write", 0).write_bytes(struct.pack("<QQ", 8 * MiB, 8))
    spec.progress_path(0, "write", 1).write_bytes(struct.pack("<QQ", 2 * MiB, 2))
    spec.progress_path(0, "write", 1, wearout=True).write_bytes(struct.pack("<QQ", 2 * MiB, 2))
    (directory / "rank9").write_bytes(b"\x01\x02")  # half written: skipped
    progress = current_progress(spec, now_unix_ns=12 * S)
    assert progress is not None
    assert (progress.bytes, progress.ops, progress.elapsed_s) == (12 * MiB, 12, 2.0)
    assert progress.bw_mib_s == 6.0
    assert read_record(directory / "rank9") is None
    assert read_record(directory / "absent") is None


def test_a_damaged_phase_file_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "phase.json"
    path.write_text('{"repetition": 0, "phase": "wr')
    assert read_status(path) is None


def test_a_metadata_phase_counts_files(tmp_path: Path) -> None:
    config = RunConfig.model_validate({"metadata": {"mode": "with-data", "items": 50,
                                                    "write_bytes": 10}})  # fmt: skip
    spec = workload_spec(
        config, hosts=["a", "b"], node_names=["a", "b"], registry_dir=tmp_path / "r",
        workload_dir=tmp_path / "w", state_dir=tmp_path / "s", trace_dir=None,
    )  # fmt: skip
    assert (spec.expected_items("File creation"), spec.expected_bytes("File creation")) == (
        100, 1000,
    )  # fmt: skip
    assert (spec.expected_items("File stat"), spec.expected_bytes("File stat")) == (100, 0)
    # A directory holds no bytes: only the items count.
    mkdir = "Directory creation"
    assert (spec.expected_items(mkdir), spec.expected_bytes(mkdir)) == (100, 0)
    assert spec.expected_items("write") == 0
    spec.phase_file.parent.mkdir(parents=True)
    status = PhaseStatus(0, "File stat", "running", 10 * S, 0, 100)
    write_status(spec.phase_file, status)
    assert read_status(spec.phase_file) == status
    spec.progress_path(0, "File stat", 1).parent.mkdir(parents=True)
    spec.progress_path(0, "File stat", 1).write_bytes(struct.pack("<QQ", 0, 30))
    progress = current_progress(spec, now_unix_ns=12 * S)
    assert progress is not None and (progress.ops, progress.ops_per_s) == (30, 15.0)
