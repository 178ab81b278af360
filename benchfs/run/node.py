"""What runs on each node on behalf of the orchestrator, started through the
launcher (one command across all hosts):

- ``daemon CONFIG_DIR``: become the daemon of this launcher rank: exec
  ``benchfs daemon --config CONFIG_DIR/daemon-<rank>.toml`` (the same pid,
  so the launcher's signals reach the daemon itself);
- ``stop REGISTRY_DIR DEADLINE_S``: SIGTERM the daemons registered from
  this host, and wait until they have exited;
- ``clean PATH...``: remove the run's directories on this host.

Local runs do all of this in the orchestrator itself; this module is for
hosts the orchestrator cannot reach but through the launcher.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from benchfs.daemon.config import RANK_VARIABLES

DAEMON_CONFIG = "daemon-{node_id}.toml"
# Only paths holding this marker are removed: a wrong argument cannot delete a home.
RUN_MARKER = "benchfs-"


def rank_from_env(env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    for name in RANK_VARIABLES:
        value = env.get(name)
        if value is not None and value.strip().isdigit():
            return int(value)
    raise RuntimeError(f"no launcher rank in the environment ({', '.join(RANK_VARIABLES)})")


def daemon_config_path(config_dir: Path, node_id: int) -> Path:
    return config_dir / DAEMON_CONFIG.format(node_id=node_id)


def exec_daemon(config_dir: Path, shm_dir: str | None = None) -> None:
    config = daemon_config_path(config_dir, rank_from_env())
    if not config.is_file():
        raise RuntimeError(f"{config}: no daemon config for this rank")
    if shm_dir:
        os.makedirs(shm_dir, exist_ok=True)
    argv = [sys.executable, "-m", "benchfs", "daemon", "--config", str(config)]
    os.execv(sys.executable, argv)


def _is_daemon(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"benchfs" in cmdline and b"daemon" in cmdline


def local_daemon_pids(registry_dir: Path, hostname: str | None = None) -> list[int]:
    """Pids of the daemons that registered from this host and still run."""
    hostname = hostname or socket.gethostname()
    pids: list[int] = []
    for path in sorted(registry_dir.glob("*.json")):
        if path.name.startswith("."):
            continue
        try:
            record = json.loads(path.read_text())
            pid, host = int(record["pid"]), str(record["host"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if host == hostname and _is_daemon(pid):
            pids.append(pid)
    return pids


def stop_daemons(registry_dir: Path, deadline_s: float) -> int:
    """SIGTERM this host's daemons; 0 when all exited within the deadline."""
    pids = local_daemon_pids(registry_dir)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    stop_at = time.monotonic() + deadline_s
    while pids and time.monotonic() < stop_at:
        pids = [pid for pid in pids if _is_daemon(pid)]
        time.sleep(0.05)
    for pid in pids:
        print(f"daemon pid {pid} still running after {deadline_s:g} s", file=sys.stderr)
    return 1 if pids else 0


def clean(paths: Iterable[str]) -> int:
    failed = 0
    for text in paths:
        path = Path(text)
        if RUN_MARKER not in path.name:
            print(f"not removing {path}: not a run directory", file=sys.stderr)
            failed = 1
            continue
        try:
            shutil.rmtree(path)
        except FileNotFoundError:
            pass
        except OSError as error:
            print(f"cannot remove {path}: {error}", file=sys.stderr)
            failed = 1
    return failed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if len(args) in (2, 3) and args[0] == "daemon":
            exec_daemon(Path(args[1]), args[2] if len(args) == 3 else None)
        if len(args) == 3 and args[0] == "stop":
            return stop_daemons(Path(args[1]), float(args[2]))
        if len(args) >= 1 and args[0] == "clean":
            return clean(args[1:])
    except (OSError, RuntimeError, ValueError) as error:
        print(f"benchfs node {socket.gethostname()}: {error}", file=sys.stderr)
        return 1
    print(
        "usage: python -m benchfs.run.node daemon CONFIG_DIR [SHM_DIR] | "
        "stop REGISTRY_DIR DEADLINE_S | clean PATH...",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
