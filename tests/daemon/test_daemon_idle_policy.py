"""The daemon's idle policy, ``bulk_spin_us``: parsed and bounded in the daemon
file, the run config and at the engine's boundary, carried from a run's
``[cluster]`` into the daemon it starts, and an idle daemon that stays asleep
after a bulk stream."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import benchfs_native as bn
from benchfs.config import RunConfig, effective_config
from benchfs.config.model import DEFAULT_BULK_SPIN_US
from benchfs.daemon import parse_daemon_config, settings_for, write_daemon_config
from benchfs.daemon.settings import DaemonSettings
from benchfs.errors import ConfigError

SOURCE = "d.toml"
BASE = 'registry_dir = "/r"\nnode_id = 0\n'
DEADLINE_S = 60.0
MiB = 1 << 20
# CPU seconds an idle daemon (all its threads) may use over the watched
# interval: a spinning event loop alone would use about the whole interval.
WATCH_S = 2.0
# The policy switched on, as measured in docs/perf-log/rpc-1mib.md.
BULK_SPIN_ON_US = 2000
IDLE_CPU_BOUND_S = 0.2


def test_the_key_is_parsed_with_its_default() -> None:
    assert parse_daemon_config(BASE, SOURCE).bulk_spin_us == DEFAULT_BULK_SPIN_US == 0
    settings = parse_daemon_config(BASE + "bulk_spin_us = 0\n", SOURCE)
    assert settings.bulk_spin_us == 0
    settings = parse_daemon_config(BASE + "bulk_spin_us = 500\n", SOURCE)
    assert settings.model_copy(update={"node_name": "n"}).serve_kwargs()["bulk_spin_us"] == 500


@pytest.mark.parametrize("value", ["-1", "1000001", '"2ms"', "1.5", "true"])
def test_a_bad_value_names_the_file_and_the_key(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_daemon_config(BASE + f"bulk_spin_us = {value}\n", SOURCE)
    assert str(info.value).startswith(f"{SOURCE}: bulk_spin_us:"), info.value


def test_a_bad_run_config_value_names_the_key() -> None:
    with pytest.raises(ValueError, match=r"cluster\.bulk_spin_us|bulk_spin_us"):
        RunConfig.model_validate({"cluster": {"bulk_spin_us": -5}})


def test_the_engine_refuses_a_bad_value_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bulk_spin_us must be between 0 and 1000000, got -1"):
        bn.serve_daemon(
            node_name="bad", node_id=0, daemon_index=0, data_dir=str(tmp_path / "data"),
            registry_dir=str(tmp_path / "registry"), chunk_size=MiB, buffer_pool_size=4 * MiB,
            durability="none", transport="auto", max_concurrency=2, trace_dir=None,
            shutdown_deadline_s=5.0, bulk_spin_us=-1,
        )  # fmt: skip
    assert not (tmp_path / "registry").exists() or not any((tmp_path / "registry").iterdir())


def test_the_run_config_reaches_the_manifest_and_the_daemon(tmp_path: Path) -> None:
    config = RunConfig.model_validate({"cluster": {"bulk_spin_us": 700}})
    # What the manifest records of the run.
    assert effective_config(config)["cluster"]["bulk_spin_us"] == 700
    registry = tmp_path / "registry"
    settings = settings_for(
        config.cluster, node_name="policy0", node_id=0, daemon_index=0,
        data_dir=str(tmp_path / "data"), registry_dir=registry, trace_dir=None,
    )  # fmt: skip
    settings = settings.model_copy(update={"buffer_pool_size": 16 * MiB})
    path = write_daemon_config(tmp_path / "daemon.toml", settings)
    assert "bulk_spin_us = 700" in path.read_text()
    with _daemon(path, registry, "policy0") as proc:
        client = bn.Client(str(registry), ["policy0"], connect_deadline_s=DEADLINE_S)
        with client:
            assert client.stats(0)["bulk_spin_us"] == 700
        assert proc.poll() is None


def test_an_idle_daemon_stays_asleep_after_a_bulk_stream(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    settings = DaemonSettings(
        node_name="asleep0", node_id=0, data_dir=str(tmp_path / "data"),
        registry_dir=str(registry), buffer_pool_size=32 * MiB, buffered=True,
        bulk_spin_us=BULK_SPIN_ON_US,
    )  # fmt: skip
    path = write_daemon_config(tmp_path / "daemon.toml", settings)
    with _daemon(path, registry, "asleep0") as proc:
        client = bn.Client(str(registry), ["asleep0"], connect_deadline_s=DEADLINE_S)
        with client:
            # A bulk stream: the loop's long spin is armed when it ends.
            client.bench_ping(0, MiB, 200, warmup=10, echo=False, window=16)
            assert client.stats(0)["requests_total"] >= 210
            # The client stays connected: an open session must not keep it awake.
            before = _cpu_seconds(proc.pid)
            time.sleep(WATCH_S)
            used = _cpu_seconds(proc.pid) - before
        assert used < IDLE_CPU_BOUND_S, (
            f"the idle daemon used {used:.3f} CPU s in {WATCH_S} s (bound {IDLE_CPU_BOUND_S})"
        )


def _cpu_seconds(pid: int) -> float:
    """User and system time of every thread of ``pid`` (/proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    # Fields 14 and 15 of the line (utime, stime): 12 and 13 after the name.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _daemon:
    """A ``benchfs daemon --config`` process, registered, stopped on exit."""

    def __init__(self, config: Path, registry: Path, name: str) -> None:
        self.config, self.record = config, registry / f"{name}.json"
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_RANK")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchfs", "daemon", "--config", str(self.config)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        until = time.monotonic() + DEADLINE_S
        while not self.record.exists():
            if self.proc.poll() is not None:
                _, err = self.proc.communicate()
                pytest.fail(f"daemon exited with {self.proc.returncode}: {err}")
            if time.monotonic() > until:
                pytest.fail(f"no registry record {self.record} within {DEADLINE_S} s")
            time.sleep(0.02)
        return self.proc

    def __exit__(self, *_: object) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.communicate(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()
