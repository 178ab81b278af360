#!/usr/bin/env python3
"""The mount's POSIX conformance, per pjdfstest area, beside ext4 on the same machine.

pjdfstest (https://github.com/pjd/pjdfstest, built apart: `autoreconf -ifs &&
./configure && make pjdfstest` in its checkout) runs each area's test files
with `prove -v` from inside the directory under test, as root, switching uids
for the permission tests. This script runs the areas

- on ext4: a file system it makes on a loop device (a sparse image in its
  temporary directory), or the directory `--ext4-dir` names;
- on BenchFS: `--nodes` local daemons (`benchfs daemon --config`, shared
  memory transport, 64 KiB chunks so small files cross chunk borders) and
  `benchfs mount --foreground --allow-other` of them (other users must reach
  the mount), all started and stopped here;

each area at the root of the file system under test (emptied after it; in a
fresh directory of its own in `--ext4-dir`), each test file under
`--timeout` seconds (a file that hangs is killed, what it printed counts, and
the table says "timeout"). It parses prove's TAP output into passed/total
tests per area (leaving out those the suite marks "# TODO" for Linux),
prints a table (area, BenchFS passed/total, ext4 passed/total, BenchFS
passed / ext4 passed) and, with `--json FILE`, writes every file's
counts and failing test lines. The mount, daemons, ext4 mount and loop device
go on every exit path (an error, SIGINT, SIGTERM, SIGHUP).

Usage (root; `--benchfs` is the build measured, by default the one beside the
Python running this):
  .venv/bin/python benchmarks/pjdfstest_areas.py /opt/pjdfstest
      [--benchfs .venv/bin/benchfs] [--areas chmod ...] [--nodes 4]
      [--timeout 600] [--ext4-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType

#: The areas of the suite that apply to Linux (chflags and granular are BSD's;
#: utimensat is the one that names times).
AREAS = (
    "chmod", "chown", "link", "mkdir", "mkfifo", "mknod", "open", "rename",
    "rmdir", "symlink", "truncate", "ftruncate", "unlink", "utimensat",
)  # fmt: skip
NODES = 4
CHUNK = 64 * 1024
IMAGE_BYTES = 1 << 30
#: Daemons registering, the mount going live: a guard against a hang only.
START_GUARD_S = 120.0
STOP_GUARD_S = 30.0

PLAN = re.compile(r"^1\.\.(\d+)")
OK = re.compile(r"^ok \d+")
NOT_OK = re.compile(r"^not ok \d+")


class Stopped(Exception):
    """A stop signal arrived: unwind through the cleanups."""


@dataclass
class FileResult:
    name: str
    passed: int = 0
    total: int = 0
    timed_out: bool = False
    #: Tests the suite marks "# TODO" (expected to fail on this system): left out.
    todo: int = 0
    failures: list[str] = field(default_factory=list)


@dataclass
class AreaResult:
    area: str
    files: list[FileResult] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(f.passed for f in self.files)

    @property
    def total(self) -> int:
        return sum(f.total for f in self.files)

    @property
    def timed_out(self) -> list[str]:
        return [f.name for f in self.files if f.timed_out]

    def cell(self) -> str:
        text = f"{self.passed}/{self.total}"
        return f"{text} (timeout: {' '.join(self.timed_out)})" if self.timed_out else text

    def as_json(self) -> dict[str, object]:
        files = [asdict(f) for f in self.files]
        return {"passed": self.passed, "total": self.total, "files": files}


def parse_tap(name: str, output: str, timed_out: bool) -> FileResult:
    """Counts of one test file's TAP lines, the "# TODO" ones left out (the
    suite expects them to fail on Linux, as they do on ext4); the plan sets
    the total when the file ran fewer tests than it planned (it died or was
    killed part way)."""
    result = FileResult(name, timed_out=timed_out)
    planned = 0
    seen = 0
    for line in output.splitlines():
        if match := PLAN.match(line):
            planned = int(match.group(1))
            continue
        is_ok = OK.match(line) is not None
        if not is_ok and NOT_OK.match(line) is None:
            continue
        seen += 1
        if "# TODO" in line:
            result.todo += 1
        elif is_ok:
            result.passed += 1
        else:
            result.failures.append(line.strip())
    result.total = max(planned, seen) - result.todo
    return result


def run_file(test: Path, cwd: Path, timeout: float) -> FileResult:
    """One test file through `prove -v`, in its own session so that a hang is
    killed with everything it started."""
    proc = subprocess.Popen(
        ["prove", "-v", str(test)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: os.umask(0o022),
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        timed_out = True
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return parse_tap(f"{test.parent.name}/{test.name}", output, timed_out)


def clear(directory: Path) -> None:
    """Whatever an area left in `directory` (failed tests leave their files)."""
    for entry in directory.iterdir():
        if entry.name == "lost+found":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def run_areas(
    suite: Path, root: Path, areas: list[str], timeout: float, subdirs: bool
) -> list[AreaResult]:
    """Each area at `root` (the file system's root, emptied after each), or with
    `subdirs` in a fresh directory below it (a directory the user named)."""
    results = []
    for area in areas:
        workdir = root / f"pjdfstest-{area}" if subdirs else root
        if subdirs:
            workdir.mkdir(mode=0o755)
        result = AreaResult(area)
        try:
            for test in sorted((suite / "tests" / area).glob("*.t")):
                result.files.append(run_file(test, workdir, timeout))
        finally:
            if subdirs:
                shutil.rmtree(workdir, ignore_errors=True)
            else:
                clear(workdir)
        print(f"  {area}: {result.cell()}", file=sys.stderr, flush=True)
        results.append(result)
    return results


def run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed: {done.stderr.strip() or done.stdout.strip()}")


def stop_process(proc: subprocess.Popen[bytes], group: bool = False) -> None:
    """SIGTERM, then SIGKILL (of its process group when it leads one) after the guard."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GUARD_S)
    except subprocess.TimeoutExpired:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
        proc.wait()


@contextmanager
def ext4_on_loop(root: Path) -> Iterator[Path]:
    """A fresh ext4 on a loop device over a sparse image, mounted at root/ext4."""
    image = root / "ext4.img"
    with image.open("wb") as handle:
        handle.truncate(IMAGE_BYTES)
    done = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"losetup {image} failed: {done.stderr.strip()}")
    device = done.stdout.strip()
    point = root / "ext4"
    mounted = False
    try:
        run(["mkfs.ext4", "-q", device], f"mkfs.ext4 {device}")
        point.mkdir()
        run(["mount", "-t", "ext4", device, str(point)], f"mount {device}")
        mounted = True
        yield point
    finally:
        if mounted and subprocess.run(["umount", str(point)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(point)], check=False)
        subprocess.run(["losetup", "-d", device], check=False)


def is_mounted(point: Path, fstype: str) -> bool:
    """`point` in this process's /proc/self/mountinfo with type `fstype`."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" - ", 1)
        if len(fields) != 2:
            continue
        where = fields[0].split()[4].encode().decode("unicode_escape")
        if where == str(point) and fields[1].split()[0] == fstype:
            return True
    return False


def daemon_config(root: Path, node_id: int) -> Path:
    values = {
        "node_name": f"node{node_id}",
        "node_id": node_id,
        "data_dir": str(root / "data" / f"node{node_id}"),
        "registry_dir": str(root / "registry"),
        "chunk_size": CHUNK,
        "buffer_pool_size": 8 << 20,
        "durability": "none",
        "transport": "shm",
    }
    path = root / f"node{node_id}.toml"
    path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items()))
    return path


def wait_until(
    condition: Callable[[], bool], what: str, procs: list[subprocess.Popen[bytes]]
) -> None:
    until = time.monotonic() + START_GUARD_S
    while not condition():
        for proc in procs:
            if proc.poll() is not None:
                raise SystemExit(f"{what}: {proc.args!r} exited with {proc.returncode}")
        if time.monotonic() > until:
            raise SystemExit(f"{what}: not within {START_GUARD_S:g} s")
        time.sleep(0.05)


@contextmanager
def benchfs_mount(benchfs: Path, root: Path, nodes: int) -> Iterator[Path]:
    """`nodes` daemons and a mount of them at root/mnt, for the time of the block."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_RANK")}
    registry = root / "registry"
    with ExitStack() as stack:
        daemons: list[subprocess.Popen[bytes]] = []
        for node_id in range(nodes):
            with (root / f"node{node_id}.log").open("ab") as log:
                command = [str(benchfs), "daemon", "--config", str(daemon_config(root, node_id))]
                proc = subprocess.Popen(command, stdout=log, stderr=log, env=env)
            daemons.append(proc)
            stack.callback(stop_process, proc)
        wait_until(
            lambda: all((registry / f"node{i}.json").exists() for i in range(nodes)),
            "the daemons registering",
            daemons,
        )
        point = root / "mnt"
        point.mkdir(mode=0o700)
        with (root / "mount.log").open("ab") as log:
            mount = subprocess.Popen(
                [str(benchfs), "mount", "--foreground", "--allow-other",
                 "--registry", str(registry), str(point)],
                stdout=log, stderr=log, env=env, start_new_session=True,
            )  # fmt: skip
        # Its SIGTERM unmounts; a mount left behind by a kill is detached after.
        stack.callback(lambda: subprocess.run(["fusermount3", "-u", "-z", str(point)],
                                              capture_output=True, check=False))  # fmt: skip
        stack.callback(stop_process, mount, True)
        wait_until(lambda: is_mounted(point, "fuse.benchfs"), "the mount", [mount, *daemons])
        yield point


def pjdfstest_commit(suite: Path) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(suite), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


def table(benchfs: list[AreaResult], ext4: list[AreaResult]) -> str:
    rows = [("area", "BenchFS passed/total", "ext4 passed/total", "BenchFS/ext4")]
    for ours, theirs in zip(benchfs, ext4, strict=True):
        ratio = f"{ours.passed / theirs.passed:.0%}" if theirs.passed else "-"
        rows.append((ours.area, ours.cell(), theirs.cell(), ratio))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows
    )


def raise_stopped(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def check_options(options: argparse.Namespace) -> None:
    if os.geteuid() != 0:
        raise SystemExit("pjdfstest switches uids and the mount needs --allow-other: run as root")
    suite: Path = options.pjdfstest
    if not (suite / "pjdfstest").is_file() or not os.access(suite / "pjdfstest", os.X_OK):
        raise SystemExit(f"{suite}: no built pjdfstest there (make pjdfstest)")
    for area in options.areas:
        if not (suite / "tests" / area).is_dir():
            raise SystemExit(f"--areas {area}: no such area in {suite}/tests")
    if not os.access(options.benchfs, os.X_OK):
        raise SystemExit(f"--benchfs {options.benchfs}: not an executable")
    if options.ext4_dir is not None and not options.ext4_dir.is_dir():
        raise SystemExit(f"--ext4-dir {options.ext4_dir}: not a directory")
    if shutil.which("prove") is None:
        raise SystemExit("prove is not installed (Debian package perl)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pjdfstest", type=Path, help="the built pjdfstest checkout")
    parser.add_argument(
        "--benchfs",
        type=Path,
        default=Path(sys.executable).parent / "benchfs",
        help="the benchfs command of the build to measure",
    )
    parser.add_argument("--areas", nargs="+", default=list(AREAS))
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test file")
    parser.add_argument("--ext4-dir", type=Path, default=None, help="an ext4 directory to use")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    options = parser.parse_args()
    check_options(options)
    suite = options.pjdfstest.resolve()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, raise_stopped)
    try:
        with tempfile.TemporaryDirectory(prefix="benchfs-pjdfstest-") as tmp:
            root = Path(tmp)
            with ExitStack() as stack:
                ext4_root = options.ext4_dir or stack.enter_context(ext4_on_loop(root))
                print("ext4:", file=sys.stderr, flush=True)
                ext4 = run_areas(
                    suite, ext4_root, options.areas, options.timeout, options.ext4_dir is not None
                )
            with benchfs_mount(options.benchfs, root, options.nodes) as point:
                print("BenchFS:", file=sys.stderr, flush=True)
                ours = run_areas(suite, point, options.areas, options.timeout, False)
    except (KeyboardInterrupt, Stopped) as stop:
        raise SystemExit(f"stopped ({stop or 'SIGINT'}); everything started was stopped") from None
    print(table(ours, ext4))
    if options.json is not None:
        report = {
            "pjdfstest": str(suite),
            "pjdfstest_commit": pjdfstest_commit(suite),
            "benchfs": str(options.benchfs),
            "nodes": options.nodes,
            "timeout_s": options.timeout,
            "areas": [
                {"area": o.area, "benchfs": o.as_json(), "ext4": e.as_json()}
                for o, e in zip(ours, ext4, strict=True)
            ],
        }
        options.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
