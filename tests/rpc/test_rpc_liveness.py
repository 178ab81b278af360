"""A daemon that stops answering (paused with SIGSTOP, or killed) is named by the
client's liveness ping, long before the RPC deadline, and no call is repeated
into it (docs/RELIABILITY.md, "Engine and sessions")."""

from __future__ import annotations

import os
import signal

import pytest
from conftest import Cluster

import benchfs_native as bn

pytestmark = pytest.mark.timeout(180)

# Far beyond the ping's 1 s + 2 s: only the ping can end the calls below.
RPC_DEADLINE_S = 120.0


def path_on(node: int, nodes: int = 4) -> str:
    """A path whose metadata lives on ``node``."""
    return next(p for i in range(1000) if bn.metadata_owner(p := f"m{i}", nodes) == node)


def test_a_paused_daemon_is_named_by_the_ping_and_not_retried(fresh_cluster: Cluster) -> None:
    cluster = fresh_cluster
    cluster.start()
    path = path_on(2)
    with cluster.client(rpc_deadline_s=RPC_DEADLINE_S, retries=10) as c:
        c.create(path)
        pid = cluster.procs["node2"].pid
        before = c.counters()
        os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(TimeoutError) as failed:
                c.stat(path)
            after = c.counters()
        finally:
            os.kill(pid, signal.SIGCONT)
        text = str(failed.value)
        assert "node2 does not answer a ping within 2.0 s" in text, text
        assert f"the daemon process {pid} is stopped (state T" in text, text
        assert after["retries"] == before["retries"], (before, after)
        # Continued, it answers again and is used again.
        assert c.stat(path)["size"] == 0
        assert c.ping(2) > 0


def test_a_killed_daemon_is_named_by_the_ping_and_not_retried(fresh_cluster: Cluster) -> None:
    cluster = fresh_cluster
    cluster.start()
    path = path_on(1)
    with cluster.client(rpc_deadline_s=RPC_DEADLINE_S, retries=10) as c:
        c.create(path)
        pid = cluster.procs["node1"].pid
        before = c.counters()
        cluster.kill("node1")
        with pytest.raises(TimeoutError) as failed:
            c.stat(path)
        text = str(failed.value)
        assert "node1 does not answer a ping within 2.0 s" in text, text
        assert f"the daemon process {pid} is gone" in text, text
        assert c.counters()["retries"] == before["retries"]
        # A new call into it is named the same way; the other daemons serve on.
        with pytest.raises(TimeoutError, match="node1 does not answer a ping"):
            c.ping(1)
        assert all(c.ping(n) > 0 for n in (0, 2, 3))
