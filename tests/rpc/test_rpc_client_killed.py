"""A client killed in the middle of its writes or reads: the daemons live on,
free its channel and keep serving (docs/RELIABILITY.md, "Engine and
sessions")."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Cluster

pytestmark = pytest.mark.timeout(300)

# Writes of 1 MiB chunks go by rendezvous: the daemon copies each chunk out
# of the client's memory (UCX's cma transport, process_vm_readv) when it
# dispatches the write. With one request at a time and 64 in flight from
# the client, most chunks wait announced but not copied, so a kill lands
# between the announcement of a chunk and its copy.
CHUNK = 1 << 20
ROUNDS = 40
GUARD_S = 60.0

WRITER = """
import os, sys, benchfs_native as bn
c = bn.Client(sys.argv[1], sys.argv[2].split(","), transport="shm",
              connect_deadline_s=60, rpc_deadline_s=60, max_in_flight=64)
h = c.create(f"w{os.getpid()}")
block = os.urandom(64 << 20)
off = 0
while True:
    c.write(h, off % (1 << 30), block)
    off += len(block)
    print("w", flush=True)
"""

# Reads of 1 MiB chunks: the daemon announces each reply's data and the
# client copies it out of the daemon's memory; a client killed before it
# copies leaves the daemon's send unfinished, with no error anywhere.
READER = """
import os, sys, benchfs_native as bn
c = bn.Client(sys.argv[1], sys.argv[2].split(","), transport="shm",
              connect_deadline_s=60, rpc_deadline_s=60, max_in_flight=64)
h = c.create(f"r{os.getpid()}")
c.write(h, 0, os.urandom(64 << 20))
while True:
    c.read(h, 0, 64 << 20)
    print("w", flush=True)
"""


def kill_a_client(cluster: Cluster, rng: random.Random, program: str = WRITER) -> None:
    """Starts a client and SIGKILLs it in the middle of a write (or read): at
    a random point of the time its last one took."""
    proc = subprocess.Popen(
        [sys.executable, "-c", program, str(cluster.registry), ",".join(cluster.names)],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        for _ in range(2):
            assert proc.stdout.readline().strip() == b"w", "the writer stopped writing"
        started = time.monotonic()
        assert proc.stdout.readline().strip() == b"w", "the writer stopped writing"
        time.sleep(rng.uniform(0.1, 0.9) * (time.monotonic() - started))
    finally:
        proc.kill()
        proc.wait(timeout=GUARD_S)
        proc.stdout.close()


def wait_for(what: str, until: float, check: object) -> object:
    while True:
        got = check()  # type: ignore[operator]
        if got:
            return got
        if time.monotonic() > until:
            pytest.fail(f"{what} within {GUARD_S} s")
        time.sleep(0.05)


def test_a_client_killed_mid_write_leaves_the_daemons_serving(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, "shm", nodes=2)
    cluster.chunk_size = CHUNK
    cluster.overrides = {"max_concurrency": 1, "buffer_pool_size": 2 * CHUNK}
    try:
        cluster.start()
        cluster.wait_registered(*cluster.names)
        with cluster.client() as watcher:
            copies = 0
            rng = random.Random(13)
            for _ in range(ROUNDS):
                kill_a_client(cluster, rng)
                gone = {n: p.returncode for n, p in cluster.procs.items() if p.poll() is not None}
                assert not gone, f"daemons died with the client: {gone}\n{cluster.logs()}"
                stats = [watcher.stats(i) for i in range(len(cluster.names))]
                copies = sum(s["dead_peer_copies"] for s in stats)
                if copies:
                    break
            if not copies:
                pytest.skip(f"no kill of {ROUNDS} landed during a daemon's copy")
            # The dead writer's channel is freed without waiting for an idle
            # deadline (600 s), and nothing it had in flight keeps a slot. A
            # write it sent that was already in storage when the channel was
            # freed still finishes first, and frees its slot then.
            until = time.monotonic() + GUARD_S
            wait_for(
                "the dead client's channel freed and no slot held",
                until,
                lambda: (
                    s
                    if (s := [watcher.stats(i) for i in range(2)])
                    and sum(x["channels_dead"] for x in s) >= 1
                    and all(x["in_flight"] == 0 for x in s)
                    else None
                ),
            )
            # Every daemon still serves.
            h = watcher.create("after")
            data = os.urandom(4 * CHUNK)
            assert watcher.write(h, 0, data) == len(data)
            assert watcher.read(h, 0, len(data)) == data
        logs = cluster.logs()
        assert "its client is gone" in logs, logs
    finally:
        cluster.stop()
    assert all(p.returncode == 0 for p in cluster.procs.values()), cluster.logs()


def test_a_client_killed_mid_read_has_its_stalled_channel_freed(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, "shm", nodes=2)
    cluster.chunk_size = CHUNK
    cluster.overrides = {
        "max_concurrency": 1,
        "buffer_pool_size": 2 * CHUNK,
        "channel_stall_s": 1.0,
    }
    try:
        cluster.start()
        cluster.wait_registered(*cluster.names)
        with cluster.client() as watcher:
            rng = random.Random(17)
            stalled = 0
            for _ in range(ROUNDS):
                kill_a_client(cluster, rng, READER)
                gone = {n: p.returncode for n, p in cluster.procs.items() if p.poll() is not None}
                assert not gone, f"daemons died with the client: {gone}\n{cluster.logs()}"
                stats = [watcher.stats(i) for i in range(2)]
                stalled = sum(x["channels_stalled"] for x in stats)
                if stalled or any(x["in_flight"] for x in stats):
                    break
            if not stalled and not any(x["in_flight"] for x in stats):
                pytest.skip(f"no kill of {ROUNDS} left a reply unfinished")
            # The unfinished replies hold their slots until the channel is
            # found stalled (1 s here), then every slot comes back.
            until = time.monotonic() + GUARD_S
            stats = wait_for(
                "the stalled channel freed and its replies dropped",
                until,
                lambda: (
                    s
                    if (s := [watcher.stats(i) for i in range(2)])
                    and sum(x["channels_stalled"] for x in s) >= 1
                    and all(x["in_flight"] == 0 for x in s)
                    else None
                ),
            )
            assert sum(x["requests_abandoned"] for x in stats) >= 1, stats  # type: ignore[union-attr]
            h = watcher.create("after")
            data = os.urandom(4 * CHUNK)
            assert watcher.write(h, 0, data) == len(data)
            assert watcher.read(h, 0, len(data)) == data
        assert "a transfer unfinished as long" in cluster.logs(), cluster.logs()
    finally:
        cluster.stop()
    assert all(p.returncode == 0 for p in cluster.procs.values()), cluster.logs()
