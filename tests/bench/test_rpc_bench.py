"""`benchfs bench rpc` end to end (tiny sizes): the JSON it prints, the ratios in it, and its
errors. Only the structure and the arithmetic are checked; whether a target is met depends on
the machine (docs/PERFORMANCE.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def _benchfs(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", "bench", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


@pytest.mark.skipif(shutil.which("ucx_perftest") is None, reason="ucx_perftest (ucx-utils)")
def test_bench_rpc_json_has_both_sides_and_their_ratios() -> None:
    done = _benchfs(
        "rpc", "--json", "--transport", "tcp",
        "--rounds", "1", "--lat-iterations", "100", "--bw-iterations", "10",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)
    assert (result["transport"], result["rounds"]) == ("tcp", 1)
    cases = {case["name"]: case for case in result["cases"]}
    assert set(cases) == {"4 KiB round trip p50", "1 MiB bandwidth"}
    assert cases["4 KiB round trip p50"]["higher_is_better"] is False
    assert cases["1 MiB bandwidth"]["higher_is_better"] is True
    for case in cases.values():
        assert case["engine"] > 0 and case["ucx_perftest"] > 0
        assert case["ratio"] == pytest.approx(case["engine"] / case["ucx_perftest"], rel=1e-6)
        better = (
            case["ratio"] >= case["target"]
            if case["higher_is_better"]
            else (case["ratio"] <= case["target"])
        )
        assert case["met"] is better
    e2e: dict[str, Any] = result["e2e"]
    for op in ("write", "read"):
        assert 0 < e2e[f"{op}_p50_us"] <= e2e[f"{op}_p99_us"]
    assert e2e["rtt_p99_us"] > 0
    daemon = result["daemon"]
    assert daemon["registered_after_ms"] >= 0
    assert daemon["rss_over_pool_MiB"] == pytest.approx(
        daemon["peak_rss_MiB"] - daemon["buffer_pool_MiB"]
    )


def test_bench_rpc_errors_are_one_line() -> None:
    bad = _benchfs("rpc", "--transport", "carrier-pigeon", "--rounds", "1")
    assert bad.returncode == 2
    assert "'carrier-pigeon' is not auto or tcp" in bad.stderr and "Traceback" not in bad.stderr
    no_tool = _benchfs(
        "rpc", "--transport", "tcp", "--rounds", "1",
        env={**os.environ, "PATH": str(Path(sys.executable).parent)},
    )  # fmt: skip
    assert no_tool.returncode == 2
    assert no_tool.stderr.strip() == "error: ucx_perftest not found (install ucx-utils)"
