"""`benchfs run` refuses bad input before starting anything, with one line
naming the file and line or the key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from run_helpers import benchfs_run, run_dirs, small_args


def test_hostfile_error_names_file_and_line(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("node01 slots=2\nnode02 slots=0\n")
    done = benchfs_run([*small_args(tmp_path), "--nodes", str(hosts)], timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {hosts}:2: slots must be a positive integer, got '0'"
    ]
    assert not (tmp_path / "results").exists() or run_dirs(tmp_path / "results") == []


def test_config_error_names_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text("[workload]\ntransfer_sise = '1m'\n")
    done = benchfs_run(["--config", str(config)], timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {config}: workload.transfer_sise: unknown key "
        "(did you mean 'workload.transfer_size'?)"
    ]
    bad = benchfs_run([*small_args(tmp_path), "--set", "cluster.durability=sometimes"], timeout=60)
    assert bad.returncode == 2
    (line,) = bad.stderr.strip().splitlines()
    assert line.startswith("error: --set cluster.durability:"), line


def test_set_needs_key_and_value(tmp_path: Path) -> None:
    done = benchfs_run(["--set", "workload.transfer_size", "--results-dir", str(tmp_path)], 60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --set workload.transfer_size: expected KEY=VALUE (e.g. workload.transfer_size=1m)"
    ]


def test_values_the_engine_refuses_fail_the_config_check(tmp_path: Path) -> None:
    done = benchfs_run(
        [*small_args(tmp_path), "--set", "cluster.deadlines.shutdown_s=1e19"], timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --set cluster.deadlines.shutdown_s: must be above 0 and at most 604800 (got '1e19')"
    ]
    assert not (tmp_path / "results").exists()
    config = tmp_path / "latin1.toml"
    config.write_bytes(b"[output]\nlabel = 'caf\xe9'\n")
    done = benchfs_run(["--config", str(config)], timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {config}: not UTF-8 text (byte 21): a config file is UTF-8 text"
    ]


def test_a_slurm_node_set_without_bound_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "1(x999999999999)"}
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "run", "--nodes", "slurm", *small_args(tmp_path)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: SLURM_TASKS_PER_NODE='1(x999999999999)': names more than 262,144 hosts (the limit)"
    ]


def test_a_host_launcher_without_hosts_is_refused_before_anything_starts(tmp_path: Path) -> None:
    done = benchfs_run([*small_args(tmp_path), "--set", "launcher.name=mpirun"], timeout=60)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: launcher.name = 'mpirun' starts processes on named hosts"), line
    assert "give --nodes HOSTFILE" in line
    assert not (tmp_path / "results").exists() or run_dirs(tmp_path / "results") == []
