"""Run one external tool with a deadline; every failure becomes a ToolError naming it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchfs.errors import ToolError


@dataclass(frozen=True)
class ToolResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run_tool(
    argv: Sequence[str],
    *,
    tool: str,
    where: str,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
) -> ToolResult:
    """Run ``argv`` to completion; on the deadline kill its whole process group."""
    try:
        process = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=dict(env) if env is not None else None,
            start_new_session=True,  # own process group, so children die with it
        )
    except FileNotFoundError as exc:
        raise ToolError(f"{tool} not found (needed for {where}): {argv[0]} is not on PATH") from exc
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        kill_group(process)
        raise ToolError(f"{tool} in {where} did not finish within {timeout_s:g} s") from exc
    except BaseException:
        kill_group(process)
        raise
    return ToolResult(tuple(argv), process.returncode, stdout, stderr)


def kill_group(process: subprocess.Popen[str], grace_s: float = 3.0) -> None:
    """Stop a process started with ``start_new_session`` and everything it started, then reap it.

    fio puts its job processes in sessions of their own, so the process group
    is not enough: descendants are found through /proc before anything dies.
    SIGTERM first (fio then stops its jobs and removes its files), SIGKILL
    after ``grace_s``.
    """
    pids = [process.pid, *descendants(process.pid)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    for pid in [process.pid, *descendants(process.pid), *pids]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (children first), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces.
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found: list[int] = []
    queue = [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found
