"""`benchfs bench rpc` end to end (tiny sizes, real daemon, ucx_perftest and UCX examples): the
JSON it prints, the placement of every round, the per-round ratios in it, and its errors. Only
the structure and the arithmetic are checked; whether a target is met depends on the machine
(docs/PERFORMANCE.md)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "benchfs_native/target/release/examples"
ROUNDS = 2
# A ucx_perftest with -y (UCX 1.15 and later; Debian's 1.13 has none), where one is built.
COPYING_PERFTEST = Path(os.environ.get("BENCHFS_COPYING_PERFTEST", "/opt/ucx/bin/ucx_perftest"))
needs_perftest = pytest.mark.skipif(
    shutil.which("ucx_perftest") is None, reason="ucx_perftest (ucx-utils)"
)
needs_examples = pytest.mark.skipif(
    not (EXAMPLES / "am_pingpong").is_file()
    or not (EXAMPLES / "core_to_core").is_file()
    or (os.cpu_count() or 1) < 2,
    reason=f"the UCX examples built in {EXAMPLES} (make examples) and CPUs 0 and 1",
)


def _benchfs(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", "bench", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def _tcp_report(*extra: str) -> dict[str, Any]:
    done = _benchfs(
        "rpc", "--json", "--transport", "tcp", "--examples-dir", str(EXAMPLES),
        "--rounds", str(ROUNDS), "--lat-iterations", "200", "--bw-iterations", "10", *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)
    assert isinstance(result, dict)
    return result


@pytest.fixture(scope="module")
def tcp_report() -> dict[str, Any]:
    return _tcp_report("--bulk-spin-us", "300")


@needs_perftest
@needs_examples
def test_bench_rpc_json_names_each_reference_and_what_it_reads(tcp_report: dict[str, Any]) -> None:
    assert (tcp_report["transport"], tcp_report["rounds"]) == ("tcp", ROUNDS)
    cases = {case["name"]: case for case in tcp_report["cases"]}
    assert set(cases) == {"4 KiB RTT p50", "1 MiB bandwidth"}
    rtt, bw = cases["4 KiB RTT p50"], cases["1 MiB bandwidth"]
    assert (rtt["higher_is_better"], rtt["target"]) == (False, 1.5)
    assert (bw["higher_is_better"], bw["target"]) == (True, 0.95)
    rtt_refs = {c["key"]: c for c in rtt["comparisons"]}
    perftest = tcp_report["perftest"]
    assert perftest["binary"] == shutil.which("ucx_perftest")
    has_y = (
        "\n     -y "
        in subprocess.run(["ucx_perftest", "-h"], capture_output=True, text=True, check=True).stdout
    )
    assert perftest["copies"] is has_y
    assert perftest["ucx_version"] == tcp_report["engine_ucx_version"]  # both the system's
    copying = {"ucx_perftest_copy"} if has_y else set()
    assert set(rtt_refs) == {"ucx_perftest", "am_pingpong_recv_copy", *copying}
    # Plain ucp_am_lat never reads the payload; the --recv-copy ping-pong does.
    assert rtt_refs["ucx_perftest"]["reads_payload"] is False
    assert rtt_refs["ucx_perftest"]["like_for_like"] is False
    assert rtt_refs["am_pingpong_recv_copy"]["like_for_like"] is True
    bw_refs = {c["key"]: c for c in bw["comparisons"]}
    assert set(bw_refs) == {"ucx_perftest", "ucx_perftest_private", "am_pingpong"}
    assert all(c["reads_payload"] for c in bw_refs.values())
    # am_pingpong sends from huge pages and receives into a buffer per message in
    # flight, as the engine does; perftest does neither, and says how it differs.
    differs = {k: (c["like_for_like"], c["differs"]) for k, c in bw_refs.items()}
    assert differs == {
        "ucx_perftest": (False, "SysV shared memory; one receive buffer"),
        "ucx_perftest_private": (False, "never-written source: the zero page; one receive buffer"),
        "am_pingpong": (True, ""),
    }
    for row in bw["rounds"]:
        assert row["ucx_perftest_private"] > 0 and row["ucx_perftest"] > 0
    e2e = tcp_report["e2e"]
    for op in ("write", "read"):
        assert 0 < e2e[f"{op}_p50_us"] <= e2e[f"{op}_p99_us"]
    assert e2e["rtt_p99_us"] > 0
    daemon = tcp_report["daemon"]
    assert daemon["registered_after_ms"] >= 0
    assert daemon["rss_over_pool_MiB"] == pytest.approx(
        daemon["peak_rss_MiB"] - daemon["buffer_pool_MiB"]
    )
    assert len(tcp_report["loadavg_start"]) == len(tcp_report["loadavg_end"]) == 3
    # The daemon was started with the idle policy asked for, and says how its looks went.
    idle = tcp_report["idle_policy"]
    assert idle["bulk_spin_us"] == 300
    assert idle["bulk_spin_free"] >= 0 and idle["bulk_spin_busy"] >= 0


@needs_examples
def test_bench_rpc_compares_with_a_perftest_that_copies_where_one_is_built() -> None:
    if not COPYING_PERFTEST.is_file():
        pytest.skip(f"no ucx_perftest with -y at {COPYING_PERFTEST} ($BENCHFS_COPYING_PERFTEST)")
    report = _tcp_report("--perftest", str(COPYING_PERFTEST))
    assert report["perftest"]["binary"] == str(COPYING_PERFTEST)
    assert report["perftest"]["copies"] is True
    rtt = next(case for case in report["cases"] if case["name"] == "4 KiB RTT p50")
    refs = {c["key"]: c for c in rtt["comparisons"]}
    assert set(refs) == {"ucx_perftest", "ucx_perftest_copy", "am_pingpong_recv_copy"}
    copying = refs["ucx_perftest_copy"]
    assert (copying["reads_payload"], copying["like_for_like"]) == (True, True)
    for number, row in enumerate(rtt["rounds"], start=1):
        assert row["round"] == number and row["ucx_perftest_copy"] > 0 and row["ucx_perftest"] > 0
    assert refs["ucx_perftest_copy"]["ratio"]["per_round"] == pytest.approx(
        [r["engine"] / r["ucx_perftest_copy"] for r in rtt["rounds"] if r["counted"]], abs=1e-3
    )


@needs_perftest
@needs_examples
def test_bench_rpc_records_the_placement_of_every_round(tcp_report: dict[str, Any]) -> None:
    for case in tcp_report["cases"]:
        rounds = case["rounds"]
        assert [r["round"] for r in rounds] == list(range(1, ROUNDS + 1))
        # The engine goes first in odd-numbered rounds, the references first in the others.
        assert [r["order"] for r in rounds] == ["engine first", "references first"]
        for r in rounds:
            before, after = r["core_to_core_ns"]
            assert before > 0 and after > 0
            steady = max(before, after) <= 1.5 * min(before, after)
            assert r["counted"] is steady
            assert r["placement"] == (
                "changed" if not steady else ("far" if min(before, after) >= 150 else "near")
            )
        assert case["rounds_counted"] == sum(r["counted"] for r in rounds)


@needs_perftest
@needs_examples
def test_bench_rpc_ratios_are_per_round_over_counted_rounds(tcp_report: dict[str, Any]) -> None:
    for case in tcp_report["cases"]:
        counted = [r for r in case["rounds"] if r["counted"]]
        for r in case["rounds"]:
            assert r["engine"] > 0
        for comparison in case["comparisons"]:
            key = comparison["key"]
            per_round = [r["engine"] / r[key] for r in counted]
            ratio = comparison["ratio"]
            assert ratio["rounds"] == len(counted)
            assert ratio["per_round"] == pytest.approx(per_round, abs=1e-3)
            if not counted:
                assert comparison["met"] is None
                continue
            median = statistics.median(per_round)
            assert ratio["median"] == pytest.approx(median, abs=1e-3)
            assert ratio["min"] == pytest.approx(min(per_round), abs=1e-3)
            assert ratio["max"] == pytest.approx(max(per_round), abs=1e-3)
            assert ratio["min"] <= ratio["q1"] <= ratio["median"] <= ratio["q3"] <= ratio["max"]
            assert comparison["reference_median"] == pytest.approx(
                statistics.median(r[key] for r in counted)
            )
            target = case["target"]
            met = median >= target if case["higher_is_better"] else median <= target
            assert comparison["met"] is met


def test_bench_rpc_errors_are_one_line(tmp_path: Path) -> None:
    bad = _benchfs("rpc", "--transport", "carrier-pigeon", "--rounds", "1")
    assert bad.returncode == 2
    assert "'carrier-pigeon' is not auto or tcp" in bad.stderr and "Traceback" not in bad.stderr
    no_rounds = _benchfs("rpc", "--transport", "tcp", "--rounds", "0")
    assert no_rounds.returncode == 2 and "--rounds" in no_rounds.stderr
    bad_spin = _benchfs("rpc", "--transport", "tcp", "--bulk-spin-us", "-1")
    assert bad_spin.returncode == 2 and "--bulk-spin-us" in bad_spin.stderr
    assert "Traceback" not in bad_spin.stderr
    no_examples = _benchfs("rpc", "--transport", "tcp", "--examples-dir", str(tmp_path))
    assert no_examples.returncode == 2, no_examples.stderr
    assert no_examples.stderr.strip() == (
        f"error: {tmp_path}: no am_pingpong and core_to_core there (--examples-dir): build them "
        "with `make examples` in a BenchFS source tree"
    )


@needs_examples
def test_bench_rpc_without_perftest_says_what_to_install() -> None:
    no_tool = _benchfs(
        "rpc", "--transport", "tcp", "--rounds", "1", "--examples-dir", str(EXAMPLES),
        env={**os.environ, "PATH": str(Path(sys.executable).parent)},
    )  # fmt: skip
    assert no_tool.returncode == 2
    assert no_tool.stderr.strip() == "error: ucx_perftest not found (install ucx-utils)"
    elsewhere = _benchfs(
        "rpc", "--transport", "tcp", "--rounds", "1", "--examples-dir", str(EXAMPLES),
        "--perftest", "/no/such/ucx_perftest",
    )  # fmt: skip
    assert elsewhere.returncode == 2
    assert elsewhere.stderr.strip() == "error: ucx_perftest /no/such/ucx_perftest not found"
