"""The node programs as the orchestration starts them: their argv parse,
and each does its job as a real process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import benchfs_native
from analysis.loaders.diagnose import parse_diagnose_json
from benchfs.daemon.settings import DaemonSettings, daemon_config_path, write_daemon_config
from benchfs.errors import ConfigError
from benchfs.launchers.programs import (
    MountArgs,
    PreflightArgs,
    daemon_argv,
    daemon_rank_argv,
    diagnose_argv,
    host_argv,
    mount_argv,
)
from benchfs.mount.settings import MountSettings
from benchfs.node import daemon, diagnose, mount
from benchfs.node.daemon import rank_from_env
from benchfs.node.host import clean

DEADLINE_S = 60.0


def test_rank_from_the_launchers_environment() -> None:
    assert rank_from_env({"OMPI_COMM_WORLD_RANK": "3"}) == 3
    assert rank_from_env({"PMI_RANK": "1"}) == 1
    assert rank_from_env({"SLURM_PROCID": "7"}) == 7
    with pytest.raises(RuntimeError, match="no launcher rank"):
        rank_from_env({})


def test_node_clean_removes_only_run_directories(tmp_path: Path) -> None:
    run_dir = tmp_path / "benchfs-12-ab-g0"
    (run_dir / "n1").mkdir(parents=True)
    other = tmp_path / "home"
    other.mkdir()
    assert clean([str(run_dir), str(other)]) == 1
    assert not run_dir.exists()
    assert other.exists()


def test_node_sweep_stops_a_dead_runs_processes_and_removes_its_paths_not_itself(
    tmp_path: Path,
) -> None:
    token = f"{os.getpid()}-5eed"
    marker = f"benchfs-{token}"
    leftover = subprocess.Popen(  # stands for a daemon the dead run left on this host
        [sys.executable, "-c", "import time; time.sleep(600)", marker]
    )
    data = tmp_path / f"{marker}-g0"
    (data / "n1").mkdir(parents=True)
    shm = Path("/dev/shm") / f"{marker}-ucx"
    shm.write_bytes(b"x")
    try:
        done = subprocess.run(
            host_argv("sweep", token, str(tmp_path / "{run}-g0")),
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        assert done.returncode == 0, done.stderr
        assert leftover.wait(timeout=DEADLINE_S) != 0
        assert not data.exists() and not shm.exists()
        assert "stopped 1 processes" in done.stdout, done.stdout
        assert "removed 1 paths and 1 shared-memory files" in done.stdout, done.stdout
    finally:
        leftover.kill()
        shm.unlink(missing_ok=True)
    refused = subprocess.run(
        host_argv("sweep", "../x", str(tmp_path)), capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2 and "not a run's token" in refused.stderr


def test_the_argv_the_orchestration_builds_is_what_the_programs_parse() -> None:
    args = daemon.parser().parse_args(daemon_argv(Path("/c/daemon-3.toml"))[3:])
    assert args.config == Path("/c/daemon-3.toml") and args.config_dir is None
    args = daemon.parser().parse_args(daemon_rank_argv(Path("/c"), "/dev/shm/x")[3:])
    assert (args.config, args.config_dir, args.shm_dir) == (None, Path("/c"), "/dev/shm/x")
    preflight = PreflightArgs(transfer_size=4096, files=3, file_size=1 << 20, runtime_s=0.5)
    argv = diagnose_argv(Path("/d"), "n2", quick=True, preflight=preflight)
    args = diagnose.parser().parse_args(argv[3:])
    assert (args.dir, args.node_name, args.quick, args.preflight) == (Path("/d"), "n2", True, True)
    assert PreflightArgs(args.transfer_size, args.files, args.file_size, args.runtime) == preflight
    assert daemon_argv(Path("/c"))[:3] == [sys.executable, "-m", "benchfs.node.daemon"]
    assert host_argv("stop", "/r", "5")[2:] == ["benchfs.node.host", "stop", "/r", "5"]
    settings = MountSettings(threads=8, entry_timeout_s=1.5, rpc_deadline_s=2.25, session_spin_us=7)
    options = MountArgs(Path("/r"), Path("/m"), Path("/ready"), tuple(settings.to_argv()))
    args = mount.parser().parse_args(mount_argv(options, "n4")[3:])
    assert (args.registry, args.mount_root, args.ready_dir, args.node, args.nodes) == (
        Path("/r"), Path("/m"), Path("/ready"), "n4", None,
    )  # fmt: skip
    assert MountSettings.from_arguments(args) == settings


def test_a_mount_rank_mounts_the_node_of_its_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    options = MountArgs(Path("/r"), Path("/m"), Path("/ready"), tuple(MountSettings().to_argv()))
    args = mount.parser().parse_args([*mount_argv(options, "x")[3:-2], "--nodes", "a", "b"])
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    assert mount.node_of(args) == "b"
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "2")
    with pytest.raises(ConfigError, match="launcher rank 2: only 2 nodes to mount"):
        mount.node_of(args)


def _wait(check: Callable[[], Any], what: str, process: subprocess.Popen[str]) -> Any:
    until = time.monotonic() + DEADLINE_S
    while time.monotonic() < until:
        value = check()
        if value:
            return value
        if process.poll() is not None:
            pytest.fail(f"{what}: the process exited with {process.returncode}")
        time.sleep(0.05)
    pytest.fail(f"timed out after {DEADLINE_S} s waiting for {what}")


def _registered(registry: Path) -> list[benchfs_native.RegistryRecord]:
    return benchfs_native.read_registry(str(registry)) if registry.is_dir() else []


def test_a_daemon_rank_serves_its_config_and_the_host_helper_stops_it(tmp_path: Path) -> None:
    registry, configs, shm = tmp_path / "registry", tmp_path / "configs", tmp_path / "shm"
    configs.mkdir()
    for node_id in (0, 1):
        settings = DaemonSettings(
            node_name=f"n{node_id}",
            node_id=node_id,
            data_dir=str(tmp_path / "data" / f"n{node_id}"),
            registry_dir=str(registry),
            buffer_pool_size=4 << 20,
        )
        write_daemon_config(daemon_config_path(configs, node_id), settings)
    env = {**os.environ, "OMPI_COMM_WORLD_RANK": "1"}
    log = (tmp_path / "daemon.log").open("w")
    process = subprocess.Popen(
        daemon_rank_argv(configs, str(shm)),
        stderr=log,
        stdout=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        (record,) = _wait(lambda: _registered(registry), "the daemon's record", process)
        assert (record["node_name"], record["node_id"], record["pid"]) == ("n1", 1, process.pid)
        assert isinstance(record["worker_address"], bytes) and record["worker_address"]
        assert shm.is_dir()
        # One job stops the daemon, then removes its data and shared-memory dirs.
        data = tmp_path / "benchfs-1-g0"
        (data / "n1").mkdir(parents=True)
        stop = subprocess.run(
            host_argv("stop", str(registry), "10", str(data)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stop.returncode == 0, stop.stderr
        assert process.wait(timeout=DEADLINE_S) == 0
        assert not data.exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
    assert _registered(registry) == []
    assert "benchfs daemon n1 (node 1) stopped (SIGTERM" in (tmp_path / "daemon.log").read_text()


def test_the_stop_cleans_up_when_the_daemons_are_gone_and_its_errors_name_the_host(
    tmp_path: Path,
) -> None:
    data = tmp_path / "benchfs-2-g0"
    (data / "n1").mkdir(parents=True)
    # No registry at all: the daemons never registered, or are long gone.
    stop = subprocess.run(
        host_argv("stop", str(tmp_path / "registry"), "1", str(data)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stop.returncode == 0, stop.stderr
    assert not data.exists()
    other = tmp_path / "home"
    other.mkdir()
    refused = subprocess.run(
        host_argv("stop", str(tmp_path / "registry"), "1", str(other)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert refused.stderr == f"{socket.gethostname()}: not removing {other}: not a run directory\n"
    assert other.exists()


def test_the_stop_kills_a_daemon_past_its_deadline_then_removes_its_files(
    tmp_path: Path,
) -> None:
    # Stands for a daemon that no longer answers SIGTERM: its command line
    # names the daemon program, and its record is a real registry record.
    stuck = subprocess.Popen(
        [
            sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
            " print('ready', flush=True); time.sleep(600)",
            "benchfs.node.daemon",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert stuck.stdout is not None and stuck.stdout.readline() == "ready\n"
        registry = tmp_path / "registry"
        registry.mkdir()
        data = tmp_path / "benchfs-3-g0"
        (data / "n1").mkdir(parents=True)
        record = {
            "node_name": "n1", "node_id": 0, "daemon_index": 0, "pid": stuck.pid,
            "host": socket.gethostname(), "worker_address": "00",
            "data_dir": str(data / "n1"), "start_time_unix_ns": 1, "protocol_version": 1,
        }  # fmt: skip
        (registry / "n1.json").write_text(json.dumps(record))
        stop = subprocess.run(
            host_argv("stop", str(registry), "0.5", str(data)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stop.returncode == 1
        host = socket.gethostname()
        assert stop.stderr == f"{host}: daemon pid {stuck.pid} still running after 0.5 s\n"
        assert stuck.wait(timeout=DEADLINE_S) == -signal.SIGKILL
        assert not data.exists()
    finally:
        stuck.kill()
        stuck.wait()


def test_a_daemon_rank_without_its_config_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "OMPI_COMM_WORLD_RANK": "5"}
    done = subprocess.run(
        daemon_rank_argv(tmp_path), capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line == f"error: {tmp_path / 'daemon-5.toml'}: no daemon config for this rank"


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_the_diagnose_worker_prints_one_node_and_leaves_nothing(tmp_path: Path) -> None:
    preflight = PreflightArgs(transfer_size=65536, files=2, file_size=1 << 20, runtime_s=0.5)
    done = subprocess.run(
        diagnose_argv(tmp_path, "n7", preflight=preflight),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    document = json.loads(done.stdout)
    assert document["kind"] == "benchfs-diagnose"
    (node,) = document["nodes"]
    assert node["node"] == "n7" and node["measurement"]["error"] is None
    tests = [test["name"] for test in node["measurement"]["tests"]]
    assert tests == ["preflight_write", "preflight_read"]
    rows = parse_diagnose_json(done.stdout, "worker output")
    assert set(rows["node"]) == {"n7"}
    assert set(zip(rows["job"], rows["direction"], strict=True)) == {
        ("preflight_write", "write"),
        ("preflight_read", "read"),
    }
    assert (rows["bw_MiB_s"] > 0).all()
    assert list(tmp_path.iterdir()) == []
