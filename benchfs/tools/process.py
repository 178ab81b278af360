"""Run one external tool to completion with a deadline; every failure
becomes a ToolError naming it."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchfs.cluster.lifecycle import raise_if_stopped
from benchfs.cluster.processes import kill_group, start_process
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
    """Run ``argv`` to completion; on the deadline kill it and all it started."""
    raise_if_stopped()  # a stop asked for and swallowed on the way: start nothing new
    process = start_process(
        argv,
        name=f"{tool} in {where}",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        error=ToolError,
        missing=f"{tool} not found (needed for {where}): {argv[0]} is not on PATH",
    )
    try:
        stdout, stderr = process.popen.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        kill_group(process)
        raise ToolError(f"{tool} in {where} did not finish within {timeout_s:g} s") from exc
    except BaseException:
        kill_group(process)
        raise
    return ToolResult(
        tuple(argv),
        process.popen.returncode,
        stdout.decode(errors="replace"),
        stderr.decode(errors="replace"),
    )
