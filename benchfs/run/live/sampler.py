"""The live sampler: a thread that reads every node about every
``interval_s`` while the ranks run, and at once when a phase starts or ends.

With daemons (native client or the mount) it asks each daemon for its stats
through a client of its own, created on the thread (a client is used only
from the thread that made it); a stats request is answered by the daemon's
loop at once and costs it one small message a second, and so are the two
pings sent after it, an empty one and one carrying 64 KiB to the daemon:
their round trips are the network's between here and the daemon (its
latency, and how long a write's data takes to reach it). On a posix: target it
reads the ranks' progress records (files the ranks overwrite anyway). The
readings queue up for the watch (``benchfs.run.live.watch``), which judges
them on the run's own thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchfs.workload.progress import PhaseStatus, read_record, read_status
from benchfs.workload.spec import WorkloadSpec

# How often the thread looks at the phase file (a phase's start and end).
PHASE_LOOK_S = 0.05
# The payload of the ping that measures how fast data reaches a daemon, as a write's does.
BULK_PING = 64 << 10


@dataclass(frozen=True)
class Reading:
    """Every node at one moment: the phase then, and each node's counters."""

    unix_ns: int
    phase: PhaseStatus | None
    # Per daemon node: its stats reply. Per host (posix:): its ranks' (bytes, ops).
    daemons: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    ranks: Mapping[str, list[tuple[int, int]]] = field(default_factory=dict)
    # Per node that did not answer: why.
    errors: Mapping[str, str] = field(default_factory=dict)
    # Per daemon node: the sampler's pings of it so far, (count, total round trip ns
    # of an empty ping, of one carrying BULK_PING bytes to it).
    pings: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)


def _phase_key(status: PhaseStatus | None) -> tuple[int, str, str] | None:
    return None if status is None else (status.repetition, status.phase, status.state)


class Sampler(threading.Thread):
    """Reads every node until ``halt``; ``take`` hands over what it read."""

    def __init__(self, spec: WorkloadSpec, interval_s: float, *, daemons: bool) -> None:
        super().__init__(name="benchfs-live", daemon=True)
        self.spec, self.interval_s, self.with_daemons = spec, interval_s, daemons
        self.failure: str | None = None
        self._readings: list[Reading] = []
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._pings: dict[str, tuple[int, int, int]] = {}

    def take(self) -> list[Reading]:
        with self._lock:
            taken, self._readings = self._readings, []
        return taken

    def halt(self) -> None:
        self._halt.set()
        self.join(timeout=max(5.0, self.spec.rpc_deadline_s + 1))

    def run(self) -> None:
        try:
            if self.with_daemons:
                self._run_with_client()
            else:
                self._loop(None)
        except Exception as error:  # an observer: the run goes on without it
            self.failure = f"{type(error).__name__}: {error}"

    def _run_with_client(self) -> None:
        import benchfs_native

        spec = self.spec
        client = benchfs_native.Client(
            spec.registry_dir,
            spec.node_names,
            transport=spec.transport,
            connect_deadline_s=spec.connect_deadline_s,
            rpc_deadline_s=spec.rpc_deadline_s,
            max_in_flight=1,
            retries=0,
            name="live",
        )
        try:
            self._loop(client)
        finally:
            client.disconnect()

    def _loop(self, client: Any) -> None:
        last_key = _phase_key(read_status(self.spec.phase_file))
        due = 0.0
        while not self._halt.is_set():
            status = read_status(self.spec.phase_file)
            key = _phase_key(status)
            now = time.monotonic()
            if status is not None and (key != last_key or now >= due):
                reading = self._read(client, status)
                with self._lock:
                    self._readings.append(reading)
                due = now + self.interval_s
                last_key = key
            self._halt.wait(PHASE_LOOK_S)

    def _read(self, client: Any, status: PhaseStatus) -> Reading:
        unix_ns = time.time_ns()
        if client is None:
            return Reading(unix_ns, status, ranks=self._ranks(status))
        daemons: dict[str, Mapping[str, Any]] = {}
        errors: dict[str, str] = {}
        for node in client.nodes:
            name = node["node_name"]
            try:
                daemons[name] = client.stats(node["node_id"])
                # A request the daemon answers at once: its round trip is the network's.
                empty_ns = int(client.ping(node["node_id"]) * 1e9)
                bulk = client.bench_ping(node["node_id"], BULK_PING, 1, warmup=0, echo=False)
                count, empty, carried = self._pings.get(name, (0, 0, 0))
                self._pings[name] = (
                    count + 1, empty + empty_ns, carried + int(bulk["mean_us"] * 1000)
                )  # fmt: skip
            except OSError as error:
                errors[name] = str(error)
        return Reading(unix_ns, status, daemons=daemons, errors=errors, pings=dict(self._pings))

    def _ranks(self, status: PhaseStatus) -> dict[str, list[tuple[int, int]]]:
        spec = self.spec
        found: dict[str, list[tuple[int, int]]] = {host: [] for host in spec.hosts}
        for rank in range(spec.ranks):
            path = spec.progress_path(status.repetition, status.phase, rank)
            record = read_record(path) or (0, 0)
            found[spec.host_of(rank)].append(record)
        return found
