"""`benchfs run` for real on the embedded local cluster: 4 daemons, 4 MPI
ranks (mpi4py), the engine's client, the results directory, and cleanup on
failure and on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from run_helpers import (
    assert_nothing_left,
    benchfs_run,
    manifest,
    run_dirs,
    running_phase,
    scratch_dirs,
    small_args,
    summary,
    wait_for,
)

from analysis.jsonlines import read_json_lines

MiB = 1 << 20
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.core_claim
def test_write_then_read_verified_file_per_process_and_shared(tmp_path: Path) -> None:
    args = small_args(tmp_path, "--api", "file-per-process,shared", "--verify", "--json")
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    documents = json.loads(done.stdout)
    assert [doc["parameters"]["access"] for doc in documents] == [
        "file-per-process",
        "single-shared-file",
    ]
    points = run_dirs(tmp_path / "results")
    assert [str(p) for p in points] == [doc["results_dir"] for doc in documents]
    daemon_pids = []
    for run_dir, document in zip(points, documents, strict=True):
        assert summary(run_dir) == {
            key: value
            for key, value in document.items()
            if key not in ("results_dir", "notes", "stragglers", "history")
        }
        write, read = document["phases"]
        assert (write["phase"], read["phase"]) == ("write", "read")
        for phase in (write, read):
            assert phase["bytes"] == 4 * MiB
            assert phase["ops"] == 64
            assert phase["numTasks"] == 4
            assert phase["errors"] == 0
            assert phase["bwMeanMIB"] > 0
            assert phase["p50_us"] <= phase["p99_us"] <= phase["p99.9_us"] <= phase["max_us"]
        assert read["verify_errors"] == 0
        ranks = (run_dir / "workload" / "ranks.jsonl").read_text().splitlines()
        assert len(ranks) == 8
        assert sorted(json.loads(row)["host"] for row in ranks[:4]) == [
            "local0", "local1", "local2", "local3",
        ]  # fmt: skip
        recorded = manifest(run_dir)
        assert recorded["status"] == "completed"
        assert recorded["ranks"]["total"] == 4
        assert recorded["native"]["available"] is True
        assert recorded["preflight"]["status"] == "not run"
        assert recorded["effective_config"]["workload"]["verify"] is True
        assert [d["node_name"] for d in recorded["daemons"]] == [f"local{i}" for i in range(4)]
        # The ranks learned the membership from the one members file.
        assert recorded["membership"]["source"] == "members file"
        assert recorded["membership"]["file"].endswith("/registry/members.json")
        assert recorded["membership"]["daemons"] == 4
        daemon_pids.append(sorted(d["pid"] for d in recorded["daemons"]))
        traces = sorted(path.name for path in (run_dir / "traces").iterdir())
        assert len([name for name in traces if "rank" in name]) == 4
        assert len([name for name in traces if name.startswith("trace-local")]) >= 4
        # The report covers the run: its RPCs reached every daemon.
        report = (run_dir / "report.md").read_text()
        assert "received no RPCs" not in report
        assert (run_dir / "report.html").is_file()
    # One daemon generation served both points: nothing about the daemons changed.
    assert daemon_pids[0] == daemon_pids[1]
    assert scratch_dirs(tmp_path / "results") == []
    assert not (tmp_path / "data").exists()


def test_sweep_of_transfer_sizes_keeps_the_daemons(tmp_path: Path) -> None:
    config = tmp_path / "sweep.toml"
    config.write_text('[workload]\ntransfer_size = ["64k", "256k"]\nblock_size = "1m"\n')
    args = [*small_args(tmp_path), "--config", str(config)]
    args.remove("--transfer-size")
    args.remove("64k")
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    first, second = run_dirs(tmp_path / "results")
    assert [summary(p)["parameters"]["transferSize"] for p in (first, second)] == [
        64 << 10,
        256 << 10,
    ]
    assert [summary(p)["phases"][0]["ops"] for p in (first, second)] == [64, 16]
    assert manifest(first)["sweep"] == {
        "index": 0, "count": 2, "values": {"workload.transfer_size": "64k"},
    }  # fmt: skip
    assert manifest(first)["daemons"] == manifest(second)["daemons"]
    assert "results: " in done.stdout


def test_stonewall_with_wear_out(tmp_path: Path) -> None:
    # 4 GiB per rank cannot be written before a 1 s stonewall on any machine,
    # and a rank that gets no CPU for most of it still writes something.
    args = small_args(tmp_path, "--set", "workload.stonewall_s=1", "--verify")
    args[args.index("--block-size") + 1] = "4g"
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    write, read = summary(run_dir)["phases"]
    assert write["stonewalled"]
    rows = read_json_lines(run_dir / "workload" / "ranks.jsonl")
    for phase in ("write", "read"):
        ops = {row["ops"] for row in rows if row["phase"] == phase}
        # Wear-out: every rank caught up with the one that got furthest.
        assert len(ops) == 1, (phase, rows)
        assert max(row["stonewall_ops"] for row in rows if row["phase"] == phase) == ops.pop()
    # The read phase reads no further than was written, and reads it correctly.
    assert 0 < read["bytes"] <= write["bytes"] < (4 * 4) << 30
    assert read["verify_errors"] == 0


def test_a_phase_past_its_deadline_fails_the_run_naming_it(tmp_path: Path) -> None:
    # 16 GiB cannot be written within a 1 s phase deadline.
    args = small_args(tmp_path, "--set", "cluster.deadlines.phase_s=1")
    args[args.index("--block-size") + 1] = "4g"
    done = benchfs_run(args)
    assert done.returncode == 2, done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "still in the write phase of repetition 0 after the 1 s deadline" in error, error
    assert "cluster.deadlines.phase_s" in error
    assert scratch_dirs(tmp_path / "results") == []
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("record", "named"),
    [
        ("p0/ranks/rank2.json", "workload rank 2 on local2 (pid {pid}) was killed by SIGKILL"),
        ("g0/registry/local1.json", "daemon local1 (pid {pid}) was killed by SIGKILL"),
    ],
    ids=["rank", "daemon"],
)
def test_a_killed_process_fails_the_run_naming_it(tmp_path: Path, record: str, named: str) -> None:
    with running_phase(tmp_path, small_args(tmp_path, "--repetitions", "100000")) as run:
        (victim,) = run.pids(record)
        os.kill(victim, signal.SIGKILL)
        code, output = run.finish()
    assert code == 2, output
    (error,) = [line for line in output.splitlines() if line.startswith("error:")]
    assert named.format(pid=victim) in error, error
    recorded = manifest(run_dirs(tmp_path / "results")[0])
    assert recorded["status"] == "failed"
    assert recorded["error"] == error.removeprefix("error: ")
    assert_nothing_left(tmp_path, run.token, [victim])


def test_a_run_failed_after_some_phases_reports_those_phases(tmp_path: Path) -> None:
    args = small_args(tmp_path, "--repetitions", "100000", "--transfer-size", "4k")
    with running_phase(tmp_path, args) as run:
        (run_dir,) = run_dirs(tmp_path / "results")
        ranks_file = run_dir / "workload" / "ranks.jsonl"
        wait_for(lambda: ranks_file.is_file() and ranks_file.stat().st_size > 0, "a phase done")
        (victim,) = run.pids("g0/registry/local1.json")
        os.kill(victim, signal.SIGKILL)
        code, output = run.finish()
    assert code == 2, output
    recorded = manifest(run_dir)
    assert recorded["status"] == "failed"
    assert f"daemon local1 (pid {victim}) was killed by SIGKILL" in recorded["error"]
    # The summary and report of the phases that finished, and a note saying so.
    summary = json.loads((run_dir / "workload" / "summary.json").read_text())
    assert summary["repetitions"], summary
    assert (run_dir / "report.md").is_file(), recorded["notes"]
    assert any("cover what finished before the failure" in n for n in recorded["notes"])
    assert_nothing_left(tmp_path, run.token, [victim])


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_in_the_middle_leaves_nothing_behind(tmp_path: Path, signum: int) -> None:
    # 4 KiB transfers travel eagerly: a rank killed mid-rendezvous can abort a
    # daemon inside UCX's cma transport (docs/RPC.md), which is not what this
    # test is about.
    args = small_args(tmp_path, "--repetitions", "100000", "--transfer-size", "4k")
    with running_phase(tmp_path, args) as run:
        daemons = run.pids("g0/registry/*.json")
        ranks = run.pids("p0/ranks/*.json")
        assert len(daemons) == 4 and len(ranks) == 4
        assert list(Path("/dev/shm").glob(f"benchfs-{run.token}*"))
        os.kill(run.process.pid, signum)
        code, output = run.finish()
    assert code == 128 + signum, output
    assert "interrupted" in output
    (run_dir,) = run_dirs(tmp_path / "results")
    assert manifest(run_dir)["status"] == "interrupted"
    # The daemons were still stopped gracefully, and their logs kept.
    logs = sorted((run_dir / "logs" / "daemons").iterdir())
    assert [path.name for path in logs] == [f"local{i}.log" for i in range(4)]
    assert all("stopped (SIGTERM" in path.read_text() for path in logs)
    assert_nothing_left(tmp_path, run.token, daemons + ranks)


def test_a_daemon_that_cannot_start_fails_the_run_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    args = small_args(tmp_path)
    args[args.index(f"cluster.data_dir={tmp_path / 'data'}")] = f"cluster.data_dir={blocker}"
    done = benchfs_run(args)
    assert done.returncode == 2
    error = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1, done.stderr
    assert "daemon local" in error[0] and "while waiting for 4 daemons" in error[0], error[0]
    (run_dir,) = run_dirs(tmp_path / "results")
    assert manifest(run_dir)["status"] == "failed"
    assert scratch_dirs(tmp_path / "results") == []
