"""A process whose output says it can no longer finish (a launcher such as
Hydra's mpiexec, waiting forever for proxies that could not reach it): waits
on it end at that line, with the line and the advice, not at the deadline."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from benchfs.cluster.deadline import wait_until
from benchfs.cluster.processes import start_process, stop_process, wait_process
from benchfs.cluster.stuck import StuckOutput
from benchfs.errors import LaunchError

LINE = "[proxy:0:1@n7] main (pm/pmiserv/pmip.c:149): unable to connect to server n0 at port 4242"
UNREACHED = StuckOutput(re.compile("unable to connect to server"), "check the network")
# Longer than a wait would ever take: reaching it means the line was missed.
NEVER_S = 600.0
pytestmark = pytest.mark.timeout(120)


def test_a_wait_ends_at_the_line_after_megabytes_of_other_output(tmp_path: Path) -> None:
    # More output before the line than one check reads: it is caught up over several.
    script = f"head -c 3000000 /dev/zero | tr '\\0' x; echo; echo '{LINE}'; exec sleep 300"
    process = start_process(
        ["sh", "-c", script],
        name="launcher",
        stdout=tmp_path / "out.log",
        stderr=subprocess.STDOUT,
        stuck_when=UNREACHED,
    )
    try:
        with pytest.raises(LaunchError) as failed:
            wait_process(process, NEVER_S)
        assert str(failed.value) == (
            f"launcher (pid {process.pid}) cannot finish: {LINE} (check the network)"
        )
        assert process.returncode is None  # still waiting, as Hydra's mpiexec does
    finally:
        stop_process(process, grace_s=5)


def test_a_line_written_in_two_parts_on_stderr_ends_a_wait_until(tmp_path: Path) -> None:
    half = len(LINE) // 2
    script = f"printf '%s' '{LINE[:half]}' >&2; sleep 0.3; echo '{LINE[half:]}' >&2; exec sleep 300"
    process = start_process(
        ["sh", "-c", script],
        name="daemons",
        stdout=tmp_path / "out.log",
        stderr=tmp_path / "err.log",
        stuck_when=UNREACHED,
    )
    try:
        with pytest.raises(LaunchError) as failed:
            wait_until(lambda: "missing n1", deadline_s=NEVER_S, what="1 daemon", watch=[process])
        message = str(failed.value)
        assert message.startswith(
            f"daemons (pid {process.pid}) cannot finish, while waiting for 1 daemon (missing n1):"
        )
        assert message.endswith(f"{LINE} (check the network)")
    finally:
        stop_process(process, grace_s=5)


def test_without_the_line_a_process_runs_to_its_end_or_its_deadline(tmp_path: Path) -> None:
    talks = start_process(
        ["sh", "-c", "echo 'connected to server n0'; exit 0"],
        name="launcher",
        stdout=tmp_path / "ok.log",
        stuck_when=UNREACHED,
    )
    assert wait_process(talks, NEVER_S) == 0
    assert talks.stuck() is None
    # Not told what to look for: the line is just output, and the deadline ends the wait.
    unwatched = start_process(
        ["sh", "-c", f"echo '{LINE}'; exec sleep 300"], name="launcher", stdout=tmp_path / "u.log"
    )
    try:
        with pytest.raises(LaunchError, match=r"still running after the 0\.5 s deadline"):
            wait_process(unwatched, 0.5)
        assert unwatched.stuck() is None
    finally:
        stop_process(unwatched, grace_s=5)


def test_a_file_it_cannot_read_is_not_watched_and_the_wait_still_ends(tmp_path: Path) -> None:
    with (tmp_path / "w.log").open("wb") as write_only:
        process = start_process(
            ["sh", "-c", f"echo '{LINE}'"], name="launcher", stdout=write_only,
            stuck_when=UNREACHED,
        )  # fmt: skip
        assert wait_process(process, NEVER_S) == 0
        assert process.stuck() is None
