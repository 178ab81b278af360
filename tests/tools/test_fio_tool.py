"""run_fio against real fio: exact command lines, figures, and every way it can fail."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchfs.errors import ToolError
from benchfs.tools.fio import FioJob, fio_command, run_fio

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def test_command_line_is_exact(tmp_path: Path) -> None:
    jobs = [
        FioJob("w", "write", "1M", 4, "8M", runtime_s=1.5),
        FioJob("m", "randrw", "4k", 8, 1 << 20, numjobs=2, rwmixread=70, fsync=1, direct=False,
               ioengine="psync", extra={"filename": "x.dat"}),
    ]  # fmt: skip
    argv = fio_command(jobs, tmp_path, bw_log_dir=tmp_path / "logs", bw_log_ms=250)
    assert argv == [
        "fio", "--output-format=json", "--group_reporting", f"--directory={tmp_path}",
        "--name=w", "--rw=write", "--bs=1M", "--iodepth=4", "--size=8M", "--numjobs=1",
        "--direct=1", "--ioengine=io_uring", "--nrfiles=1", "--unlink=1",
        "--runtime=1500ms", "--time_based",
        f"--write_bw_log={tmp_path / 'logs' / 'w'}", "--log_avg_msec=250",
        "--name=m", "--rw=randrw", "--bs=4k", "--iodepth=8", "--size=1048576", "--numjobs=2",
        "--direct=0", "--ioengine=psync", "--nrfiles=1", "--unlink=1", "--fsync=1",
        "--rwmixread=70", "--filename=x.dat", "--stonewall", "--new_group",
        f"--write_bw_log={tmp_path / 'logs' / 'm'}", "--log_avg_msec=250",
    ]  # fmt: skip
    with pytest.raises(ToolError, match="job names must be unique"):
        fio_command([jobs[0], jobs[0]], tmp_path)


def test_jobs_run_in_order_with_one_result_each(tmp_path: Path) -> None:
    raw = tmp_path / "out" / "fio.json"
    jobs = [
        # Rate-limited to 4 MiB/s per process: at least 2 s however fast the disk, so the 200 ms
        # bandwidth log has several intervals.
        FioJob("seqw", "write", "256k", 4, "8M", numjobs=2, extra={"rate": "4m"}),
        FioJob("randr", "randread", "4k", 8, "8M", runtime_s=1),
    ]
    report = run_fio(jobs, tmp_path, timeout_s=60, raw_output=raw, bw_log_ms=200)
    assert [job.name for job in report.jobs] == ["seqw", "randr"]
    seqw, randr = report.jobs
    assert seqw.write.active and not seqw.read.active
    assert randr.read.active and not randr.write.active
    assert randr.read.io_bytes == randr.read.total_ios * 4096
    # Two processes' bandwidth logs merged into one series per interval.
    assert len(seqw.write.bw_samples) >= 3
    assert sum(seqw.write.bw_samples) > 0
    assert raw.read_text().lstrip().startswith("{")
    assert sorted(p.name for p in (tmp_path / "out" / "fio_bwlogs").iterdir())
    # unlink=True: fio removed its data files.
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_missing_directory_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ToolError, match=re.escape(f"fio cannot run in {missing}: not an")):
        run_fio([FioJob("a", "read", "4k", 1, "1M")], missing, timeout_s=10)


def test_absent_fio_is_named(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"fio not found .* not on PATH"):
        run_fio([FioJob("a", "read", "4k", 1, "1M")], tmp_path, timeout_s=10,
                fio_binary="fio-not-installed-here")  # fmt: skip


def test_fio_failure_names_directory_and_fio_message(tmp_path: Path) -> None:
    bad = FioJob("a", "read", "4k", 1, "1M", extra={"no_such_option": "1"})
    with pytest.raises(ToolError) as caught:
        run_fio([bad], tmp_path, timeout_s=30)
    message = str(caught.value)
    assert f"fio failed in {tmp_path} with exit code 1" in message
    assert "no_such_option" in message


def test_full_disk_is_a_job_error(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)], check=True)
    try:
        job = FioJob("fill", "write", "64k", 1, "8M", direct=False, ioengine="psync")
        with pytest.raises(ToolError, match=re.escape(f"fio failed in {small}")):
            run_fio([job], small, timeout_s=30)
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


def test_timeout_kills_fio_and_says_so(tmp_path: Path) -> None:
    job = FioJob("long", "randread", "4k", 1, "4M", runtime_s=30, ioengine="psync")
    with pytest.raises(ToolError, match=re.escape(f"fio in {tmp_path} did not finish within 1 s")):
        run_fio([job], tmp_path, timeout_s=1)
    assert shutil.which("pgrep") is None or not _fio_running_in(tmp_path)


def _fio_running_in(directory: Path) -> bool:
    found = subprocess.run(["pgrep", "-f", f"--directory={directory}"], capture_output=True)
    return found.returncode == 0
