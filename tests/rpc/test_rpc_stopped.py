"""A paused (SIGSTOP) daemon on this host is named with its state in the
error, within the RPC deadline."""

from __future__ import annotations

import os
import signal
import time

import pytest
from conftest import Cluster

pytestmark = pytest.mark.timeout(120)


def test_stopped_daemon_is_named_with_its_state(fresh_cluster: Cluster) -> None:
    cluster = fresh_cluster
    cluster.start()
    # The stalled call ends by the liveness ping (about 3 s), well before its
    # deadline; the calls before and after have time to spare on a busy machine.
    with cluster.client(rpc_deadline_s=10.0, retries=0) as c:
        h = c.create("paused")
        pid = cluster.procs["node2"].pid
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(TimeoutError) as failed:
                c.stats(2)
            waited = time.monotonic() - started
        finally:
            os.kill(pid, signal.SIGCONT)
        text = str(failed.value)
        assert "node2" in text and f"daemon process {pid} is stopped" in text, text
        assert "state T" in text, text
        assert waited < 30.0, f"the error took {waited:.1f} s"
        c.write(h, 0, b"after")
