"""Another user sends datagrams to the wake-up sockets of a running 4-daemon
cluster (UCX's shared-memory transport binds them in the abstract unix
namespace, which has no permission check): the daemons count them as from
outside the job, by the sender's uid, in their stats, their log and their
traces, and the run's findings say so; the job's own traffic goes on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from daemon_cluster import Cluster
from outsider_support import NOBODY, flood_as_nobody, wake_up_sockets

from analysis.loaders.traces import load_traces
from analysis.stats.overview import trace_stats

#: Datagrams the sender sends in all (each daemon gets a share).
DATAGRAMS = 20_000
HANG_GUARD_S = 120.0


@pytest.fixture
def cluster(tmp_path: Path) -> Cluster:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    c = Cluster(tmp_path, "shm")
    c.overrides = {"trace_dir": str(tmp_path / "traces")}
    return c


def test_datagrams_from_another_user_are_named_as_interference(cluster: Cluster) -> None:
    cluster.start()
    try:
        cluster.wait_registered(*cluster.names)
        with cluster.client() as client:
            data = bytes(range(256)) * 1024
            handle = client.open("before", 0o102)
            assert client.write(handle, 0, data) == len(data)
            # The daemons' wake-up sockets, as `ss -lx` lists them to anyone
            # (two per daemon: UCX's posix and sysv transports).
            names = wake_up_sockets(p.pid for p in cluster.procs.values())
            assert len(names) >= len(cluster.names), names
            sender = flood_as_nobody(names, DATAGRAMS)
            out, err = sender.communicate(timeout=HANG_GUARD_S)
            assert sender.returncode == 0, err
            assert int(out) > 0
            # The job's traffic goes on meanwhile and after.
            assert client.read(handle, 0, len(data)) == data
            client.close(handle)
            seen = [client.stats(node)["foreign_signals"] for node in range(len(cluster.names))]
        assert sum(s["datagrams"] for s in seen) > 0, seen
        assert {s["last_uid"] for s in seen if s["datagrams"]} == {NOBODY}, seen
    finally:
        cluster.stop()
    logs = cluster.logs()
    assert f"from another user (last uid {NOBODY}" in logs
    assert "interference from outside the job" in logs
    traces = load_traces([cluster.root / "traces"])
    events = traces.kind("foreign_signal")
    assert set(events["sender_uid"]) == {NOBODY}
    assert int(events["datagrams"].sum()) >= sum(s["datagrams"] for s in seen)
    findings = trace_stats(traces).findings
    outside = [f for f in findings if f.startswith("interference from outside the job")]
    assert len(outside) == 1 and f"uid {NOBODY}" in outside[0], findings


def test_the_jobs_own_traffic_is_not_counted(cluster: Cluster) -> None:
    cluster.start()
    try:
        cluster.wait_registered(*cluster.names)
        with cluster.client() as client:
            data = bytes(range(256)) * 1024
            for i in range(50):
                handle = client.open(f"f{i}", 0o102)
                assert client.write(handle, 0, data) == len(data)
                assert client.read(handle, 0, len(data)) == data
                client.close(handle)
            seen = [client.stats(node)["foreign_signals"] for node in range(len(cluster.names))]
        assert all(s["datagrams"] == 0 and s["wakeups"] == 0 for s in seen), seen
    finally:
        cluster.stop()
    assert "interference from outside the job" not in cluster.logs()
