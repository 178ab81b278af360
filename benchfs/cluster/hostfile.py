"""Hostfiles and node lists: which hosts a run may use, and how many slots each.

Accepted hostfile lines (one host per line):
- OpenMPI: ``node01 slots=4`` (also ``max_slots=8``; ``max_slots`` must not be
  below ``slots`` and is otherwise not used);
- MPICH/Hydra: ``node01:4``;
- plain: ``node01`` (one slot);
- ``#`` starts a comment (whole line or trailing); blank lines are ignored.

A host listed more than once is merged into one entry whose slots are the sum,
at the position of its first appearance. This is what OpenMPI does with a
repeated hostfile line, and what a PBS node file means by repeating a host.

Bounds, all far beyond a real machine and checked before any work: the file
is a regular file of at most ``HOSTFILE_BYTES`` (``analysis.bounded``) and
``MAX_LINES`` lines, it names at most ``MAX_HOSTS`` hosts, and a host has at
most ``MAX_SLOTS`` slots.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from analysis.bounded import HOSTFILE_BYTES, read_bounded_text
from benchfs.cluster.nodelist import MAX_HOSTS, expand_slurm_nodelist, parse_tasks_per_node
from benchfs.errors import HostfileError

__all__ = [
    "DEFAULT_LOCAL_NODES",
    "LOCAL_HOST_PREFIX",
    "Host",
    "expand_slurm_nodelist",
    "format_hostfile",
    "hosts_from_environment",
    "local_hosts",
    "parse_hostfile",
    "parse_hostfile_text",
    "resolve_nodes",
]

# The embedded default: a cluster of this many daemons on this machine.
DEFAULT_LOCAL_NODES = 4
# Each local node is a daemon process on this machine (cluster.local_nodes has the same bound).
MAX_LOCAL_NODES = 256
# Names of the embedded default's nodes (``local0``, ``local1``, ...). The
# local launcher runs them all on this machine whatever their name.
LOCAL_HOST_PREFIX = "local"
# Processes on one host: no machine runs this many.
MAX_SLOTS = 1 << 16
# Lines of one hostfile: a PBS node file of 10,000 nodes of 256 slots is 2.6 million.
MAX_LINES = 1 << 22

# Host names and IPv4 addresses; no IPv6 literals (``:`` is MPICH's separator).
_HOST_NAME = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_])?$")
_POSITIVE_INT = re.compile(r"^[0-9]+$")


@dataclass(frozen=True)
class Host:
    """One host of a run and the number of processes (slots) it may run."""

    name: str
    slots: int = 1

    def __post_init__(self) -> None:
        if not self.name:
            raise HostfileError("host name is empty")
        if self.slots < 1:
            raise HostfileError(f"{self.name}: slots must be at least 1, got {self.slots}")


def parse_hostfile(path: Path) -> list[Host]:
    """Read a hostfile (OpenMPI, MPICH or plain list); see the module notes."""
    text = read_bounded_text(path, limit=HOSTFILE_BYTES, what="hostfile", error=HostfileError)
    return parse_hostfile_text(text, source=str(path))


def parse_hostfile_text(text: str, source: str) -> list[Host]:
    """Parse hostfile text; ``source`` names it in errors (``source:line: reason``)."""
    lines = text.count("\n") + 1
    if lines > MAX_LINES:
        raise HostfileError(
            f"{source}: {lines:,} lines, more than the {MAX_LINES:,} a hostfile may have"
        )
    slots: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}:{number}"
        host = _parse_line(line, where)
        total = slots.get(host.name, 0) + host.slots
        if total > MAX_SLOTS:
            raise HostfileError(
                f"{where}: {host.name} has {total:,} slots, more than {MAX_SLOTS:,}"
            )
        if host.name not in slots and len(slots) == MAX_HOSTS:
            raise HostfileError(
                f"{where}: more than {MAX_HOSTS:,} hosts, the most a hostfile may name"
            )
        slots[host.name] = total
    if not slots:
        raise HostfileError(f"{source}: no hosts in hostfile")
    return [Host(name, count) for name, count in slots.items()]


def _parse_line(line: str, where: str) -> Host:
    tokens = line.split()
    head, options = tokens[0], tokens[1:]
    slots: int | None = None
    if ":" in head:
        name, _, count = head.partition(":")
        if options:
            raise HostfileError(
                f"{where}: MPICH form 'host:N' takes no options, got {options[0]!r}"
            )
        slots = _count(count, where, "slot count")
    else:
        name = head
    _check_name(name, where)
    max_slots: int | None = None
    for option in options:
        key, equals, value = option.partition("=")
        if not equals:
            raise HostfileError(f"{where}: expected key=value after the host name, got {option!r}")
        if key in ("slots", "cpu", "count"):  # cpu/count: aliases older OpenMPI accepts
            if slots is not None:
                raise HostfileError(f"{where}: slots given twice")
            slots = _count(value, where, key)
        elif key == "max_slots" or key == "max-slots":
            max_slots = _count(value, where, key)
        else:
            raise HostfileError(f"{where}: unknown hostfile option {key!r}")
    slots = 1 if slots is None else slots
    if max_slots is not None and max_slots < slots:
        raise HostfileError(f"{where}: max_slots={max_slots} is below slots={slots}")
    return Host(name, slots)


def _count(text: str, where: str, what: str, limit: int = MAX_SLOTS) -> int:
    if not _POSITIVE_INT.match(text) or int(text[:24]) < 1:
        raise HostfileError(f"{where}: {what} must be a positive integer, got {text[:24]!r}")
    if len(text) > 12 or int(text) > limit:
        raise HostfileError(f"{where}: {what} is {text[:24]}, more than {limit:,}")
    return int(text)


def _check_name(name: str, where: str) -> None:
    if not _HOST_NAME.match(name):
        raise HostfileError(f"{where}: invalid host name {name!r}")


def merge_hosts(hosts: Iterable[Host]) -> list[Host]:
    """Merge repeated hosts (slots add up), keeping first-appearance order."""
    slots: dict[str, int] = {}
    for host in hosts:
        slots[host.name] = slots.get(host.name, 0) + host.slots
    return [Host(name, count) for name, count in slots.items()]


def format_hostfile(hosts: Iterable[Host]) -> str:
    """Write hosts in OpenMPI form, which every parser here reads back."""
    return "".join(f"{host.name} slots={host.slots}\n" for host in hosts)


def local_hosts(count: int = DEFAULT_LOCAL_NODES) -> list[Host]:
    """The embedded default cluster: ``count`` nodes, all on this machine."""
    if count < 1:
        raise HostfileError(f"local cluster needs at least one node, got {count}")
    if count > MAX_LOCAL_NODES:
        raise HostfileError(f"local cluster of {count} nodes: at most {MAX_LOCAL_NODES}")
    return [Host(f"{LOCAL_HOST_PREFIX}{index}") for index in range(count)]


def hosts_from_environment(
    kind: Literal["slurm", "pbs"], env: Mapping[str, str] | None = None
) -> list[Host]:
    """Hosts of the current batch job, read from the scheduler's variables.

    Slurm: SLURM_JOB_NODELIST (or SLURM_NODELIST), slots from
    SLURM_TASKS_PER_NODE (``2(x3),1``), else SLURM_NTASKS_PER_NODE, else 1.
    PBS: the file named by PBS_NODEFILE; a host repeated N times has N slots.
    """
    env = os.environ if env is None else env
    if kind == "slurm":
        return _slurm_hosts(env)
    if kind == "pbs":
        return _pbs_hosts(env)
    raise HostfileError(f"unknown scheduler {kind!r}: expected 'slurm' or 'pbs'")


def _slurm_hosts(env: Mapping[str, str]) -> list[Host]:
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist:
        raise HostfileError(
            "--nodes slurm: SLURM_JOB_NODELIST is not set (not inside a Slurm job?)"
        )
    names = expand_slurm_nodelist(nodelist)
    if not names:
        raise HostfileError(f"SLURM_JOB_NODELIST={nodelist!r} names no hosts")
    for name in names:
        _check_name(name, f"SLURM_JOB_NODELIST={nodelist!r}")
    tasks = env.get("SLURM_TASKS_PER_NODE")
    per_node = env.get("SLURM_NTASKS_PER_NODE")
    if tasks:
        counts = parse_tasks_per_node(tasks)
        if len(counts) != len(names):
            raise HostfileError(
                f"SLURM_TASKS_PER_NODE={tasks!r} gives {len(counts)} counts "
                f"for {len(names)} hosts in SLURM_JOB_NODELIST={nodelist!r}"
            )
    elif per_node:
        counts = [_count(per_node, "SLURM_NTASKS_PER_NODE", "tasks per node")] * len(names)
    else:
        counts = [1] * len(names)
    hosts = merge_hosts(Host(name, count) for name, count in zip(names, counts, strict=True))
    crowded = next((host for host in hosts if host.slots > MAX_SLOTS), None)
    if crowded is not None:
        raise HostfileError(
            f"SLURM_TASKS_PER_NODE={tasks or per_node!r}: {crowded.name} has "
            f"{crowded.slots:,} slots, more than {MAX_SLOTS:,}"
        )
    return hosts


def _pbs_hosts(env: Mapping[str, str]) -> list[Host]:
    nodefile = env.get("PBS_NODEFILE")
    if not nodefile:
        raise HostfileError("--nodes pbs: PBS_NODEFILE is not set (not inside a PBS job?)")
    return parse_hostfile(Path(nodefile))


def resolve_nodes(
    spec: str | None,
    env: Mapping[str, str] | None = None,
    *,
    local_nodes: int = DEFAULT_LOCAL_NODES,
) -> list[Host]:
    """Turn a ``--nodes`` value into hosts.

    None or ``local`` -> the embedded local cluster of ``local_nodes`` nodes;
    ``local:N`` -> N local nodes; ``slurm`` / ``pbs`` -> the current job's
    hosts; anything else is a hostfile path.
    """
    if spec is None or spec == LOCAL_HOST_PREFIX:
        return local_hosts(local_nodes)
    if spec.startswith(f"{LOCAL_HOST_PREFIX}:"):
        count = spec.partition(":")[2]
        return local_hosts(_count(count, f"--nodes {spec}", "local node count", MAX_HOSTS))
    if spec in ("slurm", "pbs"):
        return hosts_from_environment("slurm" if spec == "slurm" else "pbs", env)
    path = Path(spec)
    if not os.path.lexists(path):
        raise HostfileError(
            f"--nodes {spec}: no such hostfile (expected a file, 'slurm', 'pbs' or 'local[:N]')"
        )
    return parse_hostfile(path)
