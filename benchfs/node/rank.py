"""``python -m benchfs.node.rank SPEC.json``: one workload rank, under MPI.

The data workload, then the metadata workload if the spec has one
(``benchfs.workload.metadata``; either may be left out), on any target;
or, with a suite in the spec, the suite's phases instead
(``benchfs.workload.io500_rank``).

Per repetition and phase of the data workload: barrier, the engine runs the whole phase
(``Client.run_phase``: the hot loop is in Rust), barrier. With a stonewall
the phase stops after ``stonewall_s``; then every rank catches up to the
rank that got furthest (IOR's wear-out), so each file ends up the same
size and the read phase can read it whole. Rank 0 gathers the per-rank
rows and latencies and writes them (``workload/ranks.jsonl`` and
``workload/latency-*.npy`` of the results directory, see
``benchfs.workload.spec``).

With a ``posix:PATH`` target there are no daemons: the same phases run
with plain POSIX calls (``benchfs_native.run_posix_phase`` and
``run_posix_metadata_phase``) on the run's own directory under PATH, which
every rank records the file system of
(``ranks/rank<r>.json``: ``fs``) and the first rank of each node removes
at the end. Through the mount (``interface = "mount"``) the same calls go
to the run's directory in the rank's own node's mount point of BenchFS;
the nodes share one namespace, so rank 0 alone removes it.

A rank that fails prints one line naming itself, leaves it in
``ranks/rank<r>.error`` for the orchestrator, and aborts the MPI job: the
other ranks must not wait for it at the next barrier.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from benchfs.cluster.private import make_private_dir, private_umask
from benchfs.errors import ToolError
from benchfs.tools.fsinfo import inspect_directory
from benchfs.workload.io500_rank import SuiteRank
from benchfs.workload.metadata import MetadataRank
from benchfs.workload.progress import PhaseStatus, State, write_status
from benchfs.workload.spec import WorkloadSpec
from benchfs.workload.summary import RankRow
from benchfs.workload.targets import EngineTarget, PosixTarget

READ = "read"


def phase_arguments(
    spec: WorkloadSpec, phase: str, rank: int, repetition: int = 0
) -> dict[str, Any]:
    """Keyword arguments of ``Client.run_phase`` shared by every call of a phase."""
    reading = phase == READ
    return {
        "phase": phase,
        "file_name": spec.file_name,
        "rank": rank,
        "ranks": spec.ranks,
        "transfer_size": spec.transfer_size,
        "block_size": spec.block_size,
        "segments": spec.segments,
        "file_per_process": spec.file_per_process,
        "read_rank_shift": spec.read_rank_shift if reading else 0,
        "verify": spec.verify and reading,
        "seed": spec.seed_for(repetition),
    }


def merge_results(first: Mapping[str, Any], rest: Mapping[str, Any]) -> dict[str, Any]:
    """A stonewalled call and its wear-out call as one result."""
    return {
        "path": first.get("path"),
        "bytes": int(first["bytes"]) + int(rest["bytes"]),
        "ops": int(first["ops"]) + int(rest["ops"]),
        "start_unix_ns": int(first["start_unix_ns"]),
        "end_unix_ns": int(rest["end_unix_ns"]),
        "errors": int(first.get("errors", 0)) + int(rest.get("errors", 0)),
        "verify_errors": int(first.get("verify_errors", 0)) + int(rest.get("verify_errors", 0)),
        "stonewalled": bool(first.get("stonewalled", False)),
        "open_s": first.get("open_s"),
        "latency_ns": bytes(first["latency_ns"]) + bytes(rest["latency_ns"]),
    }


def posix_directory(spec: WorkloadSpec, rank: int) -> Path:
    """The run's directory under PATH on this node (made if absent, ours only)."""
    directory = spec.directory_of(rank)
    if not directory.parent.is_dir():
        raise RuntimeError(
            f"workload.target {spec.target}: {directory.parent} is not a directory "
            f"on {spec.host_of(rank)} ({socket.gethostname()})"
        )
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory


# A file system without directories of its own (BenchFS before its namespace).
NO_DIRECTORIES = frozenset({errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP})


def mount_directory(spec: WorkloadSpec, comm: Any) -> tuple[Path, bool]:
    """The run's directory in this node's mount point of BenchFS, and whether
    the run made it: rank 0 makes it (the nodes share one namespace); where
    the file system has no directories, every rank works in the mount
    point itself, the run's files named as everywhere else."""
    rank = comm.Get_rank()
    wanted = spec.directory_of(rank)
    mount_point = wanted.parent
    made: bool | None = None
    if rank == 0:
        try:
            wanted.mkdir(mode=0o700, exist_ok=True)
            made = True
        except OSError as error:
            if error.errno not in NO_DIRECTORIES:
                raise
            made = False
    made = bool(comm.bcast(made, root=0))
    if not mount_point.is_dir() or (made and not wanted.is_dir()):
        raise RuntimeError(
            f"the mount: {wanted if made else mount_point} is not a directory "
            f"on {spec.host_of(rank)} ({socket.gethostname()})"
        )
    return (wanted, True) if made else (mount_point, False)


def fs_record(directory: Path) -> dict[str, Any]:
    """The file system behind ``directory``, for the manifest."""
    try:
        info = inspect_directory(directory)
    except ToolError as error:  # the run stands without it; the manifest says why
        return {"error": str(error)}
    return {
        "directory": str(directory),
        "fs_type": info.fs_type,
        "mount_point": info.mount_point,
        "source": info.source,
        "device": info.device,
        "network": info.network,
    }


class Rank:
    """The state of one rank across its phases."""

    def __init__(self, spec: WorkloadSpec, comm: Any, client: Any) -> None:
        self.spec = spec
        self.comm = comm
        self.client = client
        self.rank: int = comm.Get_rank()
        self.host = spec.host_of(self.rank)
        # Ops each rank wrote per repetition once a stonewall cut the write short.
        self.written_ops: dict[int, int] = {}

    def run(self) -> None:
        if self.spec.suite is not None:
            target = (
                self.client if isinstance(self.client, PosixTarget) else EngineTarget(self.client)
            )
            SuiteRank(self.spec, self.comm, target, self.collect, self.announce).run()
            self.clear_posix_dir()
            return
        if self.spec.run_data:
            self.run_data()
        if self.spec.metadata is not None:
            MetadataRank(
                self.spec.metadata,
                self.comm,
                self.client,
                self.collect,
                self.announce,
                self.spec.progress_path,
            ).run()
        self.clear_posix_dir()

    def run_data(self) -> None:
        for repetition in range(self.spec.repetitions):
            paths = set()
            for phase in self.spec.phases:
                result = self.phase(repetition, phase)
                self.collect(repetition, phase, result)
                if phase != READ and result.get("path"):
                    paths.add(str(result["path"]))
            if not self.spec.keep_files:
                self.remove(paths)

    def clear_posix_dir(self) -> None:
        if self.spec.on_files and not self.spec.keep_files:
            # Every rank is done with the files: the node's first rank clears the
            # directory (rank 0 alone on the mount: one namespace for all nodes).
            self.comm.Barrier()
            spec = self.spec
            first = self.rank == 0 if spec.mount_root else self.rank % spec.tasks_per_node == 0
            if first and getattr(self.client, "own_directory", False):
                shutil.rmtree(self.client.directory, ignore_errors=True)

    def remove(self, paths: set[str]) -> None:
        """Delete the repetition's files, as IOR does: each rank its own file,
        rank 0 the shared one (after every rank is done with it)."""
        self.comm.Barrier()
        if self.spec.file_per_process or self.rank == 0:
            for path in sorted(paths):
                self.client.unlink(path)

    def phase(self, repetition: int, phase: str) -> dict[str, Any]:
        from mpi4py import MPI

        spec = self.spec
        arguments = phase_arguments(spec, phase, self.rank, repetition)
        limit = self.written_ops.get(repetition) if phase == READ else None
        progress = spec.progress_path(repetition, phase, self.rank)
        progress.parent.mkdir(parents=True, exist_ok=True)
        self.comm.Barrier()
        if self.rank == 0:
            self.announce(repetition, phase, "running")
        result = dict(
            self.client.run_phase(
                **arguments,
                stonewall_s=spec.stonewall_s,
                max_ops=limit or 0,
                progress_path=str(progress),
            )
        )
        stonewall_ops: int | None = None
        if spec.stonewall_s > 0:
            stonewall_ops = int(result["ops_reached"])
            most = int(self.comm.allreduce(stonewall_ops, op=MPI.MAX))
            if phase != READ:
                self.written_ops[repetition] = most
            if stonewall_ops < most:
                rest = self.client.run_phase(
                    **arguments,
                    first_op=stonewall_ops,
                    max_ops=most,
                    progress_path=str(spec.progress_path(repetition, phase, self.rank, True)),
                )
                result = merge_results(result, rest)
        self.comm.Barrier()
        result["stonewall_ops"] = stonewall_ops
        return result

    def announce(self, repetition: int, phase: str, state: State) -> None:
        spec = self.spec
        status = PhaseStatus(
            repetition,
            phase,
            state,
            time.time_ns(),
            spec.expected_bytes(phase),
            spec.expected_items(phase),
            # A stonewalled data phase ends on time (its progress counts seconds).
            spec.stonewall_s if spec.expected_items(phase) == 0 else 0.0,
        )
        write_status(spec.phase_file, status)

    def collect(self, repetition: int, phase: str, result: Mapping[str, Any]) -> None:
        identity = {"repetition": repetition, "phase": phase, "rank": self.rank, "host": self.host}
        row = RankRow.model_validate({**result, **identity}).model_dump()
        rows = self.comm.gather(row, root=0)
        latencies = self.comm.gather(bytes(result["latency_ns"]), root=0)
        if self.rank != 0:
            return
        spec = self.spec
        with spec.ranks_file.open("a") as handle:
            handle.writelines(json.dumps(item, sort_keys=True) + "\n" for item in rows)
        merged = np.concatenate([np.frombuffer(data, dtype="<u8") for data in latencies])
        np.save(spec.latency_file(phase, repetition), merged)
        self.announce(repetition, phase, "done")


def _describe(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return " ".join(text.split())


def _record_start(spec: WorkloadSpec, rank: int, fs: dict[str, Any] | None = None) -> None:
    path = spec.rank_file(rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "rank": rank,
        "host": spec.host_of(rank),
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
    }
    if fs is not None:
        record["fs"] = fs
    path.write_text(json.dumps(record))


def _record_connect(spec: WorkloadSpec, comm: Any, host: str, start: int, end: int) -> None:
    """Rank 0 writes when every rank began and ended connecting to the
    daemons (the members file read and a session with each daemon)."""
    row = {"rank": comm.Get_rank(), "host": host, "start_unix_ns": start, "end_unix_ns": end}
    rows = comm.gather(row, root=0)
    if rows is not None:
        Path(spec.connect_file).write_text(
            "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
        )


def run(spec: WorkloadSpec, comm: Any) -> None:
    """Everything a rank does, from connecting to the last phase."""
    import benchfs_native

    rank = comm.Get_rank()
    size = comm.Get_size()
    if size != spec.ranks:
        raise RuntimeError(f"started as one of {size} ranks, the run expects {spec.ranks}")
    if spec.on_files:
        if spec.mount_root is not None:
            directory, made = mount_directory(spec, comm)
        else:
            directory, made = posix_directory(spec, rank), True
        _record_start(spec, rank, fs_record(directory))
        Rank(spec, comm, PosixTarget(directory, spec.direct, own_directory=made)).run()
        return
    _record_start(spec, rank)
    host = spec.host_of(rank)
    connecting = time.time_ns()
    client = benchfs_native.Client(
        spec.registry_dir,
        spec.node_names,
        transport=spec.transport,
        connect_deadline_s=spec.connect_deadline_s,
        rpc_deadline_s=spec.rpc_deadline_s,
        max_in_flight=spec.queue_depth,
        name=f"{host}/rank{rank}",
        trace_dir=spec.trace_dir,
    )
    try:
        _record_connect(spec, comm, host, connecting, time.time_ns())
        Rank(spec, comm, client).run()
    finally:
        client.disconnect()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchfs.node.rank SPEC.json", file=sys.stderr)
        return 2
    private_umask()
    spec = WorkloadSpec.read(Path(args[0]))
    if spec.shm_dir:
        # MPI's shared-memory segments go there (set up before MPI starts).
        make_private_dir(Path(spec.shm_dir))
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    try:
        run(spec, comm)
    except BaseException as error:
        host = spec.host_of(rank) if rank < spec.ranks else socket.gethostname()
        message = f"workload rank {rank} on {host} (pid {os.getpid()}): {_describe(error)}"
        try:
            path = spec.rank_file(rank, "error")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(message + "\n")
        except OSError:
            pass
        print(message, file=sys.stderr, flush=True)
        comm.Abort(1)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
