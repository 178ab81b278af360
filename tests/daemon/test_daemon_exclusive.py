"""Two real ``benchfs daemon`` processes that would share a data directory
or a registry name: the second is refused with one line naming what is
held and by whom, and the first keeps its record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

DEADLINE_S = 60.0


def _config(path: Path, *, name: str, data_dir: Path, registry: Path) -> Path:
    values = {
        "node_name": name,
        "node_id": 0,
        "data_dir": str(data_dir),
        "registry_dir": str(registry),
        "buffer_pool_size": "16m",
        "max_concurrency": 4,
    }
    path.write_text(
        "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items()), encoding="utf-8"
    )
    return path


def _start(config: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_RANK") and k != "SLURM_PROCID"}
    return subprocess.Popen(
        [sys.executable, "-m", "benchfs", "daemon", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


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
    pytest.fail(f"no registry record {record} within {DEADLINE_S} s")


def _refused(config: Path) -> str:
    proc = _start(config)
    try:
        _, err = proc.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"the second daemon still runs after {DEADLINE_S} s")
    assert proc.returncode != 0, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def test_second_daemon_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    registry = tmp_path / "registry"
    first = _start(_config(tmp_path / "a.toml", name="first", data_dir=data, registry=registry))
    try:
        _wait_for_record(registry / "first.json", first)
        line = _refused(
            _config(tmp_path / "b.toml", name="second", data_dir=data, registry=registry)
        )
        assert str(data) in line, line
        assert "daemon first" in line and f"pid {first.pid}" in line, line
        assert not (registry / "second.json").exists()
        assert first.poll() is None, "the first daemon stopped"
    finally:
        err = _stop(first)
    assert first.returncode == 0, err


def test_second_daemon_with_a_live_name_is_refused_and_the_first_keeps_its_record(
    tmp_path: Path,
) -> None:
    registry = tmp_path / "registry"
    record = registry / "twin.json"
    first = _start(
        _config(tmp_path / "a.toml", name="twin", data_dir=tmp_path / "d1", registry=registry)
    )
    try:
        held = _wait_for_record(record, first)
        assert held["pid"] == first.pid
        line = _refused(
            _config(tmp_path / "b.toml", name="twin", data_dir=tmp_path / "d2", registry=registry)
        )
        assert '"twin"' in line and f"pid {first.pid}" in line and str(registry) in line, line
        kept = json.loads(record.read_text(encoding="utf-8"))
        assert kept["pid"] == first.pid, "the second daemon replaced the record"
    finally:
        err = _stop(first)
    assert first.returncode == 0, err
    assert not record.exists(), "the first daemon left its record behind"
