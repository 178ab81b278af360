"""`benchfs run` on a hostfile with names that do not resolve, through a real
mpirun: before anything starts on the hosts, one line names each host that
cannot be reached and the launcher's own reason; no preflight, no daemon,
none of Open MPI's help text."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
from run_helpers import benchfs_run, run_dirs, small_args

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        shutil.which("mpirun") is None or shutil.which("ssh") is None,
        reason="needs Open MPI's mpirun and ssh",
    ),
]

TYPOS = ["nosuchhost-fast0", "nosuchhost-fast1"]


def test_unreachable_hosts_are_named_with_the_launchers_reason(tmp_path: Path) -> None:
    for name in TYPOS:
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo(name, 22)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost slots=1\n" + "".join(f"{name} slots=1\n" for name in TYPOS))
    done = benchfs_run(
        [*small_args(tmp_path), "--nodes", str(hostfile), "--set", "preflight.enabled=true"],
        timeout=240,
    )
    assert done.returncode != 0, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    reasons = "; ".join(
        f"{name}: ssh: Could not resolve hostname {name}: Name or service not known"
        for name in TYPOS
    )
    assert errors == [f"error: cannot reach 2 of 3 hosts through mpirun: {reasons}"], done.stderr
    assert "checking that mpirun reaches 3 hosts" in done.stderr
    for never in ("preflight", "starting", "ORTE", "diagnose JSON", "despite the evidence"):
        assert never not in done.stderr, never
    (run_dir,) = run_dirs(tmp_path / "results")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["error"] == errors[0].removeprefix("error: ")
