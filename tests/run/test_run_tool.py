"""`workload.tool` through `benchfs run` for real: fio on a posix: target on
every node, its phases in the summary, what ran in the manifest, the report
and `compare` against a built-in posix run; a missing, refused or failing
tool as one line naming it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import (
    IOR_SEARCH,
    benchfs_run,
    environment,
    manifest,
    needs_fio_and_iostat,
    run_dirs,
    small_args,
    small_ior_and_mdtest,
    summary,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
# The built-in workload's shape (4 ranks of 1 MiB in 64 KiB transfers) as one
# fio job name per node: phases "write" then "read", 2 nodes x 2 jobs.
FIO_ARGS = ["--name=seq", "--rw=write", "--bs=64k", "--size=1m", "--numjobs=2",
            "--ioengine=psync", "--group_reporting",
            "--name=seq", "--rw=read", "--bs=64k", "--size=1m", "--numjobs=2",
            "--ioengine=psync", "--group_reporting", "--stonewall"]  # fmt: skip


def tool_config(tmp_path: Path, target: Path, tool_args: list[str]) -> Path:
    config = tmp_path / "fio.toml"
    config.write_text(
        f'[workload]\ntarget = "posix:{target}"\ntool = "fio"\n'
        f"tool_args = {json.dumps(tool_args)}\n"
        "[cluster]\nlocal_nodes = 2\n"
    )
    return config


def benchfs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True, text=True, env=environment(), timeout=120,
    )  # fmt: skip


@needs_fio_and_iostat
def test_fio_runs_under_benchfs_run_and_compares_with_a_builtin_run(tmp_path: Path) -> None:
    target = tmp_path / "fs"
    target.mkdir()
    config = tool_config(tmp_path, target, FIO_ARGS)
    preflight = ["--set", "preflight.enabled=true", "--set", "preflight.runtime_s=2"]
    args = small_args(tmp_path, "--label", "fio", *preflight)
    done = benchfs_run(["--config", str(config), *args])
    assert done.returncode == 0, done.stderr
    assert list(target.iterdir()) == []  # the tool's directory is removed after the run
    (run_dir,) = run_dirs(tmp_path / "results")
    phases = {row["phase"]: row for row in summary(run_dir)["phases"]}
    assert list(phases) == ["write", "read"]
    for row in phases.values():
        # numTasks counts fio's job entries: one per node (group_reporting sums its 2 jobs).
        assert (row["tool"], row["kind"], row["numTasks"], row["bytes"]) == (
            "fio",
            "data",
            2,
            4 << 20,
        )
    record = manifest(run_dir)
    tool = record["tool"]
    assert tool["name"] == "fio" and tool["version"].startswith("fio-")
    assert phases["write"]["tool_version"] == tool["version"].removeprefix("fio-")
    assert sorted(tool["command_lines"]) == ["local0", "local1"]
    for node, argv in tool["command_lines"].items():
        assert argv[0] == tool["binary"]
        directory = f"{record['target']['directory']}/{node}"
        assert argv[1:4] == ["--output-format=json", f"--directory={directory}",
                             f"--aux-path={directory}"]  # fmt: skip
        assert argv[4:] == FIO_ARGS
        assert f"workload/tool/fio-{node}.json" in tool["outputs"]
        assert (run_dir / "workload" / "tool" / f"fio-{node}.json").is_file()
        assert (run_dir / "iostat" / f"{node}.json").is_file()
    assert record["status"] == "completed" and record["daemons"] == []
    assert record["ranks"]["per_host"] == {"local0": 1, "local1": 1}  # one fio per host
    assert record["preflight"]["status"] == "run"
    assert record["preflight"]["directory"] == str(target)
    assert (run_dir / "report.md").is_file()
    reported = benchfs("report", str(run_dir))
    assert reported.returncode == 0, reported.stderr
    assert "fio" in (run_dir / "report.md").read_text()

    builtin = benchfs_run(small_args(tmp_path, "--label", "posix",
                                     "--set", f"workload.target=posix:{target}"))  # fmt: skip
    assert builtin.returncode == 0, builtin.stderr
    posix = next(path for path in run_dirs(tmp_path / "results") if path.name.endswith("posix"))
    compared = benchfs("compare", str(posix), str(run_dir), "--json")
    assert compared.returncode == 0, compared.stderr
    rows = {(row["phase"], row["metric"]): row for row in json.loads(compared.stdout)["metrics"]}
    for phase in ("write", "read"):
        row = rows[(phase, "bwMeanMIB")]
        assert row["B"] == pytest.approx(phases[phase]["bwMeanMIB"])


def test_a_missing_tool_is_one_line_naming_the_setting_before_anything_starts(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "ior-build" / "bin"
    args = small_args(
        tmp_path, "--set", f"workload.target=posix:{tmp_path}", "--set", "workload.tool=ior",
        "--set", f"workload.tool_path={missing}",
    )  # fmt: skip
    done = benchfs_run(args, timeout=60)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        f"error: ior not found: {missing}: no such file or directory "
        f"(workload.tool_path = '{missing}')"
    ]
    assert not (tmp_path / "results").exists()


def test_a_tool_on_the_native_client_is_refused_naming_the_mount(tmp_path: Path) -> None:
    done = benchfs_run(small_args(tmp_path, "--set", "workload.tool=fio"), timeout=60)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "workload.tool = 'fio' needs a mounted file system" in line
    assert 'workload.interface = "mount"' in line and 'workload.target = "posix:PATH"' in line


@needs_fio_and_iostat
def test_a_failing_tool_names_its_exit_status_and_keeps_what_it_said(tmp_path: Path) -> None:
    target = tmp_path / "fs"
    target.mkdir()
    config = tool_config(tmp_path, target, ["--name=x", "--rw=sideways"])
    done = benchfs_run(["--config", str(config), *small_args(tmp_path)])
    assert done.returncode != 0
    (run_dir,) = run_dirs(tmp_path / "results")
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith("error: fio on local0 exited with status 1: "), line
    assert "sideways" in line
    assert "sideways" in (run_dir / "workload" / "tool" / "fio-local0.stderr").read_text()
    record = manifest(run_dir)
    assert record["status"] == "failed" and "sideways" in record["error"]
    assert record["tool"]["command_lines"]["local0"][-1] == "--rw=sideways"


@small_ior_and_mdtest
def test_ior_and_mdtest_run_under_benchfs_run_when_found(
    tmp_path: Path, tool: str, args: str, phase: str
) -> None:
    binary = shutil.which(tool, path=IOR_SEARCH)
    if binary is None or shutil.which("mpirun") is None or shutil.which("iostat") is None:
        pytest.skip(
            f"{tool}, mpirun or iostat not found ({tool}: PATH, $IOR_BIN_DIR, /opt/ior/bin)"
        )
    target = tmp_path / "fs"
    target.mkdir()
    done = benchfs_run(small_args(
        tmp_path, "--set", f"workload.target=posix:{target}", "--set", "cluster.local_nodes=2",
        "--set", f"workload.tool={tool}", "--set", f"workload.tool_args={args}",
        "--set", f"workload.tool_path={binary}",
    ))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    phases = {row["phase"]: row for row in summary(run_dir)["phases"]}
    assert phase in phases and all(row["tool"] == tool for row in phases.values())
    record = manifest(run_dir)["tool"]
    assert record["version"].lower().startswith(f"{tool}-")
    argv = record["command_lines"]["job"]
    assert argv[: len(args.split(",")) + 1] == [binary, *args.split(",")]
    assert "-np" in record["launched"]["job"] and "2" in record["launched"]["job"]
    if tool == "ior":
        assert argv[-1] == f"summaryFile={run_dir.absolute() / 'workload/tool/ior-summary.json'}"
