"""`benchfs_native.run_posix_phase`: the data workload's phase on a plain
directory, buffered and with O_DIRECT, and its errors naming their cause."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import benchfs_native as bn

LAYOUT: dict[str, Any] = {
    "file_name": "testfile",
    "transfer_size": 65536,
    "block_size": 65536 * 8,
    "segments": 2,
    "ranks": 2,
    "file_per_process": False,
}


def phase(directory: Path, name: str, rank: int, **extra: Any) -> dict[str, Any]:
    return dict(
        bn.run_posix_phase(directory=str(directory), phase=name, rank=rank, **LAYOUT, **extra)
    )


@pytest.mark.parametrize("direct", [False, True])
def test_shared_file_written_by_two_ranks_reads_back_verified(tmp_path: Path, direct: bool) -> None:
    for rank in (0, 1):
        try:
            written = phase(tmp_path, "write", rank, direct=direct)
        except OSError as error:
            if direct and error.errno == errno.EINVAL:
                pytest.skip(f"{tmp_path}: this file system refuses O_DIRECT")
            raise
        assert (written["ops"], written["bytes"], written["errors"]) == (16, 16 * 65536, 0)
        assert np.frombuffer(written["latency_ns"], "<u8").size == 16
        assert written["path"] == "testfile" and written["rpcs"] == 0
    # 2 segments x 2 ranks x 512 KiB, every byte written by someone.
    assert (tmp_path / "testfile").stat().st_size == 4 * 8 * 65536
    # Rank 0 reads what rank 1 wrote (IOR -C) and checks every 4 KiB stamp.
    read = phase(tmp_path, "read", 0, read_rank_shift=1, verify=True, direct=direct)
    assert (read["ops"], read["verify_errors"]) == (16, 0)
    # Data checked against another run's pattern (seed) fails the check.
    wrong = phase(tmp_path, "read", 1, read_rank_shift=1, verify=True, seed=1, direct=direct)
    assert wrong["verify_errors"] == 16


def test_errors_name_their_cause(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="testfile"):
        phase(tmp_path / "absent", "write", 0)
    with pytest.raises(ValueError, match="phase"):
        phase(tmp_path, "append", 0)
    with pytest.raises(ValueError, match="rank"):
        phase(tmp_path, "write", 2)
    with pytest.raises(TypeError, match="transfer_size must be an int"):
        bn.run_posix_phase(
            directory=str(tmp_path), phase="write", **{**LAYOUT, "transfer_size": "64k"}
        )
    with pytest.raises(TypeError, match="unexpected keyword argument 'transfer'"):
        phase(tmp_path, "write", 0, transfer=65536)
    with pytest.raises(TypeError, match=r"\bseed\b"):
        phase(tmp_path, "write", 0, seed=1.5)
