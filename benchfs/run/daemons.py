"""The daemons of a run: their config files, how they are launched, waiting
for their registration, watching them, and stopping them.

Node ids follow the hosts in order, ``daemons_per_node`` per host, which is
also the rank order of a launcher job with ``--map-by slot``: so one launcher
command can start every daemon and each picks its config by its rank. The
config files are the daemon contract (``benchfs.daemon.settings``); the
registry is read by the engine's own reader (``benchfs_native.read_registry``).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import benchfs_native
from benchfs.cluster.deadline import wait_until
from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.private import make_private_dir
from benchfs.cluster.processes import ManagedProcess, describe_status, stop_processes
from benchfs.cluster.stuck import StuckOutput
from benchfs.config.model import ClusterConfig
from benchfs.daemon.settings import (
    DaemonSettings,
    daemon_config_path,
    settings_for,
    settings_toml,
    write_daemon_config,
)
from benchfs.errors import LaunchError
from benchfs.launchers.base import Launcher
from benchfs.launchers.programs import daemon_argv, daemons_job
from benchfs.results.manifest import MembershipRecord


@dataclass(frozen=True)
class DaemonSlot:
    """One daemon: where it runs, its identity, and its data directory."""

    host: Host
    daemon_index: int
    node_id: int
    node_name: str
    data_dir: str


def daemon_slots(hosts: Sequence[Host], daemons_per_node: int, data_root: str) -> list[DaemonSlot]:
    """Every daemon of the run; names as the daemon itself would pick them
    (the host, with ``-d<index>`` from the second daemon of a host on)."""
    slots: list[DaemonSlot] = []
    for host in hosts:
        for index in range(daemons_per_node):
            name = host.name if index == 0 else f"{host.name}-d{index}"
            slots.append(DaemonSlot(host, index, len(slots), name, f"{data_root}/{name}"))
    return slots


def slot_settings(
    slot: DaemonSlot, cluster: ClusterConfig, registry_dir: Path, trace_dir: Path | None
) -> DaemonSettings:
    return settings_for(
        cluster,
        node_name=slot.node_name,
        node_id=slot.node_id,
        daemon_index=slot.daemon_index,
        data_dir=slot.data_dir,
        registry_dir=registry_dir,
        trace_dir=trace_dir,
    )


def daemon_config_text(
    slot: DaemonSlot, cluster: ClusterConfig, registry_dir: Path, trace_dir: Path | None
) -> str:
    """The daemon's config file, every key the run decides explicit."""
    return settings_toml(slot_settings(slot, cluster, registry_dir, trace_dir))


def write_daemon_configs(
    slots: Sequence[DaemonSlot],
    cluster: ClusterConfig,
    config_dir: Path,
    registry_dir: Path,
    trace_dir: Path | None,
) -> list[Path]:
    make_private_dir(config_dir)
    return [
        write_daemon_config(
            daemon_config_path(config_dir, slot.node_id),
            slot_settings(slot, cluster, registry_dir, trace_dir),
        )
        for slot in slots
    ]


@dataclass(frozen=True)
class DaemonCommand:
    """One process to start: a daemon, or a launcher job running all of them."""

    name: str
    argv: list[str]
    slots: tuple[DaemonSlot, ...]
    log_name: str


def daemon_commands(
    launcher: Launcher,
    slots: Sequence[DaemonSlot],
    hosts: Sequence[Host],
    daemons_per_node: int,
    config_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    shm_dir: str | None = None,
    python: str = sys.executable,
) -> list[DaemonCommand]:
    """On this machine: one command per daemon. Otherwise one launcher job
    across the hosts, each rank serving the daemon of its node id."""
    if launcher.capabilities.runs_here:
        return [
            DaemonCommand(
                f"daemon {slot.node_name}",
                launcher.command(
                    slot.host,
                    daemon_argv(daemon_config_path(config_dir, slot.node_id), python=python),
                    env=env,
                ),
                (slot,),
                f"{slot.node_name}.log",
            )
            for slot in slots
        ]
    argv = daemons_job(
        launcher, hosts, daemons_per_node, config_dir, env=env, shm_dir=shm_dir, python=python
    )
    name = f"daemons ({launcher.name} on {len(hosts)} hosts)"
    return [DaemonCommand(name, argv, tuple(slots), f"daemons-{launcher.name}.log")]


# How a client reaches the daemons (docs/perf-log/scale.md, "Sessions per daemon").
CONNECTIONS = "every client opens a session with every daemon at connect"

_RANK_LINE = re.compile(r"process rank (\d+)|rank (\d+) ")


def ranks_named(text: str) -> list[int]:
    """Ranks that a launcher's log says failed (``process rank 2 with PID``)."""
    found: list[int] = []
    for line in text.splitlines():
        lowered = line.lower()
        if "rank" not in lowered or not any(
            word in lowered for word in ("exited", "signal", "killed", "abort", "terminated")
        ):
            continue
        for match in _RANK_LINE.finditer(line):
            rank = int(match.group(1) or match.group(2))
            if rank not in found:
                found.append(rank)
    return found


# Lines that say nothing on their own: separators and backtrace frames.
_NOISE = re.compile(r"^(=+|-+|=+ backtrace .*|\d+\s+\S.*|\[\S+\] Set MCA parameter .*)$")


def log_tail(path: Path, lines: int = 3) -> str:
    """The last ``lines`` telling lines of a log, joined for a one-line error."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join([line for line in kept if not _NOISE.match(line)][-lines:])


def read_records(registry_dir: Path) -> dict[str, benchfs_native.RegistryRecord]:
    """The registry's records by node name (none while the directory is missing).

    A record that does not parse, or two claiming one node id, is a
    LaunchError naming the files (the engine's own reader decides).
    """
    try:
        records = benchfs_native.read_registry(str(registry_dir))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise LaunchError(f"registry {registry_dir}: {error}") from error
    return {record["node_name"]: record for record in records}


def membership_missing(registry_dir: Path, slots: Sequence[DaemonSlot]) -> str | None:
    """None when every daemon has registered with its node id; else what is missing."""
    records = read_records(registry_dir)
    missing = [slot.node_name for slot in slots if slot.node_name not in records]
    wrong = [
        f"{slot.node_name} registered as node {records[slot.node_name]['node_id']}"
        f" (expected {slot.node_id})"
        for slot in slots
        if slot.node_name in records and records[slot.node_name]["node_id"] != slot.node_id
    ]
    if not missing and not wrong:
        return None
    parts = []
    if missing:
        shown = ", ".join(missing[:16]) + (
            f" and {len(missing) - 16} more" if len(missing) > 16 else ""
        )
        parts.append(f"missing {shown} ({len(slots) - len(missing)} of {len(slots)} registered)")
    return "; ".join(parts + wrong)


def write_members(registry_dir: Path, slots: Sequence[DaemonSlot]) -> str:
    """The members file beside the records (``benchfs_native.write_members``):
    every client of the run then opens this one file instead of N records."""
    try:
        return benchfs_native.write_members(str(registry_dir), [s.node_name for s in slots])
    except (OSError, ValueError) as error:
        raise LaunchError(f"registry {registry_dir}: {error}") from error


class DaemonGroup:
    """The daemons started for one daemon configuration (kept across the
    points of a sweep that do not change it)."""

    def __init__(
        self,
        commands: Sequence[DaemonCommand],
        slots: Sequence[DaemonSlot],
        registry_dir: Path,
        log_dir: Path,
        trace_dir: Path | None,
    ) -> None:
        self.commands = list(commands)
        self.slots = list(slots)
        self.registry_dir = registry_dir
        self.log_dir = log_dir
        self.trace_dir = trace_dir
        self.processes: list[ManagedProcess] = []
        self.records: dict[str, benchfs_native.RegistryRecord] = {}
        # The members file written once all registered (``write_members``).
        self.members_file: str | None = None
        self.members_write_s = 0.0
        self.members_bytes = 0
        self.exit_problems: list[str] = []
        # Results directories of the runs these daemons served.
        self.served: list[Path] = []

    def log_path(self, command: DaemonCommand) -> Path:
        return self.log_dir / command.log_name

    def start(
        self,
        life: Lifecycle,
        env: Mapping[str, str] | None = None,
        stuck_when: StuckOutput | None = None,
    ) -> None:
        make_private_dir(self.log_dir)
        make_private_dir(self.registry_dir)
        # The job's secret beside the registry: only processes that can read
        # it (or are given $BENCHFS_SESSION_KEY) open sessions with the daemons.
        benchfs_native.ensure_session_key(str(self.registry_dir))
        self.processes += life.start_logged(self.commands, self.log_dir, env, stuck_when)

    def wait_registered(self, deadline_s: float) -> None:
        """Every daemon registered, or an error naming the missing ones / the dead one."""
        try:
            wait_until(
                lambda: membership_missing(self.registry_dir, self.slots),
                deadline_s=deadline_s,
                what=f"{len(self.slots)} daemons to register in {self.registry_dir}",
                watch=self.processes,
            )
        except LaunchError as error:
            # Running but silent (a launcher whose remote side cannot reach
            # it, as Hydra's proxies that cannot connect back): what it said.
            raise LaunchError(self._with_logs(str(error), running_too=True)) from None
        self.records = read_records(self.registry_dir)

    def publish_members(self) -> None:
        """The members file, once every daemon registered (``write_members``)."""
        started = time.perf_counter()
        self.members_file = write_members(self.registry_dir, self.slots)
        self.members_write_s = time.perf_counter() - started
        self.members_bytes = Path(self.members_file).stat().st_size

    def membership_record(self) -> MembershipRecord:
        """How the clients learn the membership and connect, for the manifest."""
        return MembershipRecord(
            source="members file" if self.members_file else "registry records",
            file=self.members_file,
            daemons=len(self.slots),
            integrity="HMAC-SHA256 with the session key",
            write_s=round(self.members_write_s, 6),
            bytes=self.members_bytes,
            connections=CONNECTIONS,
        )

    def records_by_node_id(self) -> list[benchfs_native.RegistryRecord]:
        return [self.records[s.node_name] for s in self.slots if s.node_name in self.records]

    def dead(self) -> str | None:
        """A message naming the daemon that died, None while all run."""
        for process, command in zip(self.processes, self.commands, strict=True):
            code = process.returncode
            if code is None:
                continue
            who = process.describe()
            if len(command.slots) > 1:
                ranks = ranks_named(self.log_path(command).read_text(errors="replace"))
                names = [command.slots[r].node_name for r in ranks if r < len(command.slots)]
                if names:
                    who = f"daemon {', '.join(names)} (in {who})"
            return self._with_logs(f"{who} {describe_status(code)} during the run")
        return None

    def _with_logs(self, message: str, *, running_too: bool = False) -> str:
        """``message`` with the log tail of every command that ended (and of
        those still running, when ``running_too``)."""
        tails = []
        for command, process in zip(self.commands, self.processes, strict=True):
            if running_too or process.returncode is not None:
                tail = log_tail(self.log_path(command))
                if tail:
                    tails.append(f"{command.name} logged: {tail}")
        return "; ".join([message, *tails])

    def stop(self, grace_s: float) -> None:
        """SIGTERM (the daemons drain within their shutdown deadline), then
        SIGKILL after ``grace_s``; exit problems are kept, not raised."""
        stop_processes(self.processes, grace_s)
        for process in self.processes:
            code = process.popen.returncode
            if process.ending == "SIGKILL":
                self.exit_problems.append(
                    f"{process.describe()} did not stop within {grace_s:g} s and was killed"
                )
            elif code:
                self.exit_problems.append(f"{process.describe()} {describe_status(code)}")
