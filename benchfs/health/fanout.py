"""Run a node worker (``python -m benchfs diagnose ... --json``) on every host at once.

Each worker prints its node's JSON result on stdout. Workers start together
through the launcher and share one deadline; a worker that misses it is
killed and reported as an error for its node, as is one that prints no
result, so the other nodes still report.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from analysis.loaders._jsontext import decode_embedded_object
from benchfs.cluster.hostfile import Host
from benchfs.errors import ToolError
from benchfs.health.model import NodeMeasurement
from benchfs.launchers.base import Launcher
from benchfs.tools.process import kill_group


def node_directory(directory: Path, host: Host, launcher: Launcher) -> Path:
    """Where a node works: its own ``<dir>/<node>`` when all nodes share this machine."""
    return directory / host.name if launcher.name == "local" else directory


def worker_argv(node_dir: Path, node: str, options: Sequence[str]) -> list[str]:
    """The per-node command: this Python running ``benchfs diagnose`` in worker mode."""
    return [
        sys.executable,
        "-m",
        "benchfs",
        "diagnose",
        "--dir",
        str(node_dir),
        "--json",
        "--node-name",
        node,
        *options,
    ]


def run_on_nodes(
    hosts: Sequence[Host],
    launcher: Launcher,
    directory: Path,
    options: Sequence[str],
    *,
    deadline_s: float,
    env: Mapping[str, str] | None = None,
    raw_dir: Path | None = None,
) -> list[NodeMeasurement]:
    """Start the worker on every host, wait for all (one deadline), parse their results."""
    started: list[tuple[Host, subprocess.Popen[str], IO[str], IO[str]]] = []
    with ExitStack() as files:
        try:
            for host in hosts:
                node_dir = node_directory(directory, host, launcher)
                if launcher.name == "local" and directory.is_dir() and not node_dir.exists():
                    node_dir.mkdir()
                argv = launcher.command(host, worker_argv(node_dir, host.name, options), env=env)
                # Files rather than pipes: no worker can block on a full pipe while we wait.
                stdout = files.enter_context(tempfile.TemporaryFile("w+"))
                stderr = files.enter_context(tempfile.TemporaryFile("w+"))
                try:
                    process = subprocess.Popen(
                        argv,
                        stdout=stdout,
                        stderr=stderr,
                        stdin=subprocess.DEVNULL,
                        text=True,
                        start_new_session=True,
                    )
                except OSError as exc:
                    raise ToolError(
                        f"cannot start the diagnose worker for {host.name}: "
                        f"{argv[0]}: {exc.strerror}"
                    ) from exc
                started.append((host, process, stdout, stderr))
            stop_at = time.monotonic() + deadline_s
            return [
                _collect(host, process, out, err, stop_at, deadline_s, raw_dir)
                for host, process, out, err in started
            ]
        finally:
            for _host, process, _out, _err in started:
                if process.poll() is None:
                    kill_group(process)


def _collect(
    host: Host,
    process: subprocess.Popen[str],
    stdout: IO[str],
    stderr: IO[str],
    stop_at: float,
    deadline_s: float,
    raw_dir: Path | None,
) -> NodeMeasurement:
    error: str | None = None
    try:
        process.wait(timeout=max(0.0, stop_at - time.monotonic()))
    except subprocess.TimeoutExpired:
        kill_group(process)
        error = f"diagnose worker on {host.name} did not finish within {deadline_s:g} s"
    stdout.seek(0)
    stderr.seek(0)
    out, err = stdout.read(), stderr.read()
    if raw_dir is not None:
        raw_dir.mkdir(parents=True, exist_ok=True)
        (raw_dir / f"{host.name}.json").write_text(out)
        if err:
            (raw_dir / f"{host.name}.stderr").write_text(err)
    if error is None:
        try:
            return _measurement(out, host.name)
        except ToolError as exc:
            tail = "; ".join(line for line in err.strip().splitlines()[-3:] if line.strip())
            error = f"{exc} (exit code {process.returncode}{'; ' + tail if tail else ''})"
    return failed_node(host.name, error)


def _measurement(text: str, node: str) -> NodeMeasurement:
    source = f"diagnose worker output of {node}"
    try:
        document = decode_embedded_object(text, source, "diagnose", ValueError)
    except ValueError as exc:
        raise ToolError(str(exc)) from exc
    nodes: Any = document.get("nodes")
    if not isinstance(nodes, list) or len(nodes) != 1 or "measurement" not in nodes[0]:
        raise ToolError(f"{source}: expected one node with a 'measurement'")
    return NodeMeasurement.from_dict(nodes[0]["measurement"], source)


def failed_node(node: str, error: str, directory: str = "") -> NodeMeasurement:
    return NodeMeasurement(
        node=node,
        hostname="",
        directory=directory,
        quick=False,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        error=error,
    )
