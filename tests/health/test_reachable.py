"""Hosts the launcher cannot reach, through a real mpirun: a name that does not
resolve is named with the launcher's own reason, in one line, before anything
starts on the hosts; diagnose reports it as a failed node, and a worker that
printed nothing says what the launcher said instead of Open MPI's help text."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from benchfs.cluster.hostfile import Host
from benchfs.errors import LaunchError
from benchfs.health.diagnose import diagnose_cluster
from benchfs.health.fanout import run_on_nodes
from benchfs.health.reachable import check_reachable, unreachable_hosts
from benchfs.health.thresholds import Thresholds
from benchfs.launchers.mpirun import MpirunLauncher
from benchfs.launchers.said import launcher_reason

pytestmark = pytest.mark.skipif(
    shutil.which("mpirun") is None or shutil.which("ssh") is None,
    reason="needs Open MPI's mpirun and ssh",
)

# Typos in a hostfile. Not under .invalid: Open MPI cuts a name at its first dot.
TYPOS = [Host("nosuchhost-fast0"), Host("nosuchhost-fast1")]


@pytest.fixture(autouse=True)
def _typos_do_not_resolve() -> None:
    for host in TYPOS:
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo(host.name, 22)


def _resolve_error(name: str) -> str:
    return f"ssh: Could not resolve hostname {name}"


def test_the_launchers_own_reason_is_its_first_line_outside_the_help_text() -> None:
    launcher = MpirunLauncher()
    argv = launcher.command(TYPOS[0], ["true"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "ORTE was unable to reliably start" in said
    assert launcher_reason(said).startswith(_resolve_error("nosuchhost-fast0"))
    help_only = "-" * 74 + "\nORTE was unable to reliably start one or more daemons.\n" + "-" * 74
    assert launcher_reason(help_only) == "ORTE was unable to reliably start one or more daemons."
    assert launcher_reason("") == ""


def test_every_unreachable_host_is_named_in_one_line() -> None:
    hosts = [Host("localhost"), *TYPOS]
    launcher = MpirunLauncher()
    failed = unreachable_hosts(hosts, launcher)
    assert [item.host for item in failed] == ["nosuchhost-fast0", "nosuchhost-fast1"]
    with pytest.raises(LaunchError) as caught:
        check_reachable(hosts, launcher)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("cannot reach 2 of 3 hosts through mpirun: nosuchhost-fast0: ssh:")
    for host in TYPOS:
        assert f"{host.name}: {_resolve_error(host.name)}" in message
    assert "ORTE" not in message and "apologize" not in message
    check_reachable([Host("localhost")], launcher)  # a host that answers passes


def test_diagnose_names_an_unreachable_node_with_the_launchers_reason(tmp_path: Path) -> None:
    report = diagnose_cluster(
        TYPOS[:1], MpirunLauncher(), tmp_path, quick=True, thresholds=Thresholds()
    )
    (node,) = report.nodes
    assert node.error is not None
    assert node.error.startswith("cannot reach it through mpirun: ssh: Could not resolve")


def test_a_worker_that_never_started_says_what_the_launcher_said(tmp_path: Path) -> None:
    (node,) = run_on_nodes(TYPOS[:1], MpirunLauncher(), tmp_path, quick=True, deadline_s=120)
    assert node.error is not None
    assert node.error.startswith(
        "the diagnose worker on nosuchhost-fast0 printed nothing (exit code "
    ), node.error
    assert node.error.endswith(_resolve_error("nosuchhost-fast0") + ": Name or service not known")
    assert "no diagnose JSON object" not in node.error and "---" not in node.error
