"""The session key against real daemons: a client without the job's key or
with another one is refused with an error naming the node and the
registry, and the daemons keep serving the job's clients."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from conftest import Cluster

import benchfs_native as bn

pytestmark = pytest.mark.timeout(120)


def test_wrong_or_missing_key_is_refused_and_the_job_keeps_working(
    fresh_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = fresh_cluster
    cluster.start()
    cluster.wait_registered(*cluster.names)
    key_file = cluster.registry / "session.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    with cluster.client() as c:
        c.write(c.create("kept"), 0, b"x" * 100)

    # The records without the key beside them: a client that has no key.
    keyless = tmp_path / "keyless-registry"
    keyless.mkdir()
    for record in cluster.registry.glob("*.json"):
        shutil.copy(record, keyless / record.name)
    with pytest.raises(PermissionError) as refused:
        bn.Client(str(keyless), cluster.names, transport="shm", connect_deadline_s=30.0)
    text = str(refused.value)
    assert "wrong or missing session key" in text and str(keyless) in text, text
    assert "node" in text

    # Another key in the environment (which wins over the file).
    monkeypatch.setenv("BENCHFS_SESSION_KEY", "ab" * 32)
    with pytest.raises(PermissionError) as refused:
        cluster.client(connect_deadline_s=30.0)
    assert "wrong or missing session key" in str(refused.value)
    monkeypatch.delenv("BENCHFS_SESSION_KEY")

    with cluster.client() as c:
        assert c.stat("kept")["size"] == 100
    logs = cluster.logs()
    assert "wrong or missing session key" in logs, logs


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    where = bn.ensure_session_key(str(registry))
    key_file = registry / "session.key"
    assert where == str(key_file)
    assert stat.S_IMODE(registry.stat().st_mode) == 0o700
    assert bn.ensure_session_key(str(registry)) == where
    key_file.chmod(0o644)
    with pytest.raises(ValueError, match=r"session\.key.*0600"):
        bn.ensure_session_key(str(registry))
