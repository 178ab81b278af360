"""A `benchfs run` of four local nodes for the live view's tests, and what it
left: its verdicts and the end of its write phase."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from run_helpers import environment, summary


def live_args(
    root: Path, data: Path, stonewall_s: float | None, *extra: str, phases: str = "write",
    block: str = "512m",
) -> list[str]:  # fmt: skip
    """Four local nodes writing 64 KiB transfers for ``stonewall_s`` seconds
    (None: as the config file says), at most ``block`` each."""
    stonewall = [] if stonewall_s is None else ["--set", f"workload.stonewall_s={stonewall_s:g}"]
    return [
        *stonewall,
        "--results-dir", str(root / "results"),
        "--set", f"cluster.data_dir={data}",
        "--set", "cluster.chunk_size=256k",
        "--set", "cluster.buffer_pool_size=16m",
        "--set", "cluster.deadlines.shutdown_s=5",
        "--set", "preflight.enabled=false",
        "--set", "history.enabled=false",
        "--set", f"workload.phases={phases}",
        "--transfer-size", "64k",
        "--block-size", block,
        *extra,
    ]  # fmt: skip


def benchfs_run(
    args: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``env``: variables set for the run on top of the tests' environment."""
    return subprocess.run(
        [sys.executable, "-m", "benchfs", "run", *args],
        capture_output=True, text=True, env={**environment(), **(env or {})}, timeout=600,
    )  # fmt: skip


def verdicts(run_dir: Path) -> list[dict[str, Any]]:
    document: dict[str, Any] = json.loads((run_dir / "verdicts.json").read_text())
    found: list[dict[str, Any]] = document["verdicts"]
    return found


def phase_end_s(run_dir: Path) -> float:
    (write,) = [p for p in summary(run_dir)["phases"] if p["phase"] == "write"]
    return float(write["last_done_s"])
