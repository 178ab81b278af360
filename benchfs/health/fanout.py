"""Run the diagnose node program (``python -m benchfs.node.diagnose``) on every host at once.

Each worker prints its node's JSON result on stdout. Workers start together
through the launcher and share one deadline; a worker that misses it (or
whose launcher says it cannot finish) is killed and reported as an error
for its node, as is one that prints no result, so the other nodes still
report.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from analysis.diagnose import DiagnoseDocument
from analysis.layout import STDERR_SUFFIX, node_file_name
from analysis.loaders._jsontext import decode_embedded_object
from benchfs.cluster.hostfile import Host
from benchfs.cluster.processes import ManagedProcess, kill_group, start_process, wait_process
from benchfs.errors import LaunchError, ToolError
from benchfs.health.model import NodeMeasurement
from benchfs.launchers.base import Launcher
from benchfs.launchers.programs import PreflightArgs, diagnose_worker
from benchfs.launchers.said import is_rule, launcher_reason


def node_directory(directory: Path, host: Host, launcher: Launcher) -> Path:
    """Where a node works: its own ``<dir>/<node>`` when all nodes share this machine."""
    return directory / host.name if launcher.capabilities.runs_here else directory


def node_scratch(scratch: str, host: Host) -> str:
    """A node's own test directory name: nodes that share their directory
    (one shared file system, or several nodes of one machine) must not meet
    in one test directory, which each worker creates afresh."""
    return f"{scratch}-{host.name}"


def run_on_nodes(
    hosts: Sequence[Host],
    launcher: Launcher,
    directory: Path,
    *,
    quick: bool = False,
    preflight: PreflightArgs | None = None,
    deadline_s: float,
    env: Mapping[str, str] | None = None,
    raw_dir: Path | None = None,
    scratch: str | None = None,
) -> list[NodeMeasurement]:
    """Start the worker on every host, wait for all (one deadline), parse their results.

    On this machine each node works in its own ``<directory>/<node>``; those
    this call creates it removes again when they are empty, whatever the outcome.

    ``scratch`` names the workers' test directories (``node_scratch``).

    ``raw_dir`` keeps each worker's output as ``<node>.json`` (and what it
    said on stderr as ``<node>.stderr``), the names of a results directory's
    ``preflight/``.
    """
    started: list[tuple[Host, ManagedProcess, IO[bytes], IO[bytes]]] = []
    made: list[Path] = []
    with ExitStack() as files:
        # Registered first, so it runs last: after every worker has ended.
        files.callback(_remove_if_empty, made)
        try:
            for host in hosts:
                node_dir = node_directory(directory, host, launcher)
                if launcher.capabilities.runs_here and directory.is_dir() and not node_dir.exists():
                    node_dir.mkdir(mode=0o700)
                    made.append(node_dir)
                argv = diagnose_worker(
                    launcher, host, node_dir, quick=quick, preflight=preflight, env=env,
                    scratch=None if scratch is None else node_scratch(scratch, host),
                )  # fmt: skip
                # Files rather than pipes: no worker can block on a full pipe while we wait.
                stdout = files.enter_context(tempfile.TemporaryFile())
                stderr = files.enter_context(tempfile.TemporaryFile())
                process = start_process(
                    argv,
                    name=f"the diagnose worker for {host.name}",
                    stdout=stdout,
                    stderr=stderr,
                    die_with_parent=True,
                    error=ToolError,
                    stuck_when=launcher.stuck_output(),
                )
                started.append((host, process, stdout, stderr))
            stop_at = time.monotonic() + deadline_s
            return [
                _collect(host, process, out, err, stop_at, deadline_s, raw_dir)
                for host, process, out, err in started
            ]
        finally:
            for _host, process, _out, _err in started:
                if process.returncode is None:
                    kill_group(process)


def _remove_if_empty(directories: Sequence[Path]) -> None:
    """Remove the nodes' directories this run made; one a killed worker left
    files in stays, with them."""
    for path in directories:
        with suppress(OSError):
            path.rmdir()


def _collect(
    host: Host,
    process: ManagedProcess,
    stdout: IO[bytes],
    stderr: IO[bytes],
    stop_at: float,
    deadline_s: float,
    raw_dir: Path | None,
) -> NodeMeasurement:
    error: str | None = None
    try:
        wait_process(process, max(0.0, stop_at - time.monotonic()))
    except LaunchError:
        kill_group(process)
        stuck = process.stuck()
        error = f"diagnose worker on {host.name} " + (
            f"cannot finish: {stuck}" if stuck else f"did not finish within {deadline_s:g} s"
        )
    stdout.seek(0)
    stderr.seek(0)
    out, err = stdout.read().decode(errors="replace"), stderr.read().decode(errors="replace")
    if raw_dir is not None:
        raw_dir.mkdir(parents=True, exist_ok=True)
        (raw_dir / node_file_name(host.name)).write_text(out)
        if err:
            (raw_dir / f"{host.name}{STDERR_SUFFIX}").write_text(err)
    if error is None:
        try:
            return _measurement(out, host.name)
        except ToolError as exc:
            code = process.popen.returncode
            said = _what_it_said(err)
            if not out.strip():
                error = f"the diagnose worker on {host.name} printed nothing (exit code {code})"
                error += f": {said}" if said else ""
            else:
                error = f"{exc} (exit code {code}{'; ' + said if said else ''})"
    return failed_node(host.name, error)


def _what_it_said(err: str) -> str:
    """The launcher's reason when its help text is there (the first line outside its
    dashed blocks), else the worker's own last lines."""
    lines = [line.strip() for line in err.strip().splitlines() if line.strip()]
    if any(is_rule(line) for line in lines):
        return launcher_reason(err)
    return "; ".join(lines[-3:])


def _measurement(text: str, node: str) -> NodeMeasurement:
    source = f"diagnose worker output of {node}"
    try:
        decoded = decode_embedded_object(text, source, "diagnose", ValueError)
        nodes = DiagnoseDocument.read(decoded, source).nodes
    except ValueError as exc:
        raise ToolError(str(exc)) from exc
    if len(nodes) != 1:
        raise ToolError(f"{source}: expected one node, found {len(nodes)}")
    return nodes[0].measurement


def failed_node(node: str, error: str, directory: str = "") -> NodeMeasurement:
    return NodeMeasurement(
        node=node,
        hostname="",
        directory=directory,
        quick=False,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        error=error,
    )
