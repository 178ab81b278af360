"""Helpers for tests that run `benchfs run` for real: small sizes, the CLI in
a subprocess, and checks that a run left nothing behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import pytest
from cluster.proc_helpers import alive

from benchfs.tools.locate import search_dirs

SHM = Path("/dev/shm")
needs_fio_and_iostat = pytest.mark.skipif(
    shutil.which("fio") is None or shutil.which("iostat") is None, reason="needs fio and iostat"
)
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def tool_search(tool: str) -> str:
    """Where benchfs looks for ``tool`` when no path is set (PATH, then
    ``benchfs.tools.locate.search_dirs``), as one search path."""
    return os.pathsep.join(part for part in (os.environ.get("PATH"), *search_dirs(tool)) if part)


IOR_SEARCH = tool_search("ior")
needs_mdtest = pytest.mark.skipif(
    shutil.which("mdtest", path=IOR_SEARCH) is None or shutil.which("iostat") is None,
    reason="needs mdtest (PATH, $IOR_BIN_DIR, /opt/ior/bin) and iostat",
)
# IOR and mdtest at their smallest, each with a phase its summary must hold.
small_ior_and_mdtest = pytest.mark.parametrize(
    ("tool", "args", "phase"),
    [
        ("ior", "-a,POSIX,-w,-r,-F,-t,64k,-b,1m", "write"),
        ("mdtest", "-n,20,-F,-u", "File creation"),
    ],
)


def mount_missing() -> str | None:
    """Why BenchFS cannot be mounted here, None when it can."""
    import benchfs_native

    if not hasattr(benchfs_native, "serve_mount"):
        return "this build of benchfs_native has no FUSE mount (serve_mount)"
    if not os.path.exists("/dev/fuse") or not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "needs /dev/fuse (root here)"
    if shutil.which("fusermount3") is None:
        return "needs fusermount3 (Debian package fuse3)"
    return None


needs_mount = pytest.mark.skipif(mount_missing() is not None, reason=str(mount_missing()))


def small_args(tmp_path: Path, *extra: str) -> list[str]:
    """A quick local run: 4 daemons, 4 ranks, 16 transfers of 64 KiB per rank,
    no stonewall (the default main job's 15 s phases are not for tests)."""
    return [
        "--results-dir", str(tmp_path / "results"),
        "--set", f"cluster.data_dir={tmp_path / 'data'}",
        "--set", "cluster.chunk_size=256k",
        "--set", "cluster.buffer_pool_size=16m",
        "--set", "cluster.deadlines.register_s=60",
        "--set", "cluster.deadlines.shutdown_s=5",
        "--set", "preflight.enabled=false",
        "--set", "workload.stonewall_s=0",
        "--transfer-size", "64k",
        "--block-size", "1m",
        *extra,
    ]  # fmt: skip


def environment() -> dict[str, str]:
    return {**os.environ, **ROOT_ENV}


def benchfs_run(
    args: list[str], timeout: float = 180, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", "run", *args],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=timeout,
        cwd=cwd,
    )


@dataclass
class Running:
    """A `benchfs run` in progress: its process, scratch dir and output."""

    process: subprocess.Popen[bytes]
    scratch: Path
    log: Path

    @property
    def token(self) -> str:
        return self.scratch.name.removeprefix(".benchfs-")

    def pids(self, pattern: str) -> list[int]:
        """Pids recorded in the scratch dir's JSON files (``g0/registry/*.json``;
        the registry's members file lists them all and is not one of them)."""
        return [
            int(json.loads(p.read_text())["pid"])
            for p in self.scratch.glob(pattern)
            if p.name != "members.json"
        ]

    def finish(self, timeout: float = 120) -> tuple[int, str]:
        code = self.process.wait(timeout=timeout)
        return code, self.log.read_text()


@contextmanager
def running_phase(tmp_path: Path, args: list[str]) -> Iterator[Running]:
    """Start `benchfs run` in its own session (so a test can signal it alone)
    and yield once its first workload phase runs; killed if still there after."""
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "benchfs", "run", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment(),
            start_new_session=True,
        )

    def started(check: Callable[[], Any]) -> Callable[[], Any]:
        def probe() -> Any:
            if process.poll() is not None:
                raise AssertionError(f"benchfs run ended early:\n{log.read_text()}")
            return check()

        return probe

    try:
        scratch = wait_for(
            started(lambda: scratch_dirs(tmp_path / "results")), "the run's scratch", log=log
        )[0]
        wait_for(
            started(lambda: (scratch / "p0" / "phase.json").is_file()), "the first phase", log=log
        )
        yield Running(process, scratch, log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_for(
    check: Callable[[], Any], what: str, timeout: float = 120, log: Path | None = None
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    output = f":\n{log.read_text()}" if log is not None else ""
    raise AssertionError(f"timed out after {timeout} s waiting for {what}{output}")


def run_dirs(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith("."))


def scratch_dirs(results: Path) -> list[Path]:
    return sorted(results.glob(".benchfs-*")) if results.is_dir() else []


class RunWatcher(threading.Thread):
    """A thread that notes something while a run goes on: ``with watcher:``
    starts it, and stops and joins it on leaving, whether the run passed or
    raised."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join()


class NamespaceWatcher(RunWatcher):
    """Notes the network namespace of each process a run records while it runs.

    `kinds` maps a name to the glob of its records under a run's scratch
    directory and the record key that names the process; `seen[name]` then maps
    that key to the process's namespace."""

    def __init__(self, results: Path, kinds: dict[str, tuple[str, str]]) -> None:
        super().__init__()
        self.results = results
        self.kinds = kinds
        self.seen: dict[str, dict[str, str]] = {name: {} for name in kinds}

    def run(self) -> None:
        while not self.stop.wait(0.05):
            for scratch in scratch_dirs(self.results):
                for name, (pattern, key) in self.kinds.items():
                    self._note(scratch.glob(pattern), key, self.seen[name])

    @staticmethod
    def _note(paths: Iterator[Path], key: str, into: dict[str, str]) -> None:
        for path in paths:
            try:
                record = json.loads(path.read_text())
                namespace = os.readlink(f"/proc/{int(record['pid'])}/ns/net")
            except (OSError, ValueError, KeyError):
                continue  # not written yet, or the process is already gone
            into.setdefault(str(record[key]), namespace)


def manifest(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "manifest.json").read_text())
    return data


def summary(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "workload" / "summary.json").read_text())
    return data


def processes_mentioning(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def assert_nothing_left(tmp_path: Path, token: str, pids: Sequence[int] = ()) -> None:
    """No process, scratch, registry, data dir or shared-memory file of the run."""
    results = tmp_path / "results"
    assert [pid for pid in pids if alive(pid)] == []
    assert processes_mentioning(token) == []
    assert scratch_dirs(results) == []
    data = tmp_path / "data"
    assert not data.exists() or list(data.iterdir()) == []
    assert list(SHM.glob(f"benchfs-{token}*")) == []
