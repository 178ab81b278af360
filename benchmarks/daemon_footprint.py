#!/usr/bin/env python3
"""A daemon with default settings: time to register and peak memory.

Starts the daemon as `benchfs run` does, the node program
`python -m benchfs.node.daemon --config FILE` (default settings: 256 MiB
buffer pool, 4 MiB chunks, 32 requests at once), in a temporary directory,
and reports

- `registered_after_ms`: from the start of the native `serve` to the
  registry record (the daemon's own `registered in <ms> ms` line);
- `process_to_record_ms`: from spawning the process to the record file
  appearing (adds the interpreter and the node program's imports);
- `vmhwm_idle_kib`: /proc/<pid>/status VmHWM once registered;
- `vmhwm_after_load_kib`: VmHWM after the load: the ignored Rust test
  `load_against_a_running_daemon` (ping and 4 KiB read round trips, then
  1 MiB writes and reads, `--mib` of each, `--depth` in flight), whose
  lines are printed too.

Usage: .venv/bin/python benchmarks/daemon_footprint.py [--rounds 3] [--mib 1024] [--depth 8]
Needs `cargo` (builds the test in release mode once) and the project's
Python (it starts the daemon with `benchfs.cluster.processes`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchfs.cluster.processes import start_process, stop_process
from benchfs.daemon.settings import DaemonSettings, write_daemon_config
from benchfs.launchers.programs import daemon_argv

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "benchfs_native" / "Cargo.toml"


def vmhwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for pid {pid}")


def load_binary() -> Path:
    out = subprocess.run(
        [
            "cargo",
            "test",
            "--release",
            "--manifest-path",
            str(MANIFEST),
            "--test",
            "server",
            "--no-run",
            "--message-format",
            "json",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if (
            msg.get("reason") == "compiler-artifact"
            and msg["target"]["name"] == "server"
            and msg.get("executable")
        ):
            return Path(msg["executable"])
    raise RuntimeError("cargo did not report the server test binary")


@dataclass
class Round:
    registered_after_ms: int | None
    process_to_record_ms: float
    vmhwm_idle_kib: int
    vmhwm_after_load_kib: int
    exit_code: int
    load: list[str] = field(default_factory=list)


def one_round(binary: Path, mib: int, depth: int) -> Round:
    with tempfile.TemporaryDirectory(prefix="benchfs-footprint-") as tmp:
        registry = Path(tmp) / "registry"
        config = write_daemon_config(
            Path(tmp) / "daemon.toml",
            DaemonSettings(
                node_name="fp0", node_id=0, data_dir=f"{tmp}/data", registry_dir=str(registry)
            ),
        )
        log = Path(tmp) / "daemon.log"
        start = time.monotonic()
        proc = start_process(daemon_argv(config), name="the daemon", stderr=log, cwd=ROOT)
        try:
            record = registry / "fp0.json"
            while not record.exists():
                if proc.returncode is not None or time.monotonic() - start > 60:
                    raise RuntimeError(f"daemon did not register: {log.read_text()}")
                time.sleep(0.002)
            to_record = (time.monotonic() - start) * 1000
            idle = vmhwm_kib(proc.pid)
            env = dict(
                os.environ,
                BENCHFS_LOAD_REGISTRY=str(registry),
                BENCHFS_LOAD_MIB=str(mib),
                BENCHFS_LOAD_DEPTH=str(depth),
            )
            load = subprocess.run(
                [str(binary), "--ignored", "load_against_a_running_daemon", "--nocapture"],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            lines = [ln for ln in load.stderr.splitlines() if ln.startswith("load ")]
            if load.returncode != 0:
                raise RuntimeError(f"load failed: {load.stdout}{load.stderr}")
            after = vmhwm_kib(proc.pid)
        finally:
            code = stop_process(proc, grace_s=60)
        err = log.read_text()
        match = re.search(r"registered in (\d+) ms", err)
        return Round(
            registered_after_ms=int(match.group(1)) if match else None,
            process_to_record_ms=round(to_record, 1),
            vmhwm_idle_kib=idle,
            vmhwm_after_load_kib=after,
            exit_code=code,
            load=lines,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=8)
    args = parser.parse_args()
    binary = load_binary()
    rounds = [one_round(binary, args.mib, args.depth) for _ in range(args.rounds)]
    for i, r in enumerate(rounds):
        shown = {k: v for k, v in asdict(r).items() if k != "load"}
        print(f"round {i}: {json.dumps(shown)}")
        for line in r.load:
            print(f"  {line}")
    registered = [r.registered_after_ms for r in rounds if r.registered_after_ms is not None]
    print(f"median registered_after_ms: {statistics.median(registered)}")
    print(
        f"median process_to_record_ms: {statistics.median(r.process_to_record_ms for r in rounds)}"
    )
    print(f"median vmhwm_idle_kib: {statistics.median(r.vmhwm_idle_kib for r in rounds)}")
    print(
        f"median vmhwm_after_load_kib: {statistics.median(r.vmhwm_after_load_kib for r in rounds)}"
    )


if __name__ == "__main__":
    main()
