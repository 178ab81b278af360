"""Can the launcher reach every host? One quick command per host, all at once,
before anything else starts on them.

A misnamed or unreachable host otherwise shows up late and garbled: the
launcher's own reason (``ssh: Could not resolve hostname fast0``) lost
among Open MPI's help text, and the preflight's worker reported as having
printed nothing. Here the launcher runs ``echo`` on each host; a host whose
command fails, prints something else or misses the deadline is named with
the launcher's first line of explanation.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import IO

from benchfs.cluster.hostfile import Host
from benchfs.cluster.processes import ManagedProcess, kill_group, start_process, wait_process
from benchfs.errors import LaunchError
from benchfs.launchers.base import Launcher
from benchfs.launchers.said import launcher_reason

REACH_TOKEN = "benchfs-reached"
REACH_DEADLINE_S = 60.0


@dataclass(frozen=True)
class Unreachable:
    host: str
    reason: str


def check_reachable(
    hosts: Sequence[Host],
    launcher: Launcher,
    *,
    env: Mapping[str, str] | None = None,
    deadline_s: float = REACH_DEADLINE_S,
) -> None:
    """LaunchError naming every host the launcher cannot run a command on, with why."""
    if launcher.capabilities.runs_here or not hosts:
        return
    failed = unreachable_hosts(hosts, launcher, env=env, deadline_s=deadline_s)
    if failed:
        named = "; ".join(f"{item.host}: {item.reason}" for item in failed)
        raise LaunchError(
            f"cannot reach {len(failed)} of {len(hosts)} hosts through {launcher.name}: {named}"
        )


def unreachable_hosts(
    hosts: Sequence[Host],
    launcher: Launcher,
    *,
    env: Mapping[str, str] | None = None,
    deadline_s: float = REACH_DEADLINE_S,
) -> list[Unreachable]:
    """The hosts where ``echo`` through the launcher did not answer, in the hosts' order."""
    started: list[tuple[Host, ManagedProcess, IO[bytes]]] = []
    failed: list[Unreachable] = []
    with ExitStack() as files:
        try:
            for host in hosts:
                argv = launcher.command(host, ["echo", REACH_TOKEN], env=env)
                output: IO[bytes] = files.enter_context(tempfile.TemporaryFile())
                process = start_process(
                    argv,
                    name=f"the reachability check of {host.name}",
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    stuck_when=launcher.stuck_output(),
                )
                started.append((host, process, output))
            stop_at = time.monotonic() + deadline_s
            for host, process, output in started:
                reason = _outcome(process, output, stop_at, deadline_s)
                if reason is not None:
                    failed.append(Unreachable(host.name, reason))
        finally:
            for _host, process, _output in started:
                if process.returncode is None:
                    kill_group(process)
    return failed


def _outcome(
    process: ManagedProcess, output: IO[bytes], stop_at: float, deadline_s: float
) -> str | None:
    """None when the host answered, else the launcher's reason in one line."""
    timed_out = None
    try:
        code: int | None = wait_process(process, max(0.0, stop_at - time.monotonic()))
    except LaunchError:
        stuck = process.stuck()
        kill_group(process)
        code = None
        timed_out = f"cannot finish: {stuck}" if stuck else f"no answer within {deadline_s:g} s"
    output.seek(0)
    text = output.read().decode(errors="replace")
    if code == 0 and REACH_TOKEN in text.split():
        return None
    said = launcher_reason(text.replace(REACH_TOKEN, ""))
    if timed_out is not None:
        return f"{timed_out}" + (f" ({said})" if said else "")
    if said:
        return said
    return f"exit code {code}, no output" if code else f"answered without {REACH_TOKEN}"
