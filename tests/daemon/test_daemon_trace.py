"""A real daemon's trace, read by the analysis loaders: ``rpc_server``
records carry the daemon's own node id and the server phases."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import benchfs_native
from analysis.loaders.traces import load_traces
from analysis.stats.rpc import rpc_phases

DEADLINE_S = 60.0


def test_rpc_server_records_load_with_the_daemon_as_peer(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    traces = tmp_path / "traces"
    config = tmp_path / "daemon.toml"
    config.write_text(
        "\n".join(
            [
                'node_name = "tnode"',
                "node_id = 0",
                f"data_dir = {json.dumps(str(tmp_path / 'data'))}",
                f"registry_dir = {json.dumps(str(registry))}",
                'buffer_pool_size = "16m"',
                f"trace_dir = {json.dumps(str(traces))}",
            ]
        )
        + "\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchfs", "daemon", "--config", str(config)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        until = time.monotonic() + DEADLINE_S
        while not (registry / "tnode.json").exists():
            if proc.poll() is not None or time.monotonic() > until:
                pytest.fail(f"daemon did not register: {proc.communicate()[1]}")
            time.sleep(0.02)
        with benchfs_native.Client(str(registry), 1, connect_deadline_s=30.0) as client:
            assert client.stats(0)["durability"] == "none"
            handle = client.open("traced", 0o102)  # O_CREAT | O_RDWR
            data = bytes(range(256)) * 4096
            assert client.write(handle, 0, data) == len(data)
            assert client.read(handle, 0, len(data)) == data
            client.close(handle)
            client.mkdir("tdir")
            assert client.stat("tdir")["kind"] == "dir"
            client.ping(0)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    loaded = load_traces(sorted(traces.glob("*.bftrace")))
    assert loaded.nodes == ["tnode"]
    server = loaded.kind("rpc_server")
    assert len(server) >= 4  # stats, open, write, read, ping (and a close's fsync)
    assert set(server["peer"].astype(str)) == {"tnode"}
    assert set(server["node"].astype(str)) == {"tnode"}
    ops = set(server["op"].astype(str))
    assert {"create", "write", "read", "mkdir", "stat", "ping"} <= ops, ops
    writes = server[server["op"].astype(str) == "write"]
    assert int(writes["bytes"].sum()) == 1 << 20
    assert (writes["storage_ns"] > 0).all()
    phases = rpc_phases(None, server)
    assert list(phases["phase"]) == ["server queue", "server storage", "reply"]
    assert (phases["count"] == len(server)).all()
    assert len(loaded.kind("storage_op")) > 0
