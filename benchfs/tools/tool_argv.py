"""The exact command lines of IOR, mdtest and fio under ``benchfs run``.

The user gives the tool's own arguments (``workload.tool_args``, or a fio
job file); BenchFS adds where the tool works (under the target directory)
and how it reports (IOR's JSON summary file, fio's JSON), so its output can
be parsed into the run's summary. Arguments that would change either are
refused, naming the setting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from benchfs.errors import ConfigError

# Under the target directory: where each tool works.
IOR_DIR = "ior"
IOR_TEST_FILE = "testfile"
MDTEST_DIR = "mdtest"
ARGS_SETTING = "workload.tool_args"


def ior_argv(binary: Path, args: Sequence[str], target: Path, summary_file: Path) -> list[str]:
    """IOR writing ``<target>/ior/testfile*``, its JSON summary into ``summary_file``."""
    _refuse(args, "ior", {"-o", "--testFile"}, "the test file is under the target")
    for index, token in enumerate(args):
        if token == "-O" and index + 1 < len(args):
            key = args[index + 1].split("=", 1)[0].strip()
            if key in ("summaryFile", "summaryFormat"):
                raise ConfigError(
                    f"{ARGS_SETTING}: ior -O {key} is set by benchfs (it reads IOR's JSON summary)"
                )
    return [
        str(binary),
        *args,
        "-o",
        str(target / IOR_DIR / IOR_TEST_FILE),
        "-O",
        "summaryFormat=JSON",
        "-O",
        f"summaryFile={summary_file}",
    ]


def mdtest_argv(binary: Path, args: Sequence[str], target: Path) -> list[str]:
    """mdtest working in ``<target>/mdtest``; its text output goes to stdout."""
    _refuse(args, "mdtest", {"-d"}, "its directory is under the target")
    return [str(binary), *args, "-d", str(target / MDTEST_DIR)]


def fio_argv(
    binary: Path, args: Sequence[str], directory: Path, job_file: Path | None = None
) -> list[str]:
    """fio in ``directory``, its JSON report on stdout; the job file (if any) last.

    The files fio makes beside the data (a verifying job's
    ``*-verify.state``) go to ``directory`` too: by default they land in
    the working directory, where every node of a shared one would write
    the same names.
    """
    for token in args:
        option = token.split("=", 1)[0]
        if option in ("--output", "--output-format", "--directory", "--filename", "--aux-path"):
            why = "it reports in JSON" if option.startswith("--output") else "it runs in the target"
            raise ConfigError(f"{ARGS_SETTING}: fio {option} is set by benchfs ({why})")
    argv = [str(binary), "--output-format=json", f"--directory={directory}",
            f"--aux-path={directory}", *args]  # fmt: skip
    return [*argv, str(job_file)] if job_file is not None else argv


# A fio job file line that would send the job outside the target directory.
_FIO_PLACEMENT = re.compile(r"^\s*(directory|filename)\s*=", re.IGNORECASE)


def check_fio_job(path: Path, setting: str = "workload.fio_job") -> None:
    """A readable job file that leaves the directory to benchfs."""
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise ConfigError(f"{setting}: cannot read {path}: {error.strerror}") from error
    for number, line in enumerate(lines, start=1):
        found = _FIO_PLACEMENT.match(line)
        if found:
            raise ConfigError(
                f"{path}, line {number}: {found[1]} is set by benchfs (the job runs in the target)"
            )


def _refuse(args: Sequence[str], tool: str, options: set[str], why: str) -> None:
    for token in args:
        option = token.split("=", 1)[0]
        if option in options:
            raise ConfigError(f"{ARGS_SETTING}: {tool} {option} is set by benchfs ({why})")
