"""The fourth side of `benchfs bench metadata`: the real mdtest through
BenchFS's FUSE mount, the figure other file systems publish (``mdtest -n
ITEMS -F -u``: a directory per rank, one item at a time per rank), beside
the built-in ranks through the same mount.

It is a ``benchfs run`` of ``workload.tool = "mdtest"`` on the mount
(docs/RUN.md, "Tool runs"), with the built-in side's ranks, daemons and
items. It needs mdtest, looked for as the tool run does (PATH,
``$IOR_BIN_DIR``, ``/opt/ior/bin``, or ``--mdtest-path``), and the mount.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchfs.errors import ToolError
from benchfs.tools.locate import find_tool

PATH_OPTION = "--mdtest-path"


@dataclass(frozen=True)
class MdtestChoice:
    """The mdtest binary the side runs, or why the side is left out."""

    binary: str | None = None
    skipped: str | None = None


NOT_ASKED = MdtestChoice(skipped="not asked for")


def choose_mdtest(
    wanted: bool | None,
    tool_path: str | None,
    *,
    mount: bool,
    environ: Mapping[str, str] | None = None,
) -> MdtestChoice:
    """``wanted`` None: the side runs when mdtest is found and is left out
    otherwise; False: left out; True: it runs, or a ToolError says why not.
    A ``tool_path`` that names no executable is an error either way."""
    if wanted is False:
        return MdtestChoice(skipped="turned off (--no-mdtest)")
    if not mount:
        if wanted:
            raise ToolError("--mdtest runs mdtest through the mount: it cannot go with --no-mount")
        return MdtestChoice(skipped="it runs through the mount, turned off (--no-mount)")
    try:
        binary = find_tool("mdtest", tool_path, environ, setting=PATH_OPTION)
    except ToolError as error:
        if wanted or tool_path is not None:
            raise
        return MdtestChoice(skipped=str(error))
    return MdtestChoice(binary=str(binary))


def mdtest_args(items: int, kind: str, write_bytes: int, read_bytes: int) -> list[str]:
    """mdtest's arguments for the built-in side's case: ``-n`` items per
    rank, ``-u`` a directory per rank, ``-F``/``-D`` for one kind of item.
    With directories the phases are named (``-C -T -E -r``): mdtest's
    directory rename, which BenchFS refuses, is left out."""
    args = ["-n", str(items), *{"files": ["-F"], "dirs": ["-D"]}.get(kind, []), "-u"]
    if kind != "files":
        args += ["-C", "-T", "-E", "-r"]
    if write_bytes:
        args += ["-w", str(write_bytes)]
    if read_bytes:
        args += ["-e", str(read_bytes)]
    return args


def mdtest_overrides(
    binary: str, items: int, kind: str, write_bytes: int, read_bytes: int
) -> dict[str, Any]:
    """The settings that make a bench side's run mdtest's on the mount."""
    return {
        "metadata.mode": "off",  # the tool replaces the built-in workload
        "workload.interface": "mount",
        "workload.tool": "mdtest",
        "workload.tool_path": binary,
        "workload.tool_args": mdtest_args(items, kind, write_bytes, read_bytes),
    }
