"""The cleanup scope: processes, temp dirs and shared memory go away on error,
Ctrl-C and SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from proc_helpers import alive

import benchfs
from benchfs.cluster.deadline import wait_until
from benchfs.cluster.lifecycle import Lifecycle, Terminated, remove_shm_files
from benchfs.errors import BenchfsError

SHM = Path("/dev/shm")
needs_shm = pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm on this system")


@needs_shm
def test_cleanup_on_error(tmp_path: Path) -> None:
    prefix = f"benchfs-test-{os.getpid()}-"
    ours, other = SHM / f"{prefix}ring", SHM / f"benchfs-keep-{os.getpid()}"
    data_dir = tmp_path / "data"
    order: list[str] = []
    try:
        with (
            pytest.raises(RuntimeError, match="workload failed"),
            Lifecycle(grace_s=5, shm_prefix=prefix) as life,
        ):
            sleeper = life.start(["sleep", "300"], name="daemon@n1")
            scratch = life.temp_dir()
            data_dir.mkdir()
            (data_dir / "chunk").write_bytes(b"x")
            life.remove_at_exit(data_dir)
            ours.write_bytes(b"x")
            other.write_bytes(b"x")
            life.on_exit(lambda: order.append(f"first, stopped={sleeper.returncode is not None}"))
            life.on_exit(lambda: order.append("second"))
            raise RuntimeError("workload failed")
        assert not alive(sleeper.pid)
        assert sleeper.ending == "SIGTERM"
        assert order == ["second", "first, stopped=True"]
        assert not scratch.exists()
        assert not data_dir.exists()
        assert not ours.exists()
        assert other.exists()
        assert life.cleanup_errors == []
    finally:
        ours.unlink(missing_ok=True)
        other.unlink(missing_ok=True)


def test_cleanup_continues_past_failures_and_reports_them(tmp_path: Path) -> None:
    def broken() -> None:
        raise OSError("trace collection failed")

    with Lifecycle(grace_s=5, handle_signals=False) as life:
        life.on_exit(broken)
        scratch = life.temp_dir()
    assert not scratch.exists()
    assert len(life.cleanup_errors) == 1
    assert "trace collection failed" in life.cleanup_errors[0]


class _Cluster:
    def clean_remaining(self) -> None:
        """Remove the run's data dirs on every host."""
        raise OSError("Argument list too long")

    def stop_mounts(self) -> None:
        raise OSError("busy")


def test_a_failed_exit_step_is_named_in_words() -> None:
    cluster = _Cluster()
    with Lifecycle(grace_s=5, handle_signals=False) as life:
        life.on_exit(cluster.clean_remaining)
        life.on_exit(cluster.stop_mounts)
        life.on_exit(lambda: 1 / 0)
    assert life.cleanup_errors == [
        "cleanup: an exit step: division by zero",
        "cleanup: stop mounts: busy",
        "cleanup: Remove the run's data dirs on every host: Argument list too long",
    ]


def test_a_signal_carries_what_its_cleanup_could_not_do(tmp_path: Path) -> None:
    def broken() -> None:
        raise OSError("unmount refused")

    with pytest.raises(Terminated) as stopped, Lifecycle(grace_s=5, handle_signals=False) as life:
        life.on_exit(broken)
        scratch = life.temp_dir()
        raise Terminated(signal.SIGTERM)
    assert not scratch.exists()
    assert len(stopped.value.left) == 1
    assert "unmount refused" in stopped.value.left[0]


def test_prefix_too_broad(tmp_path: Path) -> None:
    with pytest.raises(BenchfsError, match="too broad"):
        Lifecycle(shm_prefix="")
    with pytest.raises(BenchfsError, match="too broad"):
        remove_shm_files("a/b", tmp_path)
    (tmp_path / "bfs-1").write_text("x")
    (tmp_path / "bfs-dir").mkdir()
    (tmp_path / "other").write_text("x")
    assert remove_shm_files("bfs-", tmp_path) == [tmp_path / "bfs-1", tmp_path / "bfs-dir"]
    assert [p.name for p in tmp_path.iterdir()] == ["other"]


SCRIPT = textwrap.dedent(
    """
    import sys, time, pathlib
    from benchfs.cluster.lifecycle import Lifecycle, Terminated
    report, prefix = pathlib.Path(sys.argv[1]), sys.argv[2]
    try:
        with Lifecycle(grace_s=5, shm_prefix=prefix) as life:
            sleeper = life.start(["sleep", "300"], name="sleeper")
            scratch = life.temp_dir()
            pathlib.Path("/dev/shm", prefix + "segment").write_bytes(b"x")
            report.with_suffix(".tmp").write_text(f"{sleeper.pid} {scratch}")
            report.with_suffix(".tmp").rename(report)
            time.sleep(300)
    except Terminated as stop:
        sys.exit(100 + stop.signum)
    except KeyboardInterrupt:
        sys.exit(99)
    """
)


@needs_shm
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 115), (signal.SIGINT, 99)])
def test_cleanup_on_signal(tmp_path: Path, signum: int, status: int) -> None:
    report = tmp_path / "report"
    prefix = f"benchfs-sig-{os.getpid()}-{signum}-"
    root = str(Path(benchfs.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    runner = subprocess.Popen([sys.executable, "-c", SCRIPT, str(report), prefix], env=env)
    try:
        wait_until(
            lambda: None if report.exists() else "no report yet",
            deadline_s=60,
            what="the scope to start its sleeper",
        )
        pid_text, scratch = report.read_text().split(" ", 1)
        assert alive(int(pid_text))
        assert Path(scratch).is_dir()
        runner.send_signal(signum)
        assert runner.wait(timeout=60) == status
        assert not alive(int(pid_text))
        assert not Path(scratch).exists()
        assert list(SHM.glob(f"{prefix}*")) == []
    finally:
        runner.kill()
        runner.wait()
        remove_shm_files(prefix)


AT_FORK_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from benchfs.cluster.lifecycle import Lifecycle, Terminated
    signum, armed = int(sys.argv[1]), []

    def arrives_while_starting():  # Popen runs it between fork and its return
        if armed:
            armed.clear()
            os.kill(os.getpid(), signum)  # Python runs the handler here, unless held

    os.register_at_fork(after_in_parent=arrives_while_starting)
    life = Lifecycle(grace_s=5)
    try:
        with life:
            armed.append(True)
            life.start(["sleep", "300"], name="sleeper")
            print("went on", flush=True)
    except (Terminated, KeyboardInterrupt) as stop:
        print(type(stop).__name__, *(p.pid for p in life.processes), flush=True)
    """
)


@pytest.mark.parametrize(
    ("signum", "raised"),
    [
        (signal.SIGTERM, "Terminated"),
        (signal.SIGHUP, "Terminated"),
        (signal.SIGINT, "KeyboardInterrupt"),
    ],
)
def test_a_signal_while_a_process_starts_stops_the_scope_and_the_process(
    signum: int, raised: str
) -> None:
    # What a handler raises inside an at-fork callback is only printed: the
    # signal must wait until the process has started and been recorded.
    root = str(Path(benchfs.__file__).parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", AT_FORK_SCRIPT, str(int(signum))],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert "Exception ignored" not in done.stderr, done.stderr
    name, *pids = done.stdout.split()
    assert name == raised, done.stdout + done.stderr
    assert len(pids) == 1 and not alive(int(pids[0]))
