"""Where BenchFS runs: hosts, node lists and the processes started on them."""

from benchfs.cluster.deadline import wait_until
from benchfs.cluster.hostfile import (
    Host,
    hosts_from_environment,
    local_hosts,
    parse_hostfile,
    parse_hostfile_text,
    resolve_nodes,
)
from benchfs.cluster.lifecycle import Lifecycle, Terminated, remove_shm_files
from benchfs.cluster.nodelist import expand_slurm_nodelist
from benchfs.cluster.processes import (
    ManagedProcess,
    start_process,
    stop_process,
    stop_processes,
    wait_process,
)

__all__ = [
    "Host",
    "Lifecycle",
    "ManagedProcess",
    "Terminated",
    "expand_slurm_nodelist",
    "hosts_from_environment",
    "local_hosts",
    "parse_hostfile",
    "parse_hostfile_text",
    "remove_shm_files",
    "resolve_nodes",
    "start_process",
    "stop_process",
    "stop_processes",
    "wait_process",
    "wait_until",
]
