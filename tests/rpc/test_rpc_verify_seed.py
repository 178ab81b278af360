"""Stale data does not pass verification: each run and repetition writes
and verifies with its own seed (``WorkloadSpec.seed_for``), so what run A
left at the same offsets fails when run B reads it."""

from __future__ import annotations

import pytest
from conftest import Cluster

from benchfs.workload.spec import WorkloadSpec, run_seed

pytestmark = pytest.mark.timeout(120)

SHAPE = {"file_name": "stale", "transfer_size": 64 * 1024, "block_size": 256 * 1024}


def _spec(run_id: str) -> WorkloadSpec:
    return WorkloadSpec(
        registry_dir="r",
        node_names=["node0"],
        transport="shm",
        connect_deadline_s=10.0,
        rpc_deadline_s=10.0,
        hosts=["h"],
        tasks_per_node=1,
        file_name="stale",
        file_per_process=True,
        transfer_size=SHAPE["transfer_size"],
        block_size=SHAPE["block_size"],
        segments=1,
        repetitions=2,
        phases=["write", "read"],
        verify=True,
        reorder_tasks=False,
        stonewall_s=0.0,
        workload_dir="w",
        state_dir="s",
        verify_seed=run_seed(run_id),
    )


def test_seeds_differ_per_run_and_repetition_and_are_recorded() -> None:
    a, b = _spec("results/run-a@t1"), _spec("results/run-b@t2")
    seeds = {a.seed_for(0), a.seed_for(1), b.seed_for(0), b.seed_for(1)}
    assert len(seeds) == 4
    assert all(0 <= s < 2**64 for s in seeds)
    assert a.seed_for(1) == _spec("results/run-a@t1").seed_for(1), "not reproducible"
    assert a.parameters().verify_seeds == (a.seed_for(0), a.seed_for(1))


def test_data_of_run_a_fails_verification_in_run_b(fresh_cluster: Cluster) -> None:
    fresh_cluster.start()
    run_a, run_b = _spec("results/run-a@t1"), _spec("results/run-b@t2")
    with fresh_cluster.client() as c:
        written = c.run_phase(phase="write", seed=run_a.seed_for(0), **SHAPE)
        assert written["errors"] == 0
        same = c.run_phase(phase="read", verify=True, seed=run_a.seed_for(0), **SHAPE)
        assert same["verify_errors"] == 0
        stale = c.run_phase(phase="read", verify=True, seed=run_b.seed_for(0), **SHAPE)
        assert stale["verify_errors"] > 0
        next_repetition = c.run_phase(phase="read", verify=True, seed=run_a.seed_for(1), **SHAPE)
        assert next_repetition["verify_errors"] > 0
