"""What a run leaves if its orchestrator dies without cleaning up (SIGKILL,
a node's OOM killer), and how a later run or ``benchfs clean`` removes it.

Every ``benchfs run`` keeps a record of itself in this user's temporary
directory (``$TMPDIR/benchfs-<uid>/runs/<token>.json``): its pid and start
time, and every path it creates as it creates it (scratch, data, registry,
shared memory, results directories). A clean exit removes the record. A
record whose orchestrator is gone is a dead run: its processes (anything
of this user whose command line names the run's token) are stopped, the
FUSE mounts under its paths unmounted (``fusermount3 -u``, lazily as the
last resort: a mount whose process died answers nothing but "Transport
endpoint is not connected"), its paths removed, and the manifests it left
at ``running`` marked ``aborted`` and recorded so in the history the run
named (``benchfs.history.record``). A run whose launcher reaches other hosts
records them and the launcher's settings, so that the same launcher runs
the per-host helper's ``sweep`` (``benchfs.node.host``) on each of them
first: processes, mounts, paths and shared-memory files go there too,
as far as the hosts can still be reached. A run's mount of BenchFS whose run left
no record at all (``benchfs-<token>-mnt-p<k>/<node>`` of a run no longer
going) is unmounted too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import SHM_DIR, remove_shm_files
from benchfs.cluster.private import make_private_dir, user_temp_root
from benchfs.cluster.processes import (
    live_proc_stat,
    process_environment,
    process_ids,
    start_process,
    stop_process,
    wait_process,
)
from benchfs.config.model import LauncherConfig
from benchfs.errors import BenchfsError, LaunchError
from benchfs.launchers.base import launcher_class
from benchfs.launchers.programs import host_job
from benchfs.mount.cleanup import benchfs_mounts, mounts_under, unmount_all_under, unmount_now
from benchfs.results.atomic import write_text_atomic
from benchfs.results.manifest import finish_manifest, load_manifest, write_manifest

# Between SIGTERM and SIGKILL for a dead run's processes.
STOP_GRACE_S = 3.0
# For the sweep of a dead run's other hosts, the launcher's start-up included.
SWEEP_DEADLINE_S = 120.0
SWEEP_STOP_GRACE_S = 5.0
# Stands for the run's marker in the paths given to the per-host sweep.
SWEEP_RUN = "{run}"


def runs_dir() -> Path:
    return user_temp_root() / "runs"


def process_start_ticks(pid: int) -> int | None:
    """The start time of ``pid`` (clock ticks since boot), None when it is gone."""
    fields = live_proc_stat(pid)
    return None if fields is None else int(fields[19])


class RemoteHosts(BaseModel):
    """How to reach a run's hosts again: its launcher, its settings, its hosts."""

    model_config = ConfigDict(extra="forbid")

    launcher: str
    settings: LauncherConfig
    hosts: list[tuple[str, int]]
    python: str


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str
    pid: int
    start_ticks: int
    host: str
    paths: list[str] = []
    run_dirs: list[str] = []
    remote: RemoteHosts | None = None

    def alive(self) -> bool:
        """Whether the orchestrator still runs (the same process, not a reused pid)."""
        return process_start_ticks(self.pid) == self.start_ticks


class LiveRun:
    """The record of the running orchestrator, rewritten as it creates paths."""

    def __init__(self, token: str) -> None:
        ticks = process_start_ticks(os.getpid())
        assert ticks is not None  # this process runs
        self.record = RunRecord(
            token=token, pid=os.getpid(), start_ticks=ticks, host=socket.gethostname()
        )
        self.path = make_private_dir(runs_dir()) / f"{token}.json"
        self._write()

    def add_path(self, path: Path) -> None:
        if str(path) not in self.record.paths:
            self.record.paths.append(str(path))
            self._write()

    def reach_hosts(
        self, launcher: str, settings: LauncherConfig, hosts: list[Host], python: str
    ) -> None:
        """The run's paths also live on ``hosts``, reached through ``launcher``."""
        self.record.remote = RemoteHosts(
            launcher=launcher,
            settings=settings,
            hosts=[(host.name, host.slots) for host in hosts],
            python=python,
        )
        self._write()

    def add_run_dir(self, path: Path) -> None:
        self.record.run_dirs.append(str(path))
        self._write()

    def finish(self) -> None:
        """The run cleaned up after itself: nothing to find later."""
        self.path.unlink(missing_ok=True)

    def _write(self) -> None:
        write_text_atomic(self.path, self.record.model_dump_json(indent=2) + "\n")


@dataclass
class Cleaned:
    """What cleaning one dead run did."""

    token: str
    pid: int
    killed: list[str] = field(default_factory=list)
    unmounted: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    # Where each aborted run went in the history, or why not (one line each).
    history: list[str] = field(default_factory=list)
    # What the per-host helper said on each of the run's other hosts.
    hosts: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        done = []
        if self.killed:
            done.append(f"stopped {len(self.killed)} processes")
        if self.unmounted:
            done.append(f"unmounted {len(self.unmounted)} mounts")
        if self.removed:
            done.append(f"removed {len(self.removed)} paths")
        if self.aborted:
            done.append(f"marked {len(self.aborted)} manifests aborted")
        if self.hosts:
            done.append(f"swept {len(self.hosts)} hosts")
        what = ", ".join(done) or "nothing was left"
        if not self.token:
            return f"mounts of runs that are gone: {what}"
        return f"run {self.token} (orchestrator pid {self.pid} gone): {what}"


def dead_runs() -> list[tuple[Path, RunRecord]]:
    """Records of this user's runs on this host whose orchestrator is gone."""
    directory = runs_dir()
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.glob("*.json")):
        try:
            record = RunRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, ValidationError):
            continue  # half-written or foreign: not ours to judge
        if record.host == socket.gethostname() and not record.alive():
            found.append((path, record))
    return found


def clean_dead_runs() -> list[Cleaned]:
    """Stop, remove and mark aborted what every dead run left here."""
    cleaned = []
    for path, record in dead_runs():
        claim = path.with_suffix(".cleaning")
        try:
            os.rename(path, claim)  # another cleaner got there first: FileNotFoundError
        except FileNotFoundError:
            continue
        cleaned.append(clean_run(record))
        claim.unlink(missing_ok=True)
    orphans = unmount_orphan_mounts()
    if orphans.unmounted or orphans.problems:
        cleaned.append(orphans)
    return cleaned


# A run's mount point: <data dir>/benchfs-<pid>-<tag>-mnt-p<k>/<node> (benchfs.run.mounts).
_RUN_MOUNT = re.compile(r"^benchfs-(\d+-[0-9a-f]+)-mnt-p\d+$")


def unmount_orphan_mounts() -> Cleaned:
    """Unmount run mounts of BenchFS whose orchestrator is gone, found by
    their mount point alone (the run's record may be elsewhere, under
    another $TMPDIR, or removed): this user's only. The token starts with
    the orchestrator's pid: while a process of that pid lives, the mount
    is left alone."""
    result = Cleaned("", 0)
    for entry in benchfs_mounts():
        mountpoint = Path(entry.mount_point)
        match = _RUN_MOUNT.match(mountpoint.parent.name)
        if match is None or process_start_ticks(int(match.group(1).split("-")[0])) is not None:
            continue
        try:
            owner = os.stat(mountpoint.parent).st_uid
        except OSError:
            continue
        if owner != os.geteuid():
            continue
        problem = unmount_now(mountpoint)
        if problem is not None:
            problem = unmount_now(mountpoint, lazy=True)
        if problem is None:
            result.unmounted.append(str(mountpoint))
            with contextlib.suppress(OSError):
                mountpoint.rmdir()
                mountpoint.parent.rmdir()
        else:
            result.problems.append(problem)
    return result


def sweep_hosts(remote: RemoteHosts, token: str, paths: list[str], result: Cleaned) -> None:
    """The per-host helper's ``sweep`` on each of a dead run's hosts, through
    the run's own launcher; what each host says goes into ``result``.

    The run's marker (``benchfs-<token>``) never appears whole on the sweep's
    command line (paths carry ``{run}`` in its place), or the sweep would
    stop its own launcher and helpers with the run's processes."""
    hosts = [Host(name, slots) for name, slots in remote.hosts]
    marker = f"benchfs-{token}"
    args = [token, *(path.replace(marker, SWEEP_RUN) for path in paths)]
    try:
        launcher = launcher_class(remote.launcher).from_settings(remote.settings)
        argv = host_job(launcher, hosts, "sweep", args, python=remote.python)
    except (BenchfsError, TypeError, ValueError) as error:
        result.problems.append(f"cannot reach the run's {len(hosts)} hosts: {error}")
        return
    env = process_environment(os.environ)
    what = f"the sweep of {len(hosts)} hosts through {remote.launcher}"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = start_process(
                argv, name=what, env=env, stdout=out, stderr=err,
                stuck_when=launcher.stuck_output(),
            )  # fmt: skip
        except LaunchError as error:
            result.problems.append(str(error))
            return
        try:
            code = wait_process(process, SWEEP_DEADLINE_S)
        except LaunchError as error:
            stop_process(process, SWEEP_STOP_GRACE_S)
            result.problems.append(str(error))
            return
        out.seek(0)
        err.seek(0)
        said, complaints = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    result.hosts += [line for line in said.splitlines() if line.strip()]
    if code != 0:
        tail = " | ".join(complaints.strip().splitlines()[-3:]) or "no output"
        result.problems.append(f"{what} exited with {code}: {tail}")


def clean_run(record: RunRecord) -> Cleaned:
    # The history pulls in SQLAlchemy: not for the per-host helper, which imports this module.
    from benchfs.history.record import record_left_run

    result = Cleaned(record.token, record.pid)
    marker = f"benchfs-{record.token}"
    if record.remote is not None:
        sweep_hosts(record.remote, record.token, list(reversed(record.paths)), result)
    result.killed = stop_processes_naming(marker)
    for text in reversed(record.paths):
        path = Path(text)
        unmounted, problems = unmount_all_under(path)
        result.unmounted += [str(point) for point in unmounted]
        if problems or mounts_under(path):
            # Never delete through a mount: it would delete the file system's files.
            result.problems += [f"{path}: not removed: {p}" for p in problems or ["still mounted"]]
            continue
        if os.path.lexists(path):
            try:
                _remove(path)
                result.removed.append(text)
            except OSError as error:
                result.problems.append(f"{path}: not removed: {error.strerror or error}")
    if SHM_DIR.is_dir():
        result.removed += [str(p) for p in remove_shm_files(marker)]
    why = f"aborted: the orchestrator (pid {record.pid}) was gone"
    note = (
        f"cleaned later by benchfs: orchestrator pid {record.pid} had died; "
        f"stopped {len(result.killed)} processes ({', '.join(result.killed) or 'none'}), "
        f"unmounted {len(result.unmounted)} mounts, "
        f"removed {len(result.removed)} temporary paths"
    )
    for text in record.run_dirs:
        try:
            manifest = load_manifest(Path(text))
        except BenchfsError as error:
            result.problems.append(str(error))
            continue
        if manifest.status != "running":
            continue
        manifest = finish_manifest(manifest, "aborted", error=why)
        manifest.notes = [*manifest.notes, note]
        write_manifest(Path(text), manifest)
        result.aborted.append(text)
        result.history.append(record_left_run(Path(text), manifest.effective_config))
    return result


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def processes_naming(marker: str) -> list[int]:
    """This user's processes whose command line contains ``marker``."""
    found = []
    needle = marker.encode()
    me = os.getpid()
    for pid in process_ids():
        if pid == me:
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != os.geteuid():
                continue
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and process_start_ticks(pid) is not None:
            found.append(pid)
    return found


def stop_processes_naming(marker: str) -> list[str]:
    """SIGTERM every process naming ``marker``, SIGKILL what is left after a grace period."""
    pids = processes_naming(marker)
    described = [_describe(pid) for pid in pids]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and any(process_start_ticks(p) for p in pids):
        time.sleep(0.05)
    for pid in processes_naming(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return described


def _describe(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"pid {pid}"
    words = [a.decode(errors="replace") for a in argv if a]
    program = next((w.split(".")[-1] for w in words if w.startswith("benchfs.node.")), None)
    return f"{program or Path(words[0]).name if words else '?'} (pid {pid})"
