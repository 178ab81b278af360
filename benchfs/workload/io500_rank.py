"""One rank of the IO500 suite with the built-in loops: IO500's twelve scored
phases in its order (``analysis.io500.PHASES``), each between barriers.

- ior-easy: a file per rank (``ior-easy/ior_file_easy.<rank:08>``), large
  transfers; ior-hard: one shared file (``ior-hard/file``), 47,008-byte
  transfers, one transfer per segment (IOR ``-t 47008 -b 47008 -s N``).
  Writes end on the stonewall; then every rank catches up to the furthest
  (IOR's wear-out, ``stoneWallingWearOut=1``) and fsyncs its file before
  closing it, inside the phase's time (``-e``); reads read exactly what was
  written, from the rank one node further (``-C -Q 1``), verifying it (``-R``).
- mdtest-easy: empty files, a directory per rank (``-u -F``); mdtest-hard:
  3,901-byte files in one shared directory (``-w 3901 -e 3901 -F``). The
  creates end on the stonewall with mdtest's wear-out, then the target's
  sync inside the phase's time (``-Y``); stat, read and delete operate on
  the files created; mdtest-hard-read checks every file's bytes (``-X``).
- find: after mdtest-easy-write a timestamp file is made (as the reference's
  timestamp phase); find scans the whole tree in parallel, one directory
  level at a time, each rank listing its share of the level's directories,
  and counts the files whose name matches ``*01*``, whose size is 3,901 bytes
  and that are newer than the timestamp (pfind's ``-newer -size 3901c -name
  *01*``). Its rate is the files scanned over its time, as IO500 scores it.

The suite's directories are made before use (a namespace with directories
refuses a file in a missing one). The ior files are removed at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from analysis.io500 import PHASE_NAMES
from benchfs.config.suite import IOR_HARD_TRANSFER, MDTEST_HARD_BYTES, SuiteSizes
from benchfs.workload.metadata import MetadataRank
from benchfs.workload.metadata_spec import MetadataWorkload
from benchfs.workload.progress import State
from benchfs.workload.spec import WorkloadSpec

ROOT = "io500"  # everything find scans
TIMESTAMP = "io500.timestamp"  # beside it, as the reference keeps it out of the data dir
IOR_EASY_FILE = f"{ROOT}/ior-easy/ior_file_easy"
IOR_HARD_FILE = f"{ROOT}/ior-hard/file"
MDTEST_EASY = f"{ROOT}/mdtest-easy"
MDTEST_HARD = f"{ROOT}/mdtest-hard"
FIND_NAME = "*01*"
FIND_SIZE = MDTEST_HARD_BYTES
REPETITION = 0  # the suite runs once


def applied_checks(tool: str, posix_calls: bool) -> dict[str, Any]:
    """What the suite's phases do beside their timed I/O, as the reference's
    flags ask (IOR ``-e`` and ``-R``, mdtest ``-Y`` and ``-X``), for the
    summary and the manifest. ``posix_calls``: the ranks make POSIX calls
    (a ``posix:`` target or the mount), else the engine's client."""
    if tool in ("ior", "io500"):
        sync = "mdtest -Y: sync(2) on each rank's host"
    elif posix_calls:
        sync = "sync(2) on each rank's host"
    else:
        sync = "nothing to flush: the native client keeps no written data"
    return {
        "fsync_after_write": ["ior-easy-write", "ior-hard-write"],
        "sync_after_create": {"phases": ["mdtest-easy-write", "mdtest-hard-write"], "how": sync},
        "verify_read": ["ior-easy-read", "ior-hard-read", "mdtest-hard-read"],
        "by": {
            "ior": "IOR -e -R, mdtest -Y -X",
            "io500": "the io500 binary's IOR -e -R, mdtest -Y -X",
        }.get(tool, "the built-in loops"),
    }


def merge_data_results(first: Mapping[str, Any], rest: Mapping[str, Any]) -> dict[str, Any]:
    """A stonewalled data phase and its wear-out call as one result."""
    return {
        **first,
        "bytes": int(first["bytes"]) + int(rest["bytes"]),
        "ops": int(first["ops"]) + int(rest["ops"]),
        "end_unix_ns": int(rest["end_unix_ns"]),
        "errors": int(first.get("errors", 0)) + int(rest.get("errors", 0)),
        "verify_errors": int(first.get("verify_errors", 0)) + int(rest.get("verify_errors", 0)),
        "latency_ns": bytes(first["latency_ns"]) + bytes(rest["latency_ns"]),
    }


def suite_workloads(sizes: SuiteSizes, seed: int = 0) -> dict[str, MetadataWorkload]:
    """mdtest-easy and mdtest-hard as the metadata loop runs them: both
    creates end with a sync (``-Y``), mdtest-hard's read verifies (``-X``),
    and stat, read and delete take the next rank's files (``-N 1``)."""
    phases = ["create", "stat", "read", "remove"]
    easy = MetadataWorkload(items=sizes.mdtest_easy_files, phases=phases, unique_dir=True,
                            write_bytes=0, read_bytes=0, stonewall_s=sizes.stonewall_s,
                            repetitions=1, prefix=MDTEST_EASY, seed=seed,
                            sync_after_create=True, neighbour_stride=1)  # fmt: skip
    hard = MetadataWorkload(items=sizes.mdtest_hard_files, phases=phases, unique_dir=False,
                            write_bytes=MDTEST_HARD_BYTES, read_bytes=MDTEST_HARD_BYTES,
                            stonewall_s=sizes.stonewall_s, repetitions=1,
                            prefix=MDTEST_HARD, verify=True, seed=seed,
                            sync_after_create=True, neighbour_stride=1)  # fmt: skip
    return {"mdtest-easy": easy, "mdtest-hard": hard}


def scan_level(
    target: Any, directories: list[str], newer_than_ns: int
) -> tuple[list[str], int, int]:
    """find over some directories of one level: (the directories below them,
    files scanned, files matching IO500's criteria)."""
    below, scanned, found = target.find_level(directories, FIND_NAME, FIND_SIZE, newer_than_ns)
    return below, int(scanned), int(found)


class SuiteRank:
    """One rank's suite. ``target`` is a ``benchfs.workload.targets`` target;
    ``collect`` and ``announce`` are the data workload's (rows, latencies and
    the phase file)."""

    def __init__(
        self,
        spec: WorkloadSpec,
        comm: Any,
        target: Any,
        collect: Callable[[int, str, Mapping[str, Any]], None],
        announce: Callable[[int, str, State], None],
    ) -> None:
        assert spec.suite is not None
        self.spec = spec
        self.sizes = spec.suite
        self.comm = comm
        self.target = target
        self.rank: int = comm.Get_rank()
        self.collect = collect
        self.announce = announce
        self.written: dict[str, int] = {}  # data phase -> transfers each rank wrote
        self.created: dict[str, int] = {}  # mdtest-easy/-hard -> files each rank made
        self.timestamp_ns = 0
        self.metadata = {
            name: MetadataRank(workload, comm, target, collect, announce, spec.progress_path)
            for name, workload in suite_workloads(self.sizes, spec.seed_for(2)).items()
        }

    def run(self) -> None:
        self.make_dirs()
        for phase in PHASE_NAMES:
            result = self.phase(phase)
            self.collect(REPETITION, phase, result)
            if phase == "mdtest-easy-write":
                self.take_timestamp()
        self.remove_ior_files()

    def make_dirs(self) -> None:
        if self.rank == 0:
            for path in (ROOT, f"{ROOT}/ior-easy", f"{ROOT}/ior-hard", MDTEST_EASY, MDTEST_HARD,
                         f"{MDTEST_HARD}/tree.shared"):  # fmt: skip
                self.target.make_dir(path)
        self.comm.Barrier()
        self.target.make_dir(f"{MDTEST_EASY}/tree.{self.rank}")
        self.comm.Barrier()

    def phase(self, phase: str) -> dict[str, Any]:
        family, _, operation = phase.rpartition("-")
        if family in ("ior-easy", "ior-hard"):
            return self.data_phase(phase, family, operation)
        if family in ("mdtest-easy", "mdtest-hard"):
            return self.metadata_phase(phase, family, operation)
        return self.find()

    def data_arguments(self, family: str, operation: str) -> dict[str, Any]:
        spec, sizes = self.spec, self.sizes
        reading = operation == "read"
        easy = family == "ior-easy"
        return {
            "phase": operation,
            "file_name": IOR_EASY_FILE if easy else IOR_HARD_FILE,
            "rank": self.rank,
            "ranks": spec.ranks,
            "transfer_size": sizes.ior_easy_transfer_size if easy else IOR_HARD_TRANSFER,
            "block_size": sizes.ior_easy_block_size if easy else IOR_HARD_TRANSFER,
            "segments": 1 if easy else sizes.ior_hard_segments,
            "file_per_process": easy,
            "read_rank_shift": spec.read_rank_shift if reading else 0,
            "verify": reading,
            "seed": spec.seed_for(0 if easy else 1),
        }

    def data_phase(self, phase: str, family: str, operation: str) -> dict[str, Any]:
        from mpi4py import MPI

        arguments = self.data_arguments(family, operation)
        writing = operation == "write"
        stonewall_s = self.sizes.stonewall_s if writing else 0.0
        progress = self.spec.progress_path(REPETITION, phase, self.rank)
        progress.parent.mkdir(parents=True, exist_ok=True)
        self.comm.Barrier()
        if self.rank == 0:
            self.announce(REPETITION, phase, "running")
        limit = 0 if writing else self.written[family]
        # IOR -e: the fsync ends each rank's writes. Without a stonewall the one
        # call writes everything; with one, the call after the allreduce ends them.
        ends_writes = writing and stonewall_s <= 0
        result = dict(self.target.run_phase(**arguments, stonewall_s=stonewall_s, max_ops=limit,
                                            fsync=ends_writes,
                                            progress_path=str(progress)))  # fmt: skip
        reached: int | None = None
        if writing and stonewall_s > 0:
            reached = int(result["ops_reached"])
            most = int(self.comm.allreduce(reached, op=MPI.MAX))
            self.written[family] = most
            if most > 0:
                # The wear-out up to the furthest rank (none left for that rank
                # itself: then it only reopens its file to fsync it).
                wearout = self.spec.progress_path(REPETITION, phase, self.rank, True)
                rest = self.target.run_phase(**arguments, first_op=reached, max_ops=most,
                                             fsync=True, progress_path=str(wearout))  # fmt: skip
                result = merge_data_results(result, rest)
        elif writing:
            self.written[family] = int(result["ops_reached"])
        self.comm.Barrier()
        result["stonewall_ops"] = reached
        return result

    def metadata_phase(self, phase: str, family: str, operation: str) -> dict[str, Any]:
        step = {"write": "create", "stat": "stat", "read": "read", "delete": "remove"}[operation]
        runner = self.metadata[family]
        items = self.created.get(family, runner.workload.items)
        result = runner.phase(REPETITION, step, items, name=phase)
        if step == "create":
            self.created[family] = int(result["items_reached"])
        return result

    def take_timestamp(self) -> None:
        """The reference's timestamp phase: a file whose time find's newer-than
        criterion compares with (the file system's clock, not this host's)."""
        self.comm.Barrier()
        if self.rank == 0:
            self.target.touch(TIMESTAMP)
            self.timestamp_ns = self.target.attributes(TIMESTAMP)[1]
        self.timestamp_ns = int(self.comm.bcast(self.timestamp_ns, root=0))

    def find(self) -> dict[str, Any]:
        """The parallel scan of ``ROOT``: (files scanned, files matched) of this rank."""
        ranks = self.spec.ranks
        scanned = found = 0
        self.comm.Barrier()
        if self.rank == 0:
            self.announce(REPETITION, "find", "running")
        start = time.time_ns()
        level = [ROOT]
        while level:
            below, files, matched = scan_level(
                self.target, level[self.rank :: ranks], self.timestamp_ns
            )
            scanned, found = scanned + files, found + matched
            level = sorted(path for part in self.comm.allgather(below) for path in part)
        end = time.time_ns()
        self.comm.Barrier()
        return {"bytes": 0, "ops": scanned, "found": found, "start_unix_ns": start,
                "end_unix_ns": end, "latency_ns": b"", "stonewall_ops": None}  # fmt: skip

    def remove_ior_files(self) -> None:
        """As the reference's cleanup: each rank its ior-easy file, rank 0 the shared one."""
        self.comm.Barrier()
        self.target.unlink(f"{IOR_EASY_FILE}.{self.rank:08}")
        if self.rank == 0:
            self.target.unlink(IOR_HARD_FILE)
            self.target.unlink(TIMESTAMP)
        self.comm.Barrier()
