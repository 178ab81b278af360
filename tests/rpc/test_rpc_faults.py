"""Faults against real daemons: a daemon killed mid-write, a stopped one
(retries), one that registers late, one that never does, one that is gone
but left its record."""

from __future__ import annotations

import errno
import os
import signal
import threading
import time

import pytest
from conftest import Cluster

import benchfs_native as bn

pytestmark = pytest.mark.timeout(90)

WATCHDOG_S = 30.0


def path_on(node: int, nodes: int = 4, prefix: str = "f") -> str:
    """A path whose metadata and chunk 0 live on ``node``."""
    return next(p for i in range(1000) if bn.metadata_owner(p := f"{prefix}{i}", nodes) == node)


@pytest.mark.core_claim
@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_daemon_killed_mid_write_is_named_within_the_deadline(
    fresh_cluster: Cluster, transport: str
) -> None:
    cluster = fresh_cluster
    cluster.transport = transport
    cluster.start()
    victim = "node2"
    with cluster.client(rpc_deadline_s=5.0) as c:
        h = c.create("big")
        block = os.urandom(4 << 20)
        first_done = threading.Event()
        killed_at: list[float] = []

        def killer() -> None:
            first_done.wait(WATCHDOG_S)
            time.sleep(0.05)
            cluster.kill(victim)
            killed_at.append(time.monotonic())

        t = threading.Thread(target=killer)
        t.start()
        offset = 0
        with pytest.raises(OSError) as failure:
            while time.monotonic() < (killed_at[0] if killed_at else time.monotonic()) + WATCHDOG_S:
                c.write(h, offset, block)
                offset += len(block)
                first_done.set()
        failed_at = time.monotonic()
        t.join()
        e = failure.value
        transport_errors = (
            errno.ETIMEDOUT,
            errno.ECONNRESET,
            errno.ECONNREFUSED,
            errno.EHOSTUNREACH,
            errno.ENOTCONN,
            errno.EPIPE,
            errno.EIO,
        )
        assert e.errno in transport_errors, repr(e)
        assert e.filename == victim, repr(e)
        assert f"on node {victim} failed" in str(e), repr(e)
        assert "write big chunk" in str(e), repr(e)
        # Well within the watchdog: the liveness ping (about 3 s), not a hang.
        assert failed_at - killed_at[0] < WATCHDOG_S / 2
        # The others still answer.
        assert c.ping(0) > 0
        with pytest.raises(OSError, match=victim):
            c.ping(2)


def test_stopped_daemon_is_not_retried_and_serves_once_continued(fresh_cluster: Cluster) -> None:
    cluster = fresh_cluster
    cluster.start()
    path = "f"
    # A 1 s deadline: the first attempt times out however slow this machine is.
    with cluster.client(rpc_deadline_s=1.0, retries=10) as c:
        h = c.create(path)
        c.write(h, 0, b"abc" * 100)
        # The daemon of chunk 0 (placed by the file's id) holds its backing file.
        data = f"@{c.stat(path)['ino']:016x}"
        (node,) = [
            i for i, n in enumerate(cluster.names) if (cluster.root / "data" / n / data).exists()
        ]
        pid = cluster.procs[f"node{node}"].pid
        counters = c.counters()
        os.kill(pid, signal.SIGSTOP)
        try:
            # A read is idempotent, but never repeated into a stopped daemon.
            with pytest.raises(TimeoutError, match=f"read {path} chunk 0 on node node{node}"):
                c.read(h, 0, 300)
            with pytest.raises(TimeoutError, match=f"write {path} chunk 0 on node node{node}"):
                c.write(h, 0, b"x")
        finally:
            os.kill(pid, signal.SIGCONT)
        assert c.counters()["retries"] == counters["retries"]
        assert c.counters()["timeouts"] > counters["timeouts"]
        # Continued, it serves again, once it has answered (within the 1 s
        # deadline only when this machine is quick).
        _until_answering(c, node)
        assert c.read(h, 1, 299) == (b"abc" * 100)[1:]


def _until_answering(c: bn.Client, node: int) -> None:
    """Pings ``node`` until it answers (each ping within the client's deadline)."""
    guard = time.monotonic() + WATCHDOG_S
    while True:
        try:
            c.ping(node)
            return
        except TimeoutError:
            if time.monotonic() > guard:
                raise


def test_late_daemon_is_waited_for(fresh_cluster: Cluster) -> None:
    cluster = fresh_cluster
    cluster.start("node0", "node1", "node2")
    late = threading.Timer(1.0, cluster.start, ("node3",))
    late.start()
    try:
        with cluster.client(connect_deadline_s=60.0) as c:
            assert [n["node_name"] for n in c.nodes] == cluster.names
            assert c.ping(3) > 0
    finally:
        late.join()


def test_missing_daemon_is_named_at_the_deadline(fresh_cluster: Cluster) -> None:
    cluster = fresh_cluster
    cluster.start("node0", "node1", "node2")
    cluster.wait_registered("node0", "node1", "node2")
    with pytest.raises(TimeoutError) as failure:
        cluster.client(connect_deadline_s=3.0)
    text = f"{failure.value} {failure.value.filename}"
    assert "node3" in text and "3 of 4" in text, text
    # With allow_partial the three present daemons (ids 0..2) are used.
    with cluster.client(connect_deadline_s=5.0, allow_partial=True) as c:
        assert [n["node_name"] for n in c.nodes] == ["node0", "node1", "node2"]


@pytest.mark.core_claim
def test_dead_daemon_with_a_record_is_named_at_the_deadline(fresh_cluster: Cluster) -> None:
    cluster = fresh_cluster
    cluster.start()
    with cluster.client() as c:
        assert c.ping(1) > 0
    cluster.kill("node1")
    assert (cluster.registry / "node1.json").exists()
    with pytest.raises(TimeoutError) as failure:
        cluster.client(connect_deadline_s=5.0)
    # Either the endpoint to its dead worker or the session handshake fails.
    assert failure.value.filename == "node1"
    assert "connect on node node1 failed" in str(failure.value)


def test_a_rename_over_a_link_survives_a_dead_parent_owner(fresh_cluster: Cluster) -> None:
    """A rename over a symbolic link makes no parent check (the parent held the
    link throughout), so with the parent's daemon dead the moved link still
    replaces it, and an undo does not lose both."""
    cluster = fresh_cluster
    cluster.start()
    parent = path_on(3, prefix="dir")
    to = path_on(1, prefix=f"{parent}/l")
    src = path_on(2, prefix="src")
    with cluster.client(rpc_deadline_s=5.0) as c:
        c.mkdir(parent)
        c.symlink("old/target", to)
        c.symlink("new/target", src)
        cluster.kill("node3")
        c.rename(src, to)
        assert c.readlink(to) == "new/target"
        with pytest.raises(FileNotFoundError):
            c.readlink(src)
