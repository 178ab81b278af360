"""`benchfs run --interface mount` for real: 4 daemons, every node's FUSE
mount, the ranks' I/O through it under mpirun, fio as a tool on it; and
on every way out (success, Ctrl-C, a killed orchestrator) no mount, no
process and no file of the run is left."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cluster.proc_helpers import alive
from run_helpers import (
    IOR_SEARCH,
    assert_nothing_left,
    benchfs_run,
    environment,
    manifest,
    needs_mount,
    run_dirs,
    running_phase,
    small_args,
    small_ior_and_mdtest,
    summary,
    wait_for,
)

from benchfs.config.model import Deadlines
from benchfs.mount.cleanup import mounts_under

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
HOSTS = ["local0", "local1", "local2", "local3"]


def mount_args(tmp_path: Path, *extra: str) -> list[str]:
    return small_args(tmp_path, "--interface", "mount", *extra)


def no_mount_under(path: Path) -> bool:
    return mounts_under(path) == []


def token_of(run_dir: Path) -> str:
    root = Path(manifest(run_dir)["mount"]["root"]).name  # benchfs-<token>-mnt-p0
    return root.removeprefix("benchfs-").removesuffix("-mnt-p0")


def test_the_mount_with_a_posix_target_is_one_line_naming_the_key(tmp_path: Path) -> None:
    done = benchfs_run(
        mount_args(tmp_path, "--set", f"workload.target=posix:{tmp_path}"), timeout=60
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: --set ") and "workload.interface" in line, line
    assert 'interface = "mount" mounts BenchFS: it needs target = "benchfs"' in line
    assert not (tmp_path / "results").exists()


@needs_mount
def test_a_run_through_the_mount_verifies_its_data_and_leaves_nothing(tmp_path: Path) -> None:
    # With the session spin on: the data verified through it, the setting recorded.
    done = benchfs_run(
        mount_args(tmp_path, "--verify", "--api", "shared", "--set", "mount.session_spin_us=50")
    )
    assert done.returncode == 0, done.stderr
    assert "mounting BenchFS on 4 nodes" in done.stderr
    assert "Data phases on BenchFS through the mount" in done.stdout, done.stdout
    (run_dir,) = run_dirs(tmp_path / "results")
    document = summary(run_dir)
    assert document["parameters"]["interface"] == "mount"
    assert document["parameters"]["API"] == "POSIX"
    assert document["errors"] == 0 and document["verify_errors"] == 0
    phases = {row["phase"]: row for row in document["phases"]}
    assert list(phases) == ["write", "read"]
    for row in phases.values():
        assert (row["interface"], row["target"], row["bytes"]) == ("mount", "benchfs", 4 << 20)
    record = manifest(run_dir)
    assert record["status"] == "completed" and record["interface"] == "mount"
    mount = record["mount"]
    # The connect deadline is the registration's, grown per daemon.
    connect_s = Deadlines().grown(60.0, len(HOSTS))
    assert mount["options"] == {
        "threads": 4, "attr_timeout_s": 0.0, "entry_timeout_s": 0.0, "rpc_deadline_s": 30.0,
        "connect_deadline_s": connect_s, "session_spin_us": 50, "read_only": False,
        "allow_other": False,
    }  # fmt: skip
    assert connect_s > 60.0
    assert sorted(mount["nodes"]) == HOSTS
    for node, found in mount["nodes"].items():
        assert found["mount_point"] == f"{mount['root']}/{node}"
        assert found["fs_type"] == "fuse.benchfs", found
    # The ranks found the mount behind their directory on every host.
    for fs in mount["file_systems"].values():
        assert fs["fs_type"].startswith("fuse"), fs
    assert sorted(p.name for p in (run_dir / "logs" / "mounts").iterdir()) == [
        f"{node}.log" for node in HOSTS
    ]
    report = (run_dir / "report.md").read_text()
    assert "interface" in report and "mount" in report  # the report's phase table says so too
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, token_of(run_dir))


def _mount_pids(run: object) -> list[int]:
    pids: list[int] = run.pids("mounts-p0/*.json")  # type: ignore[attr-defined]
    return pids


@needs_mount
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_in_the_middle_unmounts_and_leaves_nothing(tmp_path: Path, signum: int) -> None:
    args = mount_args(tmp_path, "--repetitions", "100000", "--transfer-size", "4k")
    with running_phase(tmp_path, args) as run:
        mounts = _mount_pids(run)
        ranks = run.pids("p0/ranks/*.json")
        assert len(mounts) == 4 and len(ranks) == 4
        assert len(mounts_under(tmp_path)) == 4
        os.kill(run.process.pid, signum)
        code, output = run.finish()
    assert code == 128 + signum, output
    (run_dir,) = run_dirs(tmp_path / "results")
    assert manifest(run_dir)["status"] == "interrupted"
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, run.token, mounts + ranks)


@needs_mount
def test_a_killed_orchestrator_leaves_no_mount_and_clean_removes_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))  # this test's run records only
    args = mount_args(tmp_path, "--repetitions", "100000", "--transfer-size", "4k")
    with running_phase(tmp_path, args) as run:
        daemons = run.pids("g0/registry/*.json")
        pids = _mount_pids(run) + run.pids("p0/ranks/*.json") + daemons
        assert len(pids) == 12 and len(mounts_under(tmp_path)) == 4
        os.kill(run.process.pid, signal.SIGKILL)
        run.process.wait()
        wait_for(
            lambda: not [pid for pid in pids if alive(pid)],
            "the mounts, ranks and daemons to die with their orchestrator",
            timeout=90,
        )
    # Each mount went with its process (it unmounts on SIGTERM; one that
    # cannot detaches it and exits once its parent has been gone 15 s).
    wait_for(lambda: no_mount_under(tmp_path), "the mounts to go by themselves", timeout=60)
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "clean"],
        capture_output=True, text=True, env=environment(), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"run {run.token} (orchestrator pid" in done.stdout, done.stdout
    assert manifest(run_dirs(tmp_path / "results")[0])["status"] == "aborted"
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, run.token, pids)


FIO_ARGS = ["--name=seq", "--rw=write", "--bs=64k", "--size=1m", "--numjobs=2",
            "--ioengine=psync", "--verify=crc32c", "--group_reporting",
            "--name=seq", "--rw=read", "--bs=64k", "--size=1m", "--numjobs=2",
            "--ioengine=psync", "--group_reporting", "--stonewall"]  # fmt: skip


@needs_mount
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_fio_runs_on_every_node_s_mount(tmp_path: Path) -> None:
    config = tmp_path / "fio.toml"
    config.write_text(
        f'[workload]\ninterface = "mount"\ntool = "fio"\ntool_args = {json.dumps(FIO_ARGS)}\n'
        "[cluster]\nlocal_nodes = 2\n"
    )
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = benchfs_run(["--config", str(config), *small_args(tmp_path, "--label", "fio")], cwd=cwd)
    if done.returncode != 0 and "Function not implemented" in done.stderr:
        pytest.skip("the engine's namespace has no directories yet (mkdir: ENOSYS)")
    assert done.returncode == 0, done.stderr
    assert "Data phases on BenchFS through the mount" in done.stdout, done.stdout
    (run_dir,) = run_dirs(tmp_path / "results")
    phases = {row["phase"]: row for row in summary(run_dir)["phases"]}
    assert sorted(phases) == ["read", "write"]
    for row in phases.values():
        assert (row["tool"], row["interface"]) == ("fio", "mount")
    # 2 hosts x 2 jobs x 1 MiB written; read back by the read jobs and by the
    # write jobs' crc32c verification (fio fails the job on a mismatch).
    assert phases["write"]["bytes"] == 4 << 20
    assert phases["read"]["bytes"] == 8 << 20
    # The write jobs' verify state files went to each node's directory, not
    # into the working directory that every node shares.
    assert list(cwd.iterdir()) == []
    record = manifest(run_dir)
    assert record["status"] == "completed" and record["interface"] == "mount"
    root = record["mount"]["root"]
    for node, argv in record["tool"]["command_lines"].items():
        # Each host's fio works through that host's own mount point.
        assert argv[2].startswith(f"--directory={root}/{node}/"), argv
    assert len(record["daemons"]) == 2
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, token_of(run_dir))


@needs_mount
@small_ior_and_mdtest
def test_ior_and_mdtest_run_as_one_job_in_each_node_s_mount_point_when_found(
    tmp_path: Path, tool: str, args: str, phase: str
) -> None:
    binary = shutil.which(tool, path=IOR_SEARCH)
    if binary is None or shutil.which("iostat") is None:
        pytest.skip(f"{tool} or iostat not found ({tool}: PATH, $IOR_BIN_DIR, /opt/ior/bin)")
    done = benchfs_run(mount_args(
        tmp_path, "--set", "cluster.local_nodes=2",
        "--set", f"workload.tool={tool}", "--set", f"workload.tool_args={args}",
        "--set", f"workload.tool_path={binary}",
    ))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    phases = {row["phase"]: row for row in summary(run_dir)["phases"]}
    assert phase in phases
    assert all((row["tool"], row["interface"]) == (tool, "mount") for row in phases.values())
    record = manifest(run_dir)
    argv = record["tool"]["command_lines"]["job"]
    # One job of 2 x 1 ranks, each in its own node's mount point, where the tool's
    # path relative to it is the same file on every node.
    work = f"benchfs-{token_of(run_dir)}-p0"
    flag = "-o" if tool == "ior" else "-d"
    assert argv[argv.index(flag) + 1] == f"{work}/{tool}" + ("/testfile" if tool == "ior" else "")
    launched = record["tool"]["launched"]["job"]
    assert "-np" in launched
    exec_at = launched.index("benchfs.node.workdir") + 1
    root = record["mount"]["root"]
    assert launched[exec_at : exec_at + 6] == ["exec", root, "1", "local0", "local1", "--"]
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, token_of(run_dir))


@needs_mount
def test_a_sweep_mounts_each_point_afresh_and_unmounts_each(tmp_path: Path) -> None:
    done = benchfs_run(mount_args(tmp_path, "--transfer-size", "64k,128k", "--verify"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(" mounting BenchFS on 4 nodes") == 2
    assert done.stderr.count("starting 4 daemons") == 1  # the daemons stay, the mounts do not
    roots = []
    for run_dir in run_dirs(tmp_path / "results"):
        assert summary(run_dir)["verify_errors"] == 0
        roots.append(manifest(run_dir)["mount"]["root"])
    assert [Path(root).name.rsplit("-", 1)[1] for root in roots] == ["p0", "p1"]
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, token_of(run_dirs(tmp_path / "results")[0]))


@needs_mount
def test_mounts_not_live_in_time_fail_the_run_naming_the_nodes_and_logs(tmp_path: Path) -> None:
    fixed = ("--set", "cluster.deadlines.mount_s=0.001", "--set", "cluster.deadlines.per_node_s=0")
    done = benchfs_run(mount_args(tmp_path, *fixed))
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: timed out after 0.001 s waiting for 4 mounts under "), line
    assert "not live on local0" in line
    assert "mount local0 logged:" in line and "logs/mounts/local0.log" in line, line
    (run_dir,) = run_dirs(tmp_path / "results")
    assert manifest(run_dir)["status"] == "failed"
    token = re.search(r"/benchfs-(\d+-[0-9a-f]+)-mnt-p0", line)
    assert token is not None, line
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, token.group(1))


@needs_mount
def test_a_killed_mount_fails_the_run_naming_it(tmp_path: Path) -> None:
    args = mount_args(tmp_path, "--repetitions", "100000", "--transfer-size", "4k")
    with running_phase(tmp_path, args) as run:
        (victim,) = run.pids("mounts-p0/local1.json")
        os.kill(victim, signal.SIGKILL)
        code, output = run.finish()
    assert code == 2, output
    (error,) = [line for line in output.splitlines() if line.startswith("error:")]
    assert f"mount local1 (pid {victim}) was killed by SIGKILL during the run" in error, error
    assert manifest(run_dirs(tmp_path / "results")[0])["status"] == "failed"
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, run.token, [victim])
