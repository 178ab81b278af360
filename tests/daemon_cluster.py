"""A local cluster of real daemons (``benchfs daemon --config``), shared by the
client and mount tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import benchfs_native as bn

NODES = 4
CHUNK = 64 * 1024
STOP_DEADLINE_S = 15.0


class Cluster:
    """Daemons ``node0..`` sharing one registry, each with its own data dir."""

    def __init__(self, root: Path, transport: str, nodes: int = NODES) -> None:
        self.root = root
        self.transport = transport
        self.registry = root / "registry"
        self.names = [f"node{i}" for i in range(nodes)]
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.durability = "none"
        self.chunk_size = CHUNK
        self.overrides: dict[str, Any] = {}

    def config(self, name: str) -> Path:
        node_id = self.names.index(name)
        values: dict[str, Any] = {
            "node_name": name,
            "node_id": node_id,
            "data_dir": str(self.root / "data" / "{node_name}"),
            "registry_dir": str(self.registry),
            "chunk_size": self.chunk_size,
            "buffer_pool_size": 8 << 20,
            "durability": self.durability,
            "transport": self.transport,
            "max_concurrency": 32,
            "shutdown_deadline_s": 5.0,
        } | self.overrides
        path = self.root / f"{name}.toml"
        path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items()))
        return path

    def start(self, *names: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_RANK")}
        for name in names or self.names:
            log = (self.root / f"{name}.log").open("ab")
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "benchfs", "daemon", "--config", str(self.config(name))],
                stdout=log,
                stderr=log,
                env=env,
            )
            log.close()

    def wait_registered(self, *names: str) -> None:
        """Until the daemons' records are in the registry (or one exits)."""
        until = time.monotonic() + 60.0
        while not all((self.registry / f"{n}.json").exists() for n in names):
            for n in names:
                if self.procs[n].poll() is not None:
                    pytest.fail(f"daemon {n} exited before registering:\n{self.logs()}")
            if time.monotonic() > until:
                pytest.fail(f"daemons {names} did not register within 60 s:\n{self.logs()}")
            time.sleep(0.02)

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=STOP_DEADLINE_S)

    def client(self, **options: Any) -> bn.Client:
        options.setdefault("transport", self.transport)
        options.setdefault("connect_deadline_s", 60.0)
        options.setdefault("rpc_deadline_s", 20.0)
        return bn.Client(str(self.registry), self.names, **options)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')}"
            for p in sorted(self.root.glob("*.log"))
        )

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
