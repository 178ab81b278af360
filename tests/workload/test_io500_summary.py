"""The suite's ``workload/summary.json`` from known rank rows: the checks its
phases applied (IOR -e and -R, mdtest -Y and -X), a verification error of
mdtest-hard-read counted in its row and the document, and the result's
validity by the reference's rules, per phase and for the score."""

from __future__ import annotations

from typing import Any

from analysis.io500 import PHASE_NAMES
from benchfs.config.suite import SuiteSizes
from benchfs.workload.io500_summary import summarize_suite
from benchfs.workload.spec import WorkloadSpec
from benchfs.workload.summary import RankRow

S = 1_000_000_000
T0 = 1_700_000_000 * S
RANKS = 2


def suite_spec(stonewall_s: float = 300.0, name: str = "io500", **changes: Any) -> WorkloadSpec:
    sizes = SuiteSizes(name=name, tool="builtin", stonewall_s=stonewall_s,
                       ior_easy_transfer_size=1 << 20, ior_easy_block_size=1 << 30,
                       ior_hard_segments=1000, mdtest_easy_files=1000,
                       mdtest_hard_files=1000)  # fmt: skip
    return WorkloadSpec(
        registry_dir="r", node_names=["n0"], transport="auto", connect_deadline_s=1.0,
        rpc_deadline_s=1.0, hosts=["h0"], tasks_per_node=RANKS, file_name="f",
        file_per_process=True, transfer_size=1 << 20, block_size=1 << 20, segments=1,
        repetitions=1, phases=["write"], verify=True, reorder_tasks=True,
        stonewall_s=stonewall_s, workload_dir="w", state_dir="s", suite=sizes,
        **changes,
    )  # fmt: skip


def suite_rows(seconds: float = 310.0, **per_phase: dict[str, Any]) -> list[RankRow]:
    """Every phase on every rank, each ``seconds`` long; ``per_phase`` changes a
    phase's rows (rank 0's only for counts)."""
    rows = []
    for index, phase in enumerate(PHASE_NAMES):
        start = T0 + index * 1000 * S
        for rank in range(RANKS):
            values: dict[str, Any] = dict(
                repetition=0, phase=phase, rank=rank, host="h0",
                bytes=(1 << 30) if phase.startswith("ior-") else 0, ops=1000,
                start_unix_ns=start, end_unix_ns=start + int(seconds * S),
            )  # fmt: skip
            if phase == "find":
                values["found"] = 10 if rank == 0 else 0
            if rank == 0:
                values.update(per_phase.get(phase, {}))
            rows.append(RankRow.model_validate(values))
    return rows


def test_the_checks_applied_and_a_read_verification_error_are_in_the_summary() -> None:
    document = summarize_suite(suite_rows(), suite_spec())
    checks = document["suite"]["checks"]
    assert checks["fsync_after_write"] == ["ior-easy-write", "ior-hard-write"]
    assert checks["verify_read"] == ["ior-easy-read", "ior-hard-read", "mdtest-hard-read"]
    assert checks["sync_after_create"]["how"].startswith("nothing to flush")
    on_disk = summarize_suite(suite_rows(), suite_spec(posix_dir="/tmp/x"))
    assert on_disk["suite"]["checks"]["sync_after_create"]["how"].startswith("sync(2)")
    rows = {row["phase"]: row for row in document["phases"]}
    assert rows["mdtest-hard-read"]["verify_errors"] == 0 and document["verify_errors"] == 0
    bad = summarize_suite(suite_rows(**{"mdtest-hard-read": {"verify_errors": 3}}), suite_spec())
    rows = {row["phase"]: row for row in bad["phases"]}
    assert rows["mdtest-hard-read"]["verify_errors"] == 3 and bad["verify_errors"] == 3


def test_validity_is_in_the_document_and_in_every_phase_row() -> None:
    document = summarize_suite(suite_rows(), suite_spec())
    assert document["valid"] is True and document["invalid_reasons"] == []
    assert all(row["valid"] and row["invalid_reasons"] == [] for row in document["phases"])
    # A verification error, and a write phase that ended 10 s before its stonewall.
    changed = suite_rows(**{"mdtest-hard-read": {"verify_errors": 1}})
    changed = [
        RankRow.model_validate({**row.model_dump(), "end_unix_ns": row.start_unix_ns + 290 * S})
        if row.phase == "ior-hard-write" else row
        for row in changed
    ]  # fmt: skip
    bad = summarize_suite(changed, suite_spec())
    rows = {row["phase"]: row for row in bad["phases"]}
    assert bad["valid"] is False
    assert [p for p, row in rows.items() if not row["valid"]] == [
        "ior-hard-write",
        "mdtest-hard-read",
    ]
    assert rows["ior-hard-write"]["invalid_reasons"][0] == (
        "ran 290.000 s, less than its stonewall of 300 s"
    )
    assert (
        "mdtest-hard-read: 1 verification errors: data read was not what was written"
        in (bad["invalid_reasons"])
    )
    quick = summarize_suite(suite_rows(2.0), suite_spec(1.0, "io500-quick"))
    assert quick["valid"] is False
    assert quick["invalid_reasons"][0].startswith("io500-quick is a short test run")
