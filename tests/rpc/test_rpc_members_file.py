"""The members file: once every daemon registered, one signed file beside the
records tells every client the whole membership, so a client opens one file
instead of N records; a damaged or stale one is an error naming it, and
without one the client waits on the records as before."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_cluster import Cluster

import benchfs_native as bn

# A client in a process of its own, so that strace sees only its opens.
CLIENT = """
import sys, benchfs_native as bn
c = bn.Client(sys.argv[1], sys.argv[2].split(","), transport="auto", connect_deadline_s=60)
print(sorted(c.ping(n["node_id"]) >= 0 for n in c.nodes))
c.disconnect()
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, "auto", nodes=3)
    c.start()
    try:
        c.wait_registered(*c.names)
        yield c
    finally:
        c.stop()


def test_clients_connect_from_the_members_file_alone(cluster: Cluster) -> None:
    path = Path(bn.write_members(str(cluster.registry), cluster.names))
    assert path == cluster.registry / "members.json"
    assert path.stat().st_mode & 0o777 == 0o600
    # Not a record: the registry's own reader still sees the three daemons only.
    assert [r["node_name"] for r in bn.read_registry(str(cluster.registry))] == cluster.names
    # Damage every record: a client that still read them would fail at once.
    records = {n: (cluster.registry / f"{n}.json").read_bytes() for n in cluster.names}
    for name in cluster.names:
        (cluster.registry / f"{name}.json").write_text("{ not a record")
    try:
        client = cluster.client()
        try:
            assert [n["node_name"] for n in client.nodes] == cluster.names
            for node in client.nodes:
                assert client.ping(node["node_id"]) >= 0
        finally:
            client.disconnect()
    finally:
        for name, text in records.items():
            (cluster.registry / f"{name}.json").write_bytes(text)


def test_a_client_opens_one_membership_file(cluster: Cluster, tmp_path: Path) -> None:
    strace = shutil.which("strace")
    assert strace is not None, "strace is needed to count a client's opens"
    bn.write_members(str(cluster.registry), cluster.names)
    trace = tmp_path / "opens.txt"
    done = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=openat", "-o", str(trace),
         sys.executable, "-c", CLIENT, str(cluster.registry), ",".join(cluster.names)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True, True, True]"
    registry = re.escape(str(cluster.registry))
    opened = re.findall(rf'openat\([^,]*, "{registry}/([^"]+)"', trace.read_text())
    # The key that signs the connects and the one members file; no record.
    assert sorted(set(opened)) == ["members.json", "session.key"], opened
    assert opened.count("members.json") == 1, opened


def test_without_a_members_file_clients_read_the_records(cluster: Cluster) -> None:
    assert not (cluster.registry / "members.json").exists()
    client = cluster.client()
    try:
        assert [n["node_name"] for n in client.nodes] == cluster.names
    finally:
        client.disconnect()


def test_a_damaged_members_file_is_one_line_naming_it(cluster: Cluster) -> None:
    path = Path(bn.write_members(str(cluster.registry), cluster.names))
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"members\.json: damaged") as cut:
        cluster.client()
    assert str(path) in str(cut.value) and "\n" not in str(cut.value)
    # Parses, but an address changed: its MAC no longer verifies.
    path.write_text(text.replace('"worker_address":"', '"worker_address":"00', 1))
    with pytest.raises(ValueError, match="does not verify with the session key") as edited:
        cluster.client()
    assert str(path) in str(edited.value) and "\n" not in str(edited.value)


def test_a_daemon_that_registers_makes_the_members_file_go(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, "auto", nodes=3)
    try:
        cluster.start("node0", "node1")
        cluster.wait_registered("node0", "node1")
        path = Path(bn.write_members(str(cluster.registry), ["node0", "node1"]))
        kept = path.read_bytes()
        cluster.start("node2")
        cluster.wait_registered("node2")
        # Removed right after the record is published: waited for, not timed.
        until = time.monotonic() + 60.0
        while path.exists() and time.monotonic() < until:
            time.sleep(0.02)
        assert not path.exists(), "a registering daemon leaves the old members file"
        client = cluster.client()  # from the records, all three
        client.disconnect()
        # The old list put back by hand: stale for a client expecting three.
        path.write_bytes(kept)
        os.chmod(path, 0o600)
        with pytest.raises(ValueError, match="does not list daemon node2: stale") as stale:
            cluster.client()
        assert str(path) in str(stale.value)
    finally:
        cluster.stop()


def test_writing_it_needs_every_named_daemon(cluster: Cluster) -> None:
    with pytest.raises(ValueError, match="daemon node9 has not registered"):
        bn.write_members(str(cluster.registry), [*cluster.names, "node9"])
    assert not (cluster.registry / "members.json").exists()
