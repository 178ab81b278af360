"""`benchfs run` options and sweeps that reach the daemons, for real on the local cluster:
--transport, --tasks-per-node, --segments and --label land in the manifest and the summary,
and a sweep over a daemon setting restarts the daemons between its points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_helpers import benchfs_run, manifest, run_dirs, scratch_dirs, small_args, summary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
MiB = 1 << 20


def test_transport_tasks_segments_and_label_reach_the_run(tmp_path: Path) -> None:
    args = small_args(
        tmp_path, "--transport", "tcp", "--tasks-per-node", "2", "--segments", "2",
        "--label", "options-check", "--verify", "--json",
    )  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    (run_dir,) = run_dirs(tmp_path / "results")
    assert run_dir.name.endswith("-options-check")
    recorded = manifest(run_dir)
    assert recorded["label"] == "options-check"
    effective = recorded["effective_config"]
    assert effective["cluster"]["transport"] == "tcp"
    assert (effective["workload"]["tasks_per_node"], effective["workload"]["segments"]) == (2, 2)
    assert recorded["ranks"]["total"] == 8
    assert recorded["ranks"]["per_host"] == {f"local{i}": 2 for i in range(4)}
    parameters = summary(run_dir)["parameters"]
    assert (parameters["numTasks"], parameters["tasksPerNode"], parameters["segmentCount"]) == (
        8, 2, 2,
    )  # fmt: skip
    # 8 ranks x 2 segments x 1 MiB blocks, in 64 KiB transfers; all read back correctly.
    for phase in document["phases"]:
        assert (phase["bytes"], phase["ops"], phase["errors"]) == (16 * MiB, 256, 0)
    assert document["phases"][1]["verify_errors"] == 0
    ranks = [json.loads(row) for row in (run_dir / "workload" / "ranks.jsonl").open()]
    assert sorted(row["host"] for row in ranks if row["phase"] == "write") == sorted(
        f"local{i}" for i in range(4) for _ in range(2)
    )
    assert "| cluster.transport | tcp |" in (run_dir / "report.md").read_text()


def test_sweep_of_a_daemon_setting_restarts_the_daemons(tmp_path: Path) -> None:
    config = tmp_path / "sweep.toml"
    config.write_text('[cluster]\nchunk_size = ["256k", "512k"]\n')
    args = small_args(tmp_path, "--config", str(config), "--verify")
    at = args.index("cluster.chunk_size=256k")
    del args[at - 1 : at + 1]  # the sweep sets it
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    first, second = run_dirs(tmp_path / "results")
    assert [manifest(p)["sweep"]["values"] for p in (first, second)] == [
        {"cluster.chunk_size": "256k"},
        {"cluster.chunk_size": "512k"},
    ]
    assert [manifest(p)["effective_config"]["cluster"]["chunk_size"] for p in (first, second)] == [
        256 << 10,
        512 << 10,
    ]
    # A new daemon generation per point: other processes, other data directories.
    daemons = [manifest(p)["daemons"] for p in (first, second)]
    assert {d["pid"] for d in daemons[0]}.isdisjoint(d["pid"] for d in daemons[1])
    assert {d["data_dir"] for d in daemons[0]}.isdisjoint(d["data_dir"] for d in daemons[1])
    for point in (first, second):
        write, read = summary(point)["phases"]
        assert (write["bytes"], read["bytes"], read["verify_errors"]) == (4 * MiB, 4 * MiB, 0)
    assert scratch_dirs(tmp_path / "results") == []
    assert not (tmp_path / "data").exists()
