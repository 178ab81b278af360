"""SIGTERM and SIGHUP in the middle of `benchfs bench storage`, `bench rpc`
and `bench analysis` (real fio, ucx_perftest, a daemon, the UCX examples,
the analysis's own child): every process they started stops, and their
scratch directories and the temp files of the tools they ran go."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from run_helpers import needs_fio_and_iostat
from signal_helpers import (
    assert_stopped_cleanly,
    command_temp_dir,
    interrupt,
    mentioned,
    running,
)
from test_rpc_bench import EXAMPLES, needs_examples, needs_perftest


@needs_fio_and_iostat
@pytest.mark.parametrize(
    ("signum", "moment"),
    [(signal.SIGTERM, "fio"), (signal.SIGHUP, "engine")],
    ids=["SIGTERM-in-fio", "SIGHUP-in-the-engine"],
)
def test_a_signal_mid_bench_storage_stops_fio_and_removes_its_files(
    tmp_path: Path, signum: int, moment: str
) -> None:
    disk, temp = tmp_path / "disk", command_temp_dir(tmp_path)
    disk.mkdir()
    args = ["bench", "storage", "--dir", str(disk), "--seq-size", "256m", "--rand-size", "16m",
            "--queue-depth", "8", "--trace-repeats", "0", "--rounds", "1000"]  # fmt: skip

    def mid_run(pid: int) -> bool:
        if moment == "fio":
            return running(pid, "fio")
        # The engine's round comes first: its file is there before any fio has run.
        return any(path for path in disk.glob("benchfs-bench-*/engine/*"))

    stopped = interrupt(args, tmp_path, mid_run, signum, temp_dir=temp)
    # The engine runs in the command's own process.
    assert_stopped_cleanly(stopped, signum, tmp_path, in_process=moment == "engine")
    assert list(disk.iterdir()) == []
    assert list(temp.iterdir()) == []  # fio's log dir


@needs_perftest
@needs_examples
@pytest.mark.parametrize(
    ("signum", "tool"),
    [(signal.SIGTERM, "ucx_perftest"), (signal.SIGHUP, "am_pingpong")],
    ids=["SIGTERM-in-ucx_perftest", "SIGHUP-in-am_pingpong"],
)
def test_a_signal_mid_bench_rpc_stops_its_daemon_and_tools(
    tmp_path: Path, signum: int, tool: str
) -> None:
    temp = command_temp_dir(tmp_path)
    args = ["bench", "rpc", "--transport", "tcp", "--examples-dir", str(EXAMPLES),
            "--lat-iterations", "2000", "--bw-iterations", "100", "--rounds", "1000"]  # fmt: skip

    # Mid-run: the daemon up and the reference running beside it (not the
    # probe of ucx_perftest's options, which runs before the daemon starts).
    def mid_run(pid: int) -> bool:
        return running(pid, tool) and mentioned(pid, "benchfs.node.daemon")

    stopped = interrupt(args, tmp_path, mid_run, signum, temp_dir=temp)
    assert_stopped_cleanly(stopped, signum, tmp_path)
    # The daemon's config, data, registry and log were in its scratch dir.
    assert list(temp.iterdir()) == []


def test_a_signal_while_a_tool_is_probed_ends_the_command_as_anywhere_else(
    tmp_path: Path,
) -> None:
    """Before a benchmark takes anything it asks its tools what they can do;
    a SIGTERM then (here: a ucx_perftest that hangs on ``-h``, as a binary on
    a stuck file system does) ends it with its line and exit code too, and
    the probe goes with it."""
    hanging = tmp_path / "ucx_perftest"
    hanging.write_text("#!/bin/sh\nexec sleep 600\n")
    hanging.chmod(0o700)
    args = ["bench", "rpc", "--perftest", str(hanging)]
    stopped = interrupt(args, tmp_path, lambda pid: running(pid, "sleep"), signal.SIGTERM)
    assert_stopped_cleanly(stopped, signal.SIGTERM, tmp_path)


@pytest.mark.parametrize(
    ("signum", "moment"),
    [(signal.SIGTERM, "measuring"), (signal.SIGHUP, "generating")],
    ids=["SIGTERM-in-the-measuring-child", "SIGHUP-in-the-traces"],
)
def test_a_signal_mid_bench_analysis_stops_its_child_and_removes_the_traces(
    tmp_path: Path, signum: int, moment: str
) -> None:
    temp = command_temp_dir(tmp_path)
    args = ["bench", "analysis", "--events", "2000000"]

    def mid_run(pid: int) -> bool:
        if moment == "measuring":
            return mentioned(pid, "benchfs.bench.analysis")  # its measuring child
        return any(temp.glob("benchfs-analysis-bench-*/traces"))

    stopped = interrupt(args, tmp_path, mid_run, signum, temp_dir=temp)
    # The traces are generated in the command's own process.
    assert_stopped_cleanly(stopped, signum, tmp_path, in_process=moment == "generating")
    assert list(temp.iterdir()) == []
