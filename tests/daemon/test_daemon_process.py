"""``benchfs daemon --config`` as a real process: registration, SIGTERM,
and startup failures that must be one clear line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import benchfs_native as bn

DEADLINE_S = 60.0


def _write_config(path: Path, **values: object) -> Path:
    lines = [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _start(
    config: Path, *extra: str, program: tuple[str, ...] = ("benchfs", "daemon")
) -> subprocess.Popen[str]:
    """``program`` (a module and its arguments, for ``python -m``) serving
    ``config``, outside any launcher's rank."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_RANK") and k != "SLURM_PROCID"}
    return subprocess.Popen(
        [sys.executable, "-m", *program, "--config", str(config), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _run(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    proc = _start(config, *extra)
    try:
        out, err = proc.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"benchfs daemon still running after {DEADLINE_S} s")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _wait_for_record(record: Path, proc: subprocess.Popen[str]) -> dict[str, object]:
    until = time.monotonic() + DEADLINE_S
    while time.monotonic() < until:
        if record.exists():
            data: dict[str, object] = json.loads(record.read_text(encoding="utf-8"))
            return data
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"daemon exited with {proc.returncode} before registering: {err}")
        time.sleep(0.02)
    proc.kill()
    proc.communicate()
    pytest.fail(f"no registry record {record} within {DEADLINE_S} s")


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


# SIGHUP too: a daemon started from a terminal stops cleanly when it closes.
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_registers_then_a_stop_signal_stops_cleanly(tmp_path: Path, signum: int) -> None:
    registry = tmp_path / "registry"
    config = _write_config(
        tmp_path / "daemon.toml",
        node_name="file-name",
        node_id=3,
        data_dir=str(tmp_path / "data" / "{node_name}-{node_id}"),
        registry_dir=str(registry),
        buffer_pool_size="16m",
        max_concurrency=4,
    )
    proc = _start(config, "--node-id", "7", "--node-name", "cli-name")
    try:
        record = _wait_for_record(registry / "cli-name.json", proc)
        assert record["node_id"] == 7
        assert record["pid"] == proc.pid
        address = record["worker_address"]
        assert isinstance(address, str) and len(address) > 0
        bytes.fromhex(address)
        assert record["data_dir"] == str(tmp_path / "data" / "cli-name-7")
        assert (tmp_path / "data" / "cli-name-7").is_dir()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert not (registry / "cli-name.json").exists(), "record left behind"
    assert "benchfs daemon cli-name (node 7) registered in" in err
    assert f"stopped ({signal.Signals(signum).name}, drained)" in err


# A launcher may pass a stop signal on more than once (Hydra was seen to,
# to a daemon already fsyncing and unregistering): however many come and
# whenever, the daemon stops once, says so and exits 0.
@pytest.mark.parametrize(
    "program", [("benchfs", "daemon"), ("benchfs.node.daemon",)], ids=["cli", "node-program"]
)
def test_a_burst_of_stop_signals_stops_the_daemon_once(
    tmp_path: Path, program: tuple[str, ...]
) -> None:
    registry = tmp_path / "registry"
    config = _write_config(
        tmp_path / "daemon.toml",
        node_name="burst",
        node_id=0,
        data_dir=str(tmp_path / "data"),
        registry_dir=str(registry),
        buffer_pool_size="16m",
        max_concurrency=4,
    )
    proc = _start(config, program=program)
    sent = 0
    try:
        _wait_for_record(registry / "burst.json", proc)
        # Until it has exited: through the drain, the fsyncs, the
        # unregistering and the interpreter's own exit.
        until = time.monotonic() + DEADLINE_S
        while proc.poll() is None and time.monotonic() < until:
            proc.send_signal(signal.SIGTERM)
            sent += 1
            time.sleep(0.001)
        _, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert sent > 1
    assert proc.returncode == 0, err
    assert err.count("stopped (SIGTERM, drained)") == 1, err
    assert not (registry / "burst.json").exists(), "record left behind"


def test_unknown_key_names_the_key_and_the_file(tmp_path: Path) -> None:
    config = _write_config(
        tmp_path / "bad.toml",
        node_id=0,
        registry_dir=str(tmp_path / "reg"),
        chunk_sise="4m",
    )
    result = _run(config)
    assert result.returncode != 0
    lines = _error_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    assert "chunk_sise" in lines[0] and str(config) in lines[0]
    assert "Traceback" not in result.stderr


def test_bad_value_names_the_key_and_the_file(tmp_path: Path) -> None:
    config = _write_config(
        tmp_path / "bad.toml",
        node_id=0,
        registry_dir=str(tmp_path / "reg"),
        durability="sometimes",
    )
    result = _run(config)
    assert result.returncode != 0
    lines = _error_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    assert "durability" in lines[0] and str(config) in lines[0]


def test_missing_node_id_without_a_launcher_rank(tmp_path: Path) -> None:
    config = _write_config(tmp_path / "d.toml", registry_dir=str(tmp_path / "reg"))
    result = _run(config)
    assert result.returncode != 0
    lines = _error_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    assert "node_id" in lines[0] and "OMPI_COMM_WORLD_RANK" in lines[0]


@pytest.mark.parametrize("case", ["parent-is-a-file", "parent-cannot-be-created", "unwritable"])
def test_unusable_data_dir_is_one_line(tmp_path: Path, case: str) -> None:
    if case == "parent-is-a-file":
        (tmp_path / "afile").write_text("x")
        data_dir = str(tmp_path / "afile" / "data")
    elif case == "parent-cannot-be-created":
        data_dir = "/proc/benchfs-no-such-dir/data"
    else:
        if os.geteuid() == 0:
            # Root writes anywhere a mode allows: use a file system that refuses.
            data_dir = "/sys/fs"
        else:
            locked = tmp_path / "locked"
            locked.mkdir()
            locked.chmod(0o500)
            data_dir = str(locked)
    registry = tmp_path / "reg"
    config = _write_config(
        tmp_path / "d.toml",
        node_name="n0",
        node_id=0,
        data_dir=data_dir,
        registry_dir=str(registry),
        buffer_pool_size="4m",
    )
    result = _run(config)
    assert result.returncode != 0
    lines = _error_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    assert "data_dir" in lines[0], lines[0]
    assert "Traceback" not in result.stderr
    assert not (registry / "n0.json").exists()


_RESTORE_SCRIPT = """
import os, signal, sys
import benchfs_native
summary = benchfs_native.serve_daemon(
    node_name="sig0", node_id=0, daemon_index=0, data_dir=sys.argv[1] + "/data",
    registry_dir=sys.argv[1] + "/registry", chunk_size=1 << 20, buffer_pool_size=4 << 20,
    durability="fsync_on_close", transport="auto", max_concurrency=2, trace_dir=None,
    shutdown_deadline_s=5.0,
)
print("stop_reason", summary["stop_reason"], summary["drained"], flush=True)
try:
    os.kill(os.getpid(), signal.SIGINT)
    signal.sigtimedwait([], 0.5)  # lets the pending Python handler run
except KeyboardInterrupt:
    print("python SIGINT handler back", flush=True)
"""


def test_sigint_stops_serve_daemon_and_python_gets_its_handler_back(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _RESTORE_SCRIPT, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_record(tmp_path / "registry" / "sig0.json", proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "stop_reason SIGINT True" in out
    assert "python SIGINT handler back" in out, out + err
    assert not (tmp_path / "registry" / "sig0.json").exists()


def test_a_shutdown_request_stops_the_process_cleanly(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    config = _write_config(
        tmp_path / "daemon.toml",
        node_name="asked",
        node_id=0,
        data_dir=str(tmp_path / "data" / "{node_name}"),
        registry_dir=str(registry),
        buffer_pool_size="16m",
        max_concurrency=4,
    )
    proc = _start(config)
    try:
        _wait_for_record(registry / "asked.json", proc)
        client = bn.Client(str(registry), ["asked"], connect_deadline_s=DEADLINE_S)
        handle = client.create("kept")
        client.write(handle, 0, b"written before the request")
        client.close(handle)
        ino = client.stat("kept")["ino"]
        client.shutdown_daemons()
        assert not client.connected
        _, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert not (registry / "asked.json").exists(), "record left behind"
    assert "stopped (shutdown request, drained)" in err, err
    # A clean stop keeps the data: the backing file (named by the file's id) is still there.
    kept = tmp_path / "data" / "asked" / f"@{ino:016x}"
    assert kept.read_bytes() == b"written before the request"
