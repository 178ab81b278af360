"""IOR's bandwidth arithmetic on known timings, and the summary's field names."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from analysis.loaders.ior import load_ior_json
from analysis.loaders.run import load_workload_summary
from benchfs import __version__
from benchfs.results.atomic import write_json_atomic
from benchfs.workload.summary import (
    RankRow,
    WorkloadParameters,
    latency_figures,
    repetition_result,
    summarize,
)

MiB = 1 << 20
S = 1_000_000_000
T0 = 1_700_000_000 * S
IOR_SAMPLE = Path(__file__).resolve().parents[1] / "analysis" / "data" / "ior-3.3.0-posix.txt"

PARAMETERS = WorkloadParameters(
    api="file-per-process",
    transfer_size=MiB,
    block_size=100 * MiB,
    segments=1,
    tasks=4,
    tasks_per_node=1,
    repetitions=2,
    file_per_process=True,
    reorder_tasks=True,
)


def row(
    rep: int, rank: int, start_s: float, end_s: float, mib: int = 100, phase: str = "write"
) -> RankRow:
    return RankRow(
        repetition=rep,
        phase=phase,
        rank=rank,
        host=f"n{rank}",
        bytes=mib * MiB,
        ops=mib,
        start_unix_ns=T0 + int(start_s * S),
        end_unix_ns=T0 + int(end_s * S),
    )


# Repetition 0: 400 MiB from the first start (0.0 s) to the last end (2.0 s).
REP0 = [row(0, 0, 0.0, 1.0), row(0, 1, 0.1, 1.5), row(0, 2, 0.0, 2.0), row(0, 3, 0.2, 1.2)]
# Repetition 1: 400 MiB in 1.0 s.
REP1 = [row(1, r, 10.0, 10.5 + r / 6) for r in range(4)]


def test_bandwidth_is_total_bytes_over_first_start_to_last_end() -> None:
    result = repetition_result(REP0)
    assert result.bytes == 400 * MiB
    assert result.span_s == pytest.approx(2.0)
    assert result.bw_mib_s == pytest.approx(200.0)
    assert result.ops_per_s == pytest.approx(200.0)
    assert result.first_done_s == pytest.approx(1.0)
    assert result.last_done_s == pytest.approx(2.0)


def test_not_the_mean_of_rank_bandwidths() -> None:
    # Per-rank bandwidths average to 100/1 + 100/1.4 + 100/2 + 100/1 over 4 = 80 MiB/s
    # per rank (321 aggregate); IOR's figure is 200.
    assert repetition_result(REP0).bw_mib_s == pytest.approx(200.0)


def test_phase_summary_over_repetitions() -> None:
    summary = summarize(REP0 + REP1, PARAMETERS)
    (write,) = summary["phases"]
    assert write["bwMaxMIB"] == pytest.approx(400.0)
    assert write["bwMinMIB"] == pytest.approx(200.0)
    assert write["bwMeanMIB"] == pytest.approx(300.0)
    assert write["bwStdMIB"] == pytest.approx(100.0)  # population deviation, as IOR
    assert write["OPsMax"] == pytest.approx(400.0)
    assert write["OPsMin"] == pytest.approx(200.0)
    assert write["OPsMean"] == pytest.approx(300.0)
    assert write["OPsSD"] == pytest.approx(100.0)
    assert write["MeanTime"] == pytest.approx(1.5)
    assert write["xsizeMiB"] == pytest.approx(400.0)
    assert write["first_done_s"] == pytest.approx((1.0 + 0.5) / 2)
    assert write["last_done_s"] == pytest.approx((2.0 + 1.0) / 2)
    reps = summary["repetitions"]
    assert [r["bwMiB"] for r in reps] == pytest.approx([200.0, 400.0])
    assert [r["blockKiB"] for r in reps] == [102400.0, 102400.0]
    assert [r["xferKiB"] for r in reps] == [1024.0, 1024.0]


def test_phases_keep_their_order() -> None:
    rows = [row(0, 0, 0, 1, phase="write"), row(0, 0, 2, 3, phase="read")]
    assert [p["phase"] for p in summarize(rows, PARAMETERS)["phases"]] == ["write", "read"]


def test_matches_ior_on_ior_timings() -> None:
    # IOR's own sample: 64 MiB per repetition in 0.0512 s and in 0.08533 s.
    rows = [
        row(0, 0, 0.0, 0.0512, mib=64),
        row(1, 0, 1.0, 1.0 + 64 / 750, mib=64),
    ]
    ior = load_ior_json(IOR_SAMPLE).operation("write")
    ours = summarize(rows, PARAMETERS)["phases"][0]
    for key in ("bwMaxMIB", "bwMinMIB", "bwMeanMIB", "bwStdMIB", "xsizeMiB"):
        assert ours[key] == pytest.approx(ior[key], rel=1e-3), key


def test_field_names_are_iors() -> None:
    ior = load_ior_json(IOR_SAMPLE)
    ours = summarize(REP0, PARAMETERS)
    assert set(ior.summary.columns) <= set(ours["phases"][0])
    assert set(ior.results.columns) - {"TestID", "repetition", "openTime", "closeTime"} <= set(
        ours["repetitions"][0]
    )
    for key in ("p50_us", "p90_us", "p99_us", "p99.9_us"):
        assert key in ours["phases"][0]


def test_latency_percentiles_nearest_rank() -> None:
    figures = latency_figures(np.arange(1, 1001, dtype=np.uint64) * 1000)
    assert figures == {
        "min_us": 1.0,
        "mean_us": 500.5,
        "p50_us": 500.0,
        "p90_us": 900.0,
        "p99_us": 990.0,
        "p99.9_us": 999.0,
        "max_us": 1000.0,
    }
    assert latency_figures(np.array([], dtype=np.uint64))["p99_us"] is None


def test_latencies_merge_over_repetitions() -> None:
    latencies = {
        ("write", 0): np.full(100, 1000, dtype=np.uint64),
        ("write", 1): np.full(100, 3000, dtype=np.uint64),
    }
    summary = summarize(REP0 + REP1, PARAMETERS, latencies)
    assert summary["phases"][0]["mean_us"] == pytest.approx(2.0)
    assert [r["p50_us"] for r in summary["repetitions"]] == [1.0, 3.0]


def test_zero_span_gives_no_bandwidth() -> None:
    summary = summarize([row(0, 0, 1.0, 1.0)], PARAMETERS)
    assert summary["phases"][0]["bwMeanMIB"] is None


def test_analysis_reads_the_summary(tmp_path: Path) -> None:
    path = write_json_atomic(tmp_path / "summary.json", summarize(REP0 + REP1, PARAMETERS))
    frame = load_workload_summary(path)
    assert list(frame["phase"]) == ["write"]
    assert frame["bwMeanMIB"].iloc[0] == pytest.approx(300.0)


def test_rank_rows_round_trip() -> None:
    original = row(0, 3, 0.5, 1.5)
    assert RankRow.model_validate(original.model_dump()) == original
    assert original.model_dump()["elapsed_s"] == pytest.approx(1.0)


def test_phase_rows_name_their_tool_and_layout() -> None:
    phase = summarize(REP0, PARAMETERS)["phases"][0]
    assert phase["kind"] == "data" and phase["tool"] == "benchfs"
    assert phase["tool_version"] == __version__
    assert phase["access"] == "file-per-process" and phase["ordering"] == "sequential"
    assert "queue_depth" in phase


def test_queue_depth_and_target_have_their_own_names() -> None:
    rows = [row(0, rank, 0.0, 1.0) for rank in range(4)]
    engine = summarize(rows, dataclasses.replace(PARAMETERS, queue_depth=16))
    assert engine["parameters"]["API"] == "BENCHFS"
    assert engine["parameters"]["queue_depth"] == 16
    assert engine["phases"][0]["queue_depth"] == 16
    posix = summarize(rows, dataclasses.replace(PARAMETERS, target="posix:/scratch"))
    # IOR's API names the I/O interface: POSIX calls on a posix: target.
    assert posix["parameters"]["API"] == posix["phases"][0]["API"] == "POSIX"
    assert posix["parameters"]["target"] == "posix:/scratch"
    assert posix["parameters"]["queue_depth"] == 1
