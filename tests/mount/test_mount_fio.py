"""fio on the mount, every byte verified (crc32c), through two I/O engines."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.core_claim

JOBS = 4


@pytest.mark.parametrize("engine", ["psync", "io_uring"])
@pytest.mark.parametrize(
    ("rw", "bs", "size"),
    [("write", "1M", "8M"), ("randwrite", "4k", "1M"), ("randwrite", "1M", "4M")],
)
def test_fio_writes_and_verifies_every_byte(
    mnt: Path, tmp_path: Path, engine: str, rw: str, bs: str, size: str
) -> None:
    fio = shutil.which("fio")
    if fio is None:
        pytest.skip("fio is not installed")
    target = mnt
    if _has_dirs(mnt):
        target = mnt / f"fio-{engine}-{rw}-{bs}"
        target.mkdir(exist_ok=True)
    out = tmp_path / "fio.json"
    argv = [
        fio,
        "--name=verify",
        f"--directory={target}",
        f"--filename_format=fio-{engine}-{rw}-{bs}.$jobnum",
        f"--ioengine={engine}",
        f"--rw={rw}",
        f"--bs={bs}",
        f"--size={size}",
        f"--numjobs={JOBS}",
        "--iodepth=4" if engine == "io_uring" else "--iodepth=1",
        "--verify=crc32c",
        "--do_verify=1",
        "--verify_fatal=1",
        "--group_reporting=0",
        "--output-format=json",
        f"--output={out}",
    ]
    # cwd: fio leaves its verify state files there.
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr + (out.read_text() if out.exists() else "")
    text = out.read_text()
    # fio puts warnings before the JSON document.
    report = json.loads(text[text.index("{") :])
    per_job = _bytes(size)
    for job in report["jobs"]:
        assert job["error"] == 0
        assert job["write"]["io_bytes"] == per_job
        # The verify pass read every written block back.
        assert job["read"]["io_bytes"] == per_job


def _bytes(size: str) -> int:
    units = {"k": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(size[:-1]) * units[size[-1]]


def _has_dirs(mnt: Path) -> bool:
    """Whether the daemons hold directories (mkdir works on the mount)."""
    probe = mnt / ".fio-probe"
    try:
        probe.mkdir()
    except FileExistsError:
        return True
    except OSError:
        return False
    probe.rmdir()
    return True
