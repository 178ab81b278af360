"""Registry records as a daemon writes them (benchfs_native/src/membership.rs),
for tests of what reads them without starting daemons."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path


def write_record(
    registry: Path, name: str, node_id: int, *, pid: int | None = None, host: str | None = None
) -> Path:
    """``<registry>/<name>.json`` with every field of a record."""
    registry.mkdir(parents=True, exist_ok=True)
    record = {
        "node_name": name,
        "node_id": node_id,
        "daemon_index": 0,
        "pid": os.getpid() if pid is None else pid,
        "host": socket.gethostname() if host is None else host,
        "worker_address": "00ff",
        "data_dir": f"/data/{name}",
        "start_time_unix_ns": 1_763_800_000_000_000_000,
        "protocol_version": 1,
    }
    path = registry / f"{name}.json"
    path.write_text(json.dumps(record))
    return path
