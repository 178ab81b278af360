"""``manifest.json``: what ran, where, with which settings and build.

``ManifestRecorder`` is its one writer during a run: written when the run
starts (status ``running``), again as each step records what it found, and
when the run ends; atomically each time, so a killed run still leaves a
readable manifest that says how far it got.
"""

from __future__ import annotations

import importlib
import os
import platform
import socket
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from analysis.bounded import load_json_bounded
from analysis.layout import DATA_VERSION as DATA_VERSION
from analysis.layout import MANIFEST
from benchfs import __version__
from benchfs.cluster.hostfile import Host
from benchfs.errors import BenchfsError
from benchfs.results.atomic import write_text_atomic

MANIFEST_NAME = MANIFEST
# Environment that changes how the transport and MPI behave, and the job's identity.
ENVIRONMENT_PREFIXES = ("UCX_", "OMPI_", "BENCHFS_")
ENVIRONMENT_NAMES = ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_CLUSTER_NAME", "PBS_JOBID")

# aborted: the orchestrator died; a later run or `benchfs clean` found what it left.
Status = Literal["running", "completed", "failed", "interrupted", "aborted"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HostEntry(_Record):
    name: str
    slots: int


class ExcludedHost(_Record):
    """A host left out of the run, why, and the measurements that showed it."""

    name: str
    reason: str
    evidence: dict[str, Any] = {}


class HostsRecord(_Record):
    given: list[HostEntry]
    used: list[HostEntry]
    excluded: list[ExcludedHost] = []


class RanksRecord(_Record):
    """Processes as actually launched (not as requested)."""

    launcher: str
    per_host: dict[str, int]
    total: int
    daemons_per_host: dict[str, int] = {}
    # The workload ranks' command line exactly as started (launcher and program).
    command: list[str] = []

    @model_validator(mode="after")
    def _total_matches(self) -> RanksRecord:
        if self.total != sum(self.per_host.values()):
            raise ValueError(f"total {self.total} != sum of per_host {sum(self.per_host.values())}")
        return self


class SweepRecord(_Record):
    index: int
    count: int
    values: dict[str, Any]


class Manifest(_Record):
    data_version: int = DATA_VERSION
    label: str
    command_line: list[str]
    effective_config: dict[str, Any]
    sweep: SweepRecord | None = None
    package: dict[str, str]
    native: dict[str, Any]
    hosts: HostsRecord
    ranks: RanksRecord | None = None
    # What the preflight step did (or why it did not run), and its evidence.
    preflight: dict[str, Any] | None = None
    # Nodes whose disk was slow during the workload (iostat), per node and since when.
    stragglers: dict[str, Any] | None = None
    # The live view (docs/DIAGNOSE.md): its interval, rule, policy and every alert raised.
    live: dict[str, Any] | None = None
    # The daemons as they registered (node name, id, host, pid).
    daemons: list[dict[str, Any]] = []
    # A posix: target: its directory and the file system behind it on every host.
    target: dict[str, Any] | None = None
    # How the workload reached BenchFS: "native" (the engine's client) or
    # "mount" (POSIX calls on its FUSE mount on every node).
    interface: Literal["native", "mount"] = "native"
    # With the mount: its options, and per node the mount point and what the kernel lists.
    mount: dict[str, Any] | None = None
    # A tool run (workload.tool): name, binary, version line, exact command lines, outputs.
    tool: dict[str, Any] | None = None
    # A suite run (suite.name): the suite, its tool and every size and the stonewall it ran with.
    suite: dict[str, Any] | None = None
    # Anything the reader of the results should know that is not an error.
    notes: list[str] = []
    environment: dict[str, str]
    launched_from: str
    python: str
    start_time: datetime
    end_time: datetime | None = None
    status: Status = "running"
    error: str | None = None


def native_build_info() -> dict[str, Any]:
    """The engine's build info, or why it is unavailable (never raises)."""
    try:
        # Imported here: the manifest must be writable even without the engine.
        native = importlib.import_module("benchfs_native")
        info = dict(native.build_info())
    except Exception as error:  # absent, half-built or broken: record, do not fail the run
        return {"available": False, "reason": f"{type(error).__name__}: {error}"}
    return {"available": True, **info}


def captured_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """UCX_*, OMPI_*, BENCHFS_* and the job id variables, sorted."""
    env = os.environ if env is None else env
    return {
        key: env[key]
        for key in sorted(env)
        if key.startswith(ENVIRONMENT_PREFIXES) or key in ENVIRONMENT_NAMES
    }


def host_entries(hosts: Iterable[Host]) -> list[HostEntry]:
    return [HostEntry(name=host.name, slots=host.slots) for host in hosts]


def new_manifest(
    *,
    label: str,
    command_line: Sequence[str],
    effective_config: Mapping[str, Any],
    hosts_given: Sequence[Host],
    hosts_used: Sequence[Host],
    excluded: Sequence[ExcludedHost] = (),
    sweep: SweepRecord | None = None,
    env: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> Manifest:
    """A manifest for a run that is starting now."""
    return Manifest(
        label=label,
        command_line=list(command_line),
        effective_config=dict(effective_config),
        sweep=sweep,
        package={"name": "benchfs", "version": __version__},
        native=native_build_info(),
        hosts=HostsRecord(
            given=host_entries(hosts_given),
            used=host_entries(hosts_used),
            excluded=list(excluded),
        ),
        environment=captured_environment(env),
        launched_from=socket.gethostname(),
        python=platform.python_version(),
        start_time=now or datetime.now(UTC),
    )


def finish_manifest(
    manifest: Manifest, status: Status, *, error: str | None = None, now: datetime | None = None
) -> Manifest:
    """A copy marked finished with ``status`` at ``now``."""
    return manifest.model_copy(
        update={"status": status, "error": error, "end_time": now or datetime.now(UTC)}
    )


class ManifestRecorder:
    """The manifest of one run, written as the run goes: one method per step."""

    def __init__(self, run_dir: Path, manifest: Manifest) -> None:
        self.run_dir = run_dir
        self.manifest = manifest
        self._write()

    def hosts(self, used: Sequence[Host], excluded: Sequence[ExcludedHost]) -> None:
        """After the preflight: the hosts the run goes on with, and those left out."""
        self.manifest.hosts.used = host_entries(used)
        self.manifest.hosts.excluded = list(excluded)

    def preflight(
        self, record: Mapping[str, Any], used: Sequence[Host], excluded: Sequence[ExcludedHost]
    ) -> None:
        """What the preflight did, and the hosts it kept and left out."""
        self.hosts(used, excluded)
        self.manifest.preflight = dict(record)
        self._write()

    def daemons(self, registered: Sequence[Mapping[str, Any]], ranks: RanksRecord) -> None:
        """The daemons as they registered, and the processes as launched."""
        keys = ("node_name", "node_id", "host", "pid", "data_dir")
        self.manifest.daemons = [{key: record.get(key) for key in keys} for record in registered]
        self.manifest.ranks = ranks
        self._write()

    def ranks_command(self, argv: Sequence[str]) -> None:
        """The command line that starts the workload ranks (written at once)."""
        if self.manifest.ranks is not None:
            self.manifest.ranks = self.manifest.ranks.model_copy(update={"command": list(argv)})
            self._write()

    def target(self, record: Mapping[str, Any]) -> None:
        """Where a posix: target's files were, per host (written with ``finish``)."""
        self.manifest.target = dict(record)

    def interface(self, interface: Literal["native", "mount"]) -> None:
        """How the workload reaches BenchFS (written at once)."""
        self.manifest.interface = interface
        self._write()

    def mount(self, record: Mapping[str, Any]) -> None:
        """The mounts of the run once live: options, mount points (written at once)."""
        self.manifest.mount = dict(record)
        self._write()

    def tool(self, record: Mapping[str, Any]) -> None:
        """The tool that ran and how (written with ``finish``)."""
        self.manifest.tool = dict(record)

    def suite(self, record: Mapping[str, Any]) -> None:
        """The suite that ran and its parameters."""
        self.manifest.suite = dict(record)
        self._write()

    def stragglers(self, record: Mapping[str, Any]) -> None:
        """Nodes whose disk was slow during the workload (written with ``finish``)."""
        self.manifest.stragglers = dict(record)

    def live(self, record: Mapping[str, Any]) -> None:
        """The live view's record, written at once: an alert is kept even if the run dies."""
        self.manifest.live = dict(record)
        self._write()

    def finish(self, status: Status, *, error: str | None, notes: Sequence[str]) -> None:
        """The end of the run: how it ended, and what its reader should know."""
        self.manifest.notes = list(notes)
        self.manifest = finish_manifest(self.manifest, status, error=error)
        self._write()

    def add_notes(self, notes: Sequence[str]) -> None:
        """Notes that came after the end (cleanup on later points, the report)."""
        self.manifest.notes = [*self.manifest.notes, *notes]
        self._write()

    def _write(self) -> None:
        write_manifest(self.run_dir, self.manifest)


def write_manifest(run_dir: Path, manifest: Manifest) -> Path:
    """Write (or replace) ``run_dir/manifest.json`` atomically."""
    return write_text_atomic(run_dir / MANIFEST_NAME, manifest.model_dump_json(indent=2) + "\n")


def load_manifest(path: Path) -> Manifest:
    """Read a manifest (the file or its run directory) and check its data_version."""
    if path.is_dir():
        path = path / MANIFEST_NAME
    data = load_json_bounded(path, what="manifest", error=BenchfsError)
    if not isinstance(data, dict) or "data_version" not in data:
        raise BenchfsError(f"{path}: not a BenchFS manifest (no data_version)")
    version = data["data_version"]
    if version != DATA_VERSION:
        newer = isinstance(version, int) and version > DATA_VERSION
        hint = "written by a newer benchfs; upgrade" if newer else "unsupported"
        raise BenchfsError(
            f"{path}: data_version {version!r} {hint} (this benchfs reads {DATA_VERSION})"
        )
    try:
        return Manifest.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        raise BenchfsError(f"{path}: {key}: {first['msg']}") from None
