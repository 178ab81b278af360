"""Files a user names are read within bounds, by real commands: a device, a
FIFO or a file too large is refused at once, without reading or blocking;
text nested too deeply, hostfiles of too many hosts or slots and sweeps of
too many points are one line naming the file and the bound; a damaged
manifest names its file. Each command must finish well within its timeout:
a read without bound would run until the timeout (or the OOM killer)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.bounded import CONFIG_BYTES, HOSTFILE_BYTES, MAX_NESTING
from analysis.synthetic import write_run_dir
from benchfs.cluster.hostfile import MAX_SLOTS
from benchfs.cluster.nodelist import MAX_HOSTS
from benchfs.config.plan import MAX_SWEEP_POINTS

# Far beyond what a refusal takes; a read of /dev/zero would not end before it.
TIMEOUT_S = 120


def benchfs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "COLUMNS": "300"},
    )


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr and "<bound method" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("device", "kind"),
    [("/dev/zero", "a character device"), ("/dev/urandom", "a character device")],
)
@pytest.mark.parametrize("command", ["daemon", "run"])
def test_a_device_as_the_config_is_refused_without_reading(
    command: str, device: str, kind: str
) -> None:
    line = one_error(benchfs(command, "--config", device))
    assert line == (
        f"error: {device}: {kind}, not a regular file: a config file must be a regular file"
    )


def test_a_fifo_as_the_config_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "run.toml"
    os.mkfifo(fifo)  # nobody ever writes it: an open that waited would hang
    line = one_error(benchfs("run", "--config", str(fifo)))
    assert line == (
        f"error: {fifo}: a FIFO (named pipe), not a regular file: "
        "a config file must be a regular file"
    )


def test_a_config_too_large_names_its_size_and_the_bound(tmp_path: Path) -> None:
    config = tmp_path / "d.toml"
    with config.open("wb") as handle:
        handle.truncate(CONFIG_BYTES + 1)  # sparse: nothing is written, nothing may be read
    line = one_error(benchfs("daemon", "--config", str(config)))
    assert line == (
        f"error: {config}: 4.0 MiB ({CONFIG_BYTES + 1:,} bytes), more than the "
        f"4.0 MiB ({CONFIG_BYTES:,} bytes) a config file may have: refusing to read it"
    )


def test_deeply_nested_toml_is_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text("x = " + "[" * 100_000 + "\n")
    line = one_error(benchfs("run", "--config", str(config)))
    assert line == (
        f"error: {config}:1: nested more than {MAX_NESTING} levels deep "
        "(brackets or braces): refusing to parse it"
    )


def test_a_hostfile_of_a_million_hosts_is_refused_before_any_work(tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"n{index}\n" for index in range(1_000_000)))
    line = one_error(benchfs("run", "--nodes", str(hostfile), "--set", "preflight.enabled=false"))
    assert line == (
        f"error: {hostfile}:{MAX_HOSTS + 1}: more than {MAX_HOSTS:,} hosts, "
        "the most a hostfile may name"
    )
    assert not Path("results").exists() or not any(Path("results").glob(".benchfs-*"))


def test_slots_beyond_any_machine_are_refused(tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"n0 slots={10**20}\n")
    line = one_error(benchfs("diagnose", "--nodes", str(hostfile)))
    assert line == f"error: {hostfile}:1: slots is {10**20}, more than {MAX_SLOTS:,}"


def test_a_hostfile_device_is_refused(tmp_path: Path) -> None:
    line = one_error(benchfs("diagnose", "--nodes", "/dev/zero"))
    assert "/dev/zero" in line and "not a regular file" in line, line
    assert HOSTFILE_BYTES > CONFIG_BYTES  # a node file of a large job is bigger than a config


def test_a_million_point_sweep_is_refused_at_once(tmp_path: Path) -> None:
    config = tmp_path / "sweep.toml"
    sizes = ", ".join(f'"{4 * (index + 1)}k"' for index in range(1000))
    config.write_text(
        f"[workload]\ntransfer_size = [{sizes}]\nrepetitions = {list(range(1, 1001))}\n"
    )
    line = one_error(benchfs("run", "--config", str(config)))
    assert line == (
        f"error: {config}: a sweep of 1,000,000 points (1,000 workload.transfer_size x "
        f"1,000 workload.repetitions), more than the {MAX_SWEEP_POINTS:,} one benchfs run "
        "may have: split it into several runs"
    )


def test_a_bit_flipped_manifest_names_its_file(tmp_path: Path) -> None:
    run = write_run_dir(tmp_path / "run")
    manifest = run / "manifest.json"
    data = bytearray(manifest.read_bytes())
    data[10] |= 0x80  # one flipped bit: no longer UTF-8
    manifest.write_bytes(bytes(data))
    line = one_error(benchfs("report", str(run)))
    assert line == f"error: {manifest}: not UTF-8 text (byte 10): a results file is UTF-8 text"
