"""``manifest.json``: what ran, where, with which settings and build.

The model and its records are ``analysis.manifest``'s, which the report
reads too. ``ManifestRecorder`` is its one writer during a run: written when the run
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
from typing import Any

from pydantic import ValidationError

from analysis.bounded import load_json_bounded
from analysis.layout import DATA_VERSION as DATA_VERSION
from analysis.layout import MANIFEST
from analysis.manifest import (
    DaemonRecord as DaemonRecord,
)
from analysis.manifest import (
    ExcludedHost as ExcludedHost,
)
from analysis.manifest import (
    HostEntry as HostEntry,
)
from analysis.manifest import (
    HostsRecord as HostsRecord,
)
from analysis.manifest import (
    Interface as Interface,
)
from analysis.manifest import (
    LiveRecord as LiveRecord,
)
from analysis.manifest import (
    Manifest as Manifest,
)
from analysis.manifest import (
    MembershipRecord as MembershipRecord,
)
from analysis.manifest import (
    MountRecord as MountRecord,
)
from analysis.manifest import NativeBuild, NativeUnavailable
from analysis.manifest import (
    PreflightRecord as PreflightRecord,
)
from analysis.manifest import (
    RanksRecord as RanksRecord,
)
from analysis.manifest import (
    RanksTarget as RanksTarget,
)
from analysis.manifest import (
    Status as Status,
)
from analysis.manifest import (
    StragglersRecord as StragglersRecord,
)
from analysis.manifest import (
    SuiteRecord as SuiteRecord,
)
from analysis.manifest import (
    SweepRecord as SweepRecord,
)
from analysis.manifest import (
    ToolRecord as ToolRecord,
)
from analysis.manifest import (
    ToolTarget as ToolTarget,
)
from benchfs import __version__
from benchfs.cluster.hostfile import Host
from benchfs.errors import BenchfsError
from benchfs.results.atomic import write_text_atomic

MANIFEST_NAME = MANIFEST
# Environment that changes how the transport and MPI behave, and the job's identity.
ENVIRONMENT_PREFIXES = ("UCX_", "OMPI_", "BENCHFS_")
ENVIRONMENT_NAMES = ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_CLUSTER_NAME", "PBS_JOBID")


def native_build_info() -> NativeBuild | NativeUnavailable:
    """The engine's build info, or why it is unavailable (never raises)."""
    try:
        # Imported here: the manifest must be writable even without the engine.
        native = importlib.import_module("benchfs_native")
        return NativeBuild.model_validate(native.build_info())
    except Exception as error:  # absent, half-built or broken: record, do not fail the run
        return NativeUnavailable(reason=f"{type(error).__name__}: {error}")


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
        self, record: PreflightRecord, used: Sequence[Host], excluded: Sequence[ExcludedHost]
    ) -> None:
        """What the preflight did, and the hosts it kept and left out."""
        self.hosts(used, excluded)
        self.manifest.preflight = record
        self._write()

    def daemons(self, registered: Sequence[Mapping[str, Any]], ranks: RanksRecord) -> None:
        """The daemons as they registered, and the processes as launched."""
        fields = DaemonRecord.model_fields
        self.manifest.daemons = [
            DaemonRecord.model_validate({key: record.get(key) for key in fields})
            for record in registered
        ]
        self.manifest.ranks = ranks
        self._write()

    def membership(self, record: MembershipRecord) -> None:
        """How the clients learn the membership and connect (written at once)."""
        self.manifest.membership = record
        self._write()

    def ranks_command(self, argv: Sequence[str]) -> None:
        """The command line that starts the workload ranks (written at once)."""
        if self.manifest.ranks is not None:
            self.manifest.ranks = self.manifest.ranks.model_copy(update={"command": list(argv)})
            self._write()

    def target(self, record: RanksTarget | ToolTarget) -> None:
        """Where a posix: target's files were, per host (written with ``finish``)."""
        self.manifest.target = record

    def interface(self, interface: Interface) -> None:
        """How the workload reaches BenchFS (written at once)."""
        self.manifest.interface = interface
        self._write()

    def mount(self, record: MountRecord) -> None:
        """The mounts of the run once live: options, mount points (written at once)."""
        self.manifest.mount = record
        self._write()

    def tool(self, record: ToolRecord) -> None:
        """The tool that ran and how (written with ``finish``)."""
        self.manifest.tool = record

    def suite(self, record: SuiteRecord) -> None:
        """The suite that ran and its parameters."""
        self.manifest.suite = record
        self._write()

    def stragglers(self, record: StragglersRecord) -> None:
        """Nodes whose disk was slow during the workload (written with ``finish``)."""
        self.manifest.stragglers = record

    def live(self, record: LiveRecord) -> None:
        """The live view's record, written at once: an alert is kept even if the run dies."""
        self.manifest.live = record
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
