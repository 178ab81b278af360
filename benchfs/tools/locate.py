"""Find the binary of a benchmark tool (fio, IOR, mdtest, io500) and its version line.

``workload.tool_path`` names the binary or the directory holding it; without
it the tool is looked for on PATH, then (IOR and mdtest, which are not
packaged and usually built by hand) in ``$IOR_BIN_DIR`` and ``/opt/ior/bin``,
and (the io500 binary, built by its own ``prepare.sh``) in ``$IO500_BIN_DIR``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from benchfs.errors import ToolError
from benchfs.tools.process import run_tool

IOR_DIRS_VARIABLE = "IOR_BIN_DIR"
IOR_DEFAULT_DIR = "/opt/ior/bin"
IO500_DIR_VARIABLE = "IO500_BIN_DIR"
_IOR_FAMILY = frozenset({"ior", "mdtest"})
VERSION_TIMEOUT_S = 30.0
SETTING = "workload.tool_path"


def search_dirs(tool: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """Where ``tool`` is looked for when no path is set, in order (PATH aside)."""
    environ = os.environ if environ is None else environ
    if tool == "io500":
        return [environ[IO500_DIR_VARIABLE]] if environ.get(IO500_DIR_VARIABLE) else []
    if tool not in _IOR_FAMILY:
        return []
    found = [environ[IOR_DIRS_VARIABLE]] if environ.get(IOR_DIRS_VARIABLE) else []
    return [*found, IOR_DEFAULT_DIR]


def find_tool(
    tool: str,
    tool_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    setting: str = SETTING,
) -> Path:
    """The executable of ``tool``; a ToolError names the tool and the setting
    (``setting``, the key that points at it) otherwise."""
    environ = os.environ if environ is None else environ
    if tool_path is not None:
        given = Path(tool_path).expanduser()
        candidate = given / tool if given.is_dir() else given
        if _executable(candidate):
            return candidate.absolute()
        named = (
            f"{candidate}: no such file or directory"
            if not candidate.exists()
            else f"{candidate} is not an executable file"
        )
        raise ToolError(f"{tool} not found: {named} ({setting} = {tool_path!r})")
    on_path = shutil.which(tool, path=environ.get("PATH", os.defpath))
    if on_path is not None:
        return Path(on_path).absolute()
    for directory in search_dirs(tool, environ):
        candidate = Path(directory) / tool
        if _executable(candidate):
            return candidate
    places = ", ".join(["PATH", *search_dirs(tool, environ)])
    variable = f" (or ${IO500_DIR_VARIABLE})" if tool == "io500" else ""
    raise ToolError(
        f"{tool} not found on {places}: set {setting}{variable} to the {tool} binary or its "
        "directory"
    )


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def fio_version(binary: Path) -> str:
    """``fio --version``'s line, e.g. ``fio-3.33``."""
    result = run_tool([str(binary), "--version"], tool="fio", where="--version",
                      timeout_s=VERSION_TIMEOUT_S)  # fmt: skip
    line = first_line(result.stdout)
    if result.returncode != 0 or not line:
        raise ToolError(f"{binary} --version failed with exit code {result.returncode}")
    return line


def version_line(tool: str, output: str) -> str:
    """The line of IOR's or mdtest's output that names its version (``IOR-4.0.0: ...``,
    ``mdtest-4.0.0 was launched ...``), else its first line."""
    for line in output.splitlines():
        if line.lower().startswith(f"{tool}-"):
            return line.strip()
    return first_line(output)


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
