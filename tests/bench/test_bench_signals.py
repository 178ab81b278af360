"""SIGTERM and SIGHUP in the middle of the benchmarks that start local
clusters, `benchfs bench mount`, `bench cluster`, `bench metadata` and
`bench scale` (real daemons, a real mount): every process they started
stops, the mount goes, and no scratch dir or shared-memory file stays."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from run_helpers import (
    SHM,
    manifest,
    needs_fio_and_iostat,
    needs_mdtest,
    needs_mount,
    run_dirs,
    scratch_dirs,
)
from signal_helpers import assert_stopped_cleanly, command_temp_dir, interrupt, running

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
        return running(pid, "fio")  # the fio side, between the runs

    stopped = interrupt(args, tmp_path, mid_run, signum)
    assert_stopped_cleanly(stopped, signum, tmp_path)
    assert scratch_dirs(results) == []
    assert list(disk.iterdir()) == []
    assert tokens, "no run had started"
    assert [path for t in tokens for path in SHM.glob(f"benchfs-{t}*")] == []


@pytest.mark.parametrize(
    ("signum", "moment", "items"),
    [
        (signal.SIGTERM, "registered", 1_000_000),
        (signal.SIGHUP, "phase", 1_000_000),
        pytest.param(signal.SIGTERM, "mounted", 3000, marks=needs_mount),
    ],
    ids=["SIGTERM-once-registered", "SIGHUP-in-a-phase", "SIGTERM-on-the-mount"],
)
def test_a_signal_mid_bench_metadata_stops_its_cluster_and_removes_its_files(
    tmp_path: Path, signum: int, moment: str, items: int
) -> None:
    disk, results, temp = tmp_path / "disk", tmp_path / "results", command_temp_dir(tmp_path)
    disk.mkdir()
    # Without the mount, many items keep the first side (native) going; with
    # it, few let the first side end, so that the second one mounts.
    args = ["bench", "metadata", "--dir", str(disk), "--results-dir", str(results),
            "--nodes", "1", "--kind", "files", "--items", str(items),
            "--mount" if moment == "mounted" else "--no-mount"]  # fmt: skip
    tokens: set[str] = set()

    def mid_run(pid: int) -> bool:
        scratch = scratch_dirs(results)
        tokens.update(s.name.removeprefix(".benchfs-") for s in scratch)
        if moment == "registered":  # the daemon has its record in the registry
            return any(path for s in scratch for path in s.glob("g*/registry/*.json"))
        if moment == "mounted":
            return bool(mounts_under(disk))  # in the data dir, beside the daemons' data
        return any((s / "p0" / "phase.json").is_file() for s in scratch)  # a rank at work

    stopped = interrupt(args, tmp_path, mid_run, signum, temp_dir=temp)
    assert_stopped_cleanly(stopped, signum, tmp_path)
    assert scratch_dirs(results) == []
    assert list(disk.iterdir()) == []
    assert tokens, "no run had started"
    assert [path for t in tokens for path in SHM.glob(f"benchfs-{t}*")] == []
    # Each run's record for `benchfs clean` went; this user's dir of them stays.
    records = temp / f"benchfs-{os.geteuid()}" / "runs"
    assert sorted(temp.rglob("*")) == [records.parent, records]
    # The sides' results stay, the last saying it was interrupted.
    statuses = [manifest(d)["status"] for d in run_dirs(results)]
    assert statuses == (["completed", "interrupted"] if moment == "mounted" else ["interrupted"])


@needs_mount
@needs_mdtest
def test_sigterm_mid_mdtest_in_bench_metadata_stops_it_and_unmounts(tmp_path: Path) -> None:
    disk, results = tmp_path / "disk", tmp_path / "results"
    disk.mkdir()
    args = ["bench", "metadata", "--dir", str(disk), "--results-dir", str(results),
            "--nodes", "1", "--kind", "files", "--items", "5000", "--mdtest"]  # fmt: skip
    stopped = interrupt(args, tmp_path, lambda pid: running(pid, "mdtest"), signal.SIGTERM)
    assert_stopped_cleanly(stopped, signal.SIGTERM, tmp_path)
    assert mounts_under(disk) == [] and list(disk.iterdir()) == []
    # The built-in sides' results stay; mdtest's run says it was interrupted.
    records = [manifest(d) for d in run_dirs(results)]
    assert [r["status"] for r in records] == ["completed", "completed", "interrupted"]
    assert records[-1]["tool"]["name"] == "mdtest"


@pytest.mark.parametrize(
    ("signum", "moment"),
    [(signal.SIGTERM, "registered"), (signal.SIGHUP, "starting")],
    ids=["SIGTERM-once-registered", "SIGHUP-while-starting"],
)
def test_a_signal_mid_bench_scale_stops_its_daemons_and_removes_their_files(
    tmp_path: Path, signum: int, moment: str
) -> None:
    disk, temp = tmp_path / "disk", command_temp_dir(tmp_path)
    disk.mkdir()
    sizes = [str(nodes) for nodes in range(2, 9)]
    args = ["bench", "scale", "--dir", str(disk), *(a for n in sizes for a in ("--nodes", n))]
    tokens: set[str] = set()

    def mid_run(pid: int) -> bool:
        # A size's cluster: its scratch in the command's dir, created before its daemons.
        scratch = list(disk.glob("benchfs-scale-*/.benchfs-*"))
        tokens.update(s.name.removeprefix(".benchfs-") for s in scratch)
        if moment == "registered":  # a daemon has its record in the registry, and runs
            # (a size's stopped daemons may leave their records a moment, until
            # its scratch goes, while the next size's are not started yet).
            records = any(path for s in scratch for path in s.glob("g*/registry/*.json"))
            return records and bool(descendants(pid))
        return bool(scratch) and bool(descendants(pid))

    stopped = interrupt(args, tmp_path, mid_run, signum, temp_dir=temp)
    assert_stopped_cleanly(stopped, signum, tmp_path)
    assert list(disk.iterdir()) == []
    assert list(temp.rglob("*")) == []
    assert tokens, "no cluster had started"
    assert [path for t in tokens for path in SHM.glob(f"benchfs-{t}*")] == []
