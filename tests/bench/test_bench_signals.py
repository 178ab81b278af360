"""SIGTERM and SIGHUP in the middle of `benchfs bench mount` and `benchfs
bench cluster` (real daemons, a real mount): every process they started
stops, the mount goes, and no scratch dir or shared-memory file stays."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from run_helpers import SHM, needs_fio_and_iostat, needs_mount, scratch_dirs
from signal_helpers import assert_stopped_cleanly, interrupt

from benchfs.cluster.processes import descendants
from benchfs.mount.cleanup import mounts_under


@needs_mount
@needs_fio_and_iostat
def test_sigterm_mid_bench_mount_unmounts_and_stops_everything(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    args = ["bench", "mount", "--dir", str(disk), "--seq-size", "1MiB", "--small-ops", "100",
            "--threads", "1", "--rounds", "1000"]  # fmt: skip
    # Mid-run: the daemons registered and the mount in /proc/self/mountinfo.
    stopped = interrupt(args, tmp_path, lambda _: mounts_under(disk), signal.SIGTERM)
    assert_stopped_cleanly(stopped, signal.SIGTERM, tmp_path)
    # Its registry is in that scratch dir too: no shared-memory files to name.
    assert list(disk.iterdir()) == []


def _fio_running(pid: int) -> bool:
    for child in descendants(pid):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "fio":
                return True
        except OSError:  # gone meanwhile
            continue
    return False


@needs_fio_and_iostat
@pytest.mark.parametrize(
    ("signum", "moment"),
    [(signal.SIGTERM, "run"), (signal.SIGHUP, "fio")],
    ids=["SIGTERM-in-the-run", "SIGHUP-in-fio"],
)
def test_a_signal_mid_bench_cluster_stops_everything_and_removes_its_files(
    tmp_path: Path, signum: int, moment: str
) -> None:
    disk, results = tmp_path / "disk", tmp_path / "results"
    disk.mkdir()
    args = ["bench", "cluster", "--dir", str(disk), "--results-dir", str(results),
            "--nodes", "1", "--transfer-size", "64k", "--block-size", "16m", "--no-posix",
            "--rounds", "1000"]  # fmt: skip
    tokens: set[str] = set()

    def mid_run(pid: int) -> bool:
        scratch = scratch_dirs(results)
        tokens.update(s.name.removeprefix(".benchfs-") for s in scratch)
        if moment == "run":  # the run side's daemon has its record in the registry
            return any(path for s in scratch for path in s.glob("g*/registry/*.json"))
        return _fio_running(pid)  # the fio side, between the runs

    stopped = interrupt(args, tmp_path, mid_run, signum)
    assert_stopped_cleanly(stopped, signum, tmp_path)
    assert scratch_dirs(results) == []
    assert list(disk.iterdir()) == []
    assert tokens, "no run had started"
    assert [path for t in tokens for path in SHM.glob(f"benchfs-{t}*")] == []
