"""ucx_perftest as the RPC yardstick: real server and client runs, parsed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchfs.errors import ToolError
from benchfs.tools.ucx_perftest import (
    client_argv,
    parse_report,
    probe_perftest,
    run_perftest,
    server_argv,
)

pytestmark = pytest.mark.skipif(
    shutil.which("ucx_perftest") is None, reason="ucx_perftest (ucx-utils) is not installed"
)
# A ucx_perftest with -y (UCX 1.15 and later; Debian's 1.13 has none), where one is built.
COPYING_PERFTEST = Path(os.environ.get("BENCHFS_COPYING_PERFTEST", "/opt/ucx/bin/ucx_perftest"))


def test_command_lines_are_exact() -> None:
    assert client_argv("ucp_am_lat", 4096, 1000, 13500) == [
        "ucx_perftest", "localhost", "-p", "13500", "-t", "ucp_am_lat",
        "-s", "4096", "-n", "1000", "-f", "-v",
    ]  # fmt: skip
    assert server_argv(13500) == ["ucx_perftest", "-p", "13500"]
    assert client_argv("ucp_am_lat", 8, 10, 13500, cpu=0)[:3] == ["ucx_perftest", "-c", "0"]
    assert server_argv(13500, cpu=1) == ["ucx_perftest", "-c", "1", "-p", "13500"]
    built = "/opt/ucx/bin/ucx_perftest"
    assert client_argv("ucp_am_lat", 4096, 10, 13500, binary=built, recv_copy=True) == [
        built, "localhost", "-p", "13500", "-t", "ucp_am_lat",
        "-s", "4096", "-n", "10", "-f", "-v", "-y",
    ]  # fmt: skip
    assert server_argv(13500, binary=built) == [built, "-p", "13500"]


def test_the_probe_reads_the_perftest_s_ucx_and_options() -> None:
    found = probe_perftest()
    assert found.binary == shutil.which("ucx_perftest")
    said = subprocess.run(["ucx_info", "-v"], capture_output=True, text=True, check=True).stdout
    assert re.match(rf"# (Library version:|Version) {re.escape(found.ucx_version)}\n", said)
    usage = subprocess.run(["ucx_perftest", "-h"], capture_output=True, text=True).stdout
    assert found.copies is bool(re.search(r"^\s*-y\s", usage, re.MULTILINE))
    with pytest.raises(ToolError, match=r"^ucx_perftest /no/such/perftest not found$"):
        probe_perftest("/no/such/perftest")
    if not found.copies:
        # -y reaches the perftest: one without it refuses it, and that is the error.
        with pytest.raises(ToolError, match="-y exited with 129"):
            run_perftest("ucp_am_lat", 4096, 10, recv_copy=True, timeout_s=30)


def test_a_perftest_with_y_runs_copying_where_one_is_built() -> None:
    if not COPYING_PERFTEST.is_file():
        pytest.skip(f"no ucx_perftest with -y at {COPYING_PERFTEST} ($BENCHFS_COPYING_PERFTEST)")
    found = probe_perftest(str(COPYING_PERFTEST))
    assert found.copies and found.ucx_version != "unknown"
    copied = run_perftest("ucp_am_lat", 4096, 2000, binary=found.binary, recv_copy=True)
    assert copied.iterations == 2000 and copied.half_rtt_p50_us > 0


def test_pinned_run_pins_both_processes() -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs to pin the two processes apart")
    lat = run_perftest("ucp_am_lat", 4096, 2000, cpus=(0, 1))
    assert lat.iterations == 2000
    assert 0 < lat.half_rtt_p50_us < 10_000
    # The CPU reaches perftest: one it does not have is refused.
    with pytest.raises(ToolError, match="ucx_perftest"):
        run_perftest("ucp_am_lat", 8, 10, cpus=(4096, 1), timeout_s=30)


@pytest.mark.parametrize("tls", [None, "tcp"])
def test_real_latency_and_bandwidth_runs_parse(tls: str | None) -> None:
    env = dict(os.environ)
    env.pop("UCX_TLS", None)
    if tls:
        env["UCX_TLS"] = tls
    lat = run_perftest("ucp_am_lat", 4096, 2000, env=env)
    assert lat.iterations == 2000
    assert 0 < lat.half_rtt_p50_us < 10_000
    assert lat.rtt_p50_us == 2 * lat.half_rtt_p50_us
    bw = run_perftest("ucp_am_bw", 1 << 20, 200, env=env)
    assert bw.bandwidth_MiBps > 10


def test_output_without_a_report_is_named() -> None:
    with pytest.raises(ToolError, match="no CSV report"):
        parse_report("+------+\n| ucx |\n", test="ucp_am_lat", size=8)
    with pytest.raises(ToolError, match="unexpected report row"):
        parse_report("iterations,avg_lat\n10,abc\n", test="ucp_am_lat", size=8)


def test_a_failing_client_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    env = dict(os.environ)
    env["UCX_TLS"] = "no_such_transport"
    with pytest.raises(ToolError, match="ucx_perftest"):
        run_perftest("ucp_am_lat", 8, 10, env=env, timeout_s=30)
