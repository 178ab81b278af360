"""Starting and stopping real processes: groups, SIGTERM, SIGKILL, deadlines."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from proc_helpers import alive

import benchfs
from benchfs.cluster.deadline import wait_until
from benchfs.cluster.processes import describe_status, start_process, stop_process, wait_process
from benchfs.errors import ConfigError, LaunchError

IGNORE_TERM = (
    "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
    "print(os.getpid(), flush=True); time.sleep(300)"
)


def first_line(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None
    return process.stdout.readline().decode().strip()


def test_stop_terminates_the_whole_group() -> None:
    process = start_process(
        ["sh", "-c", "sleep 300 & echo $!; wait"], name="shell", stdout=subprocess.PIPE
    )
    grandchild = int(first_line(process.popen))
    assert alive(grandchild)
    assert stop_process(process, grace_s=10) == -15
    assert process.ending == "SIGTERM"
    # The group got SIGTERM, and stop returns once the grandchild has died too.
    assert not alive(grandchild)


def test_sigterm_ignored_means_sigkill_after_grace() -> None:
    process = start_process(
        [sys.executable, "-c", IGNORE_TERM], name="stubborn", stdout=subprocess.PIPE
    )
    first_line(process.popen)  # the handler is installed once the pid is printed
    assert stop_process(process, grace_s=0.3) == -9
    assert process.ending == "SIGKILL"


def test_child_ignoring_sigterm_dies_with_its_group() -> None:
    script = f"{sys.executable} -c '{IGNORE_TERM}' & wait"
    process = start_process(["sh", "-c", script], name="leader", stdout=subprocess.PIPE)
    stubborn = int(first_line(process.popen))
    assert stop_process(process, grace_s=10) == -15  # the leader obeys SIGTERM
    # SIGKILLed once its leader is gone, and dead when stop returns.
    assert not alive(stubborn)


def test_already_exited_and_output_files(tmp_path: Path) -> None:
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    process = start_process(
        ["sh", "-c", "echo hello; echo oops >&2; exit 3"], name="short", stdout=out, stderr=err
    )
    assert wait_process(process, deadline_s=30) == 3
    assert stop_process(process, grace_s=1) == 3
    assert process.ending == "exited"
    assert (out.read_text(), err.read_text()) == ("hello\n", "oops\n")


def test_start_failure_names_the_process() -> None:
    with pytest.raises(LaunchError, match="daemon@n1: cannot start '/nonexistent/benchfsd'"):
        start_process(["/nonexistent/benchfsd"], name="daemon@n1")


def test_wait_process_deadline_names_it() -> None:
    process = start_process(["sleep", "300"], name="sleeper")
    try:
        with pytest.raises(LaunchError) as error:
            wait_process(process, deadline_s=0.2)
        assert str(error.value) == (
            f"sleeper (pid {process.pid}) still running after the 0.2 s deadline"
        )
    finally:
        stop_process(process, grace_s=5)


def test_wait_until_done_timeout_and_dead_process() -> None:
    calls = iter([" missing n1", "missing n1", None])
    wait_until(lambda: next(calls), deadline_s=30, what="registration", interval_s=0.01)

    with pytest.raises(ConfigError) as error:
        wait_until(
            lambda: "missing n3, n7",
            deadline_s=0.2,
            what="daemons to register",
            error=ConfigError,
        )
    assert (
        str(error.value) == "timed out after 0.2 s waiting for daemons to register: missing n3, n7"
    )

    dying = start_process(["sh", "-c", "exit 7"], name="daemon@n2")
    with pytest.raises(LaunchError) as died:
        wait_until(lambda: "missing n2", deadline_s=60, what="daemons to register", watch=[dying])
    assert str(died.value) == (
        f"daemon@n2 (pid {dying.pid}) exited with status 7 while waiting for daemons to register"
        " (missing n2)"
    )


def test_status_descriptions() -> None:
    assert describe_status(0) == "exited with status 0"
    assert describe_status(-9) == "was killed by SIGKILL"
    assert describe_status(-200) == "was killed by signal 200"


PARENT = """
import sys
import textwrap
from benchfs.cluster.processes import start_process
child = start_process(["sleep", "300"], name="orphan", die_with_parent=True)
print(child.pid, flush=True)
sys.stdin.read()
"""


def test_die_with_parent_when_the_parent_is_killed() -> None:
    root = str(Path(benchfs.__file__).parent.parent)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": root},
    )
    try:
        orphan = int(first_line(parent))
        assert alive(orphan)
        parent.kill()  # no cleanup code runs in the parent: the kernel must do it
        parent.wait()
        wait_until(
            lambda: f"pid {orphan} alive" if alive(orphan) else None,
            deadline_s=30,
            what="the orphan to receive SIGTERM",
        )
        assert not alive(orphan)
    finally:
        parent.kill()
        parent.wait()


HELD_SCRIPT = textwrap.dedent(
    """
    import os, signal
    from benchfs.cluster.processes import descendants, start_process

    def stop(signum, frame):
        raise SystemExit(3)

    signal.signal(signal.SIGTERM, stop)
    armed = [True]

    def arrives_while_starting():  # Popen runs it between fork and its return
        if armed:
            armed.clear()
            os.kill(os.getpid(), signal.SIGTERM)

    os.register_at_fork(after_in_parent=arrives_while_starting)
    try:
        start_process(["sleep", "300"], name="sleeper", die_with_parent=True)
        print("went on", flush=True)
    finally:
        print("left", len(descendants(os.getpid())), flush=True)
    """
)


def test_a_signal_while_starting_comes_after_and_stops_the_unreturned_process() -> None:
    # Its handler raised out of start_process: nobody holds the process to stop it.
    root = str(Path(benchfs.__file__).parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", HELD_SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert done.stdout.split() == ["left", "0"]
