"""The metadata workload as the ranks run it: mdtest's directory and file
phases through the engine's ``Client.run_metadata_phase`` (the per-item
loop is in Rust).

Per repetition: barrier, the phase on every rank, barrier, for each phase
in mdtest's order: the tree's creation (mdtest ``-z``, ``-b``: every rank
its own tree, or rank 0 the shared one), the directory phases (mkdir,
stat, rename, rmdir), the file phases (create, stat, read, remove), the
tree's removal. A target that cannot rename directories (BenchFS: EXDEV by
design) runs no rename; the summary reports it as not supported. A
stonewall stops a creation phase of files or directories early on each
rank; then every rank catches up to the rank that got furthest (mdtest's
wear-out), so all ranks hold the same number of items and the later phases
operate on exactly the items created. Without a
remove phase the items are removed after their kind's phases, untimed, so
the next repetition starts empty, and the tree after them. With
``sync_after_create`` (mdtest ``-Y``, the IO500 suite) each rank then calls
its target's ``sync`` before the phase's time ends.

Rows and latencies go where the data phases' go (``workload/ranks.jsonl``,
``workload/latency-<phase>-<rep>.npy``), under mdtest's phase names.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchfs.workload.metadata_spec import MetadataWorkload, mdtest_name
from benchfs.workload.progress import State


def merge_results(first: Mapping[str, Any], rest: Mapping[str, Any]) -> dict[str, Any]:
    """A stonewalled create and its wear-out call as one result."""
    return {
        **first,
        "ops": int(first["ops"]) + int(rest["ops"]),
        "bytes": int(first["bytes"]) + int(rest["bytes"]),
        "items_reached": int(rest["items_reached"]),
        "end_unix_ns": int(rest["end_unix_ns"]),
        "latency_ns": bytes(first["latency_ns"]) + bytes(rest["latency_ns"]),
        "stonewalled": bool(first.get("stonewalled", False)),
    }


class MetadataRank:
    """One rank's metadata repetitions.

    ``comm`` is the MPI communicator, ``client`` the engine's client;
    ``collect(repetition, phase, result)`` keeps a phase's result (the
    data workload's writer of rows and latencies), ``announce(repetition,
    phase, state)`` tells the orchestrator which phase runs.
    """

    def __init__(
        self,
        workload: MetadataWorkload,
        comm: Any,
        client: Any,
        collect: Callable[[int, str, Mapping[str, Any]], None],
        announce: Callable[[int, str, State], None],
        progress_path: Callable[[int, str, int, bool], Path],
    ) -> None:
        self.workload = workload
        self.comm = comm
        self.client = client
        self.rank: int = comm.Get_rank()
        self.ranks: int = comm.Get_size()
        self.collect = collect
        self.announce = announce
        self.progress_path = progress_path

    def run(self) -> None:
        workload = self.workload
        for repetition in range(workload.repetitions):
            tree = workload.tree_arguments("create", self.rank, self.ranks)
            result = self.phase(repetition, "create", tree["items"], item_kind="tree")
            self.collect(repetition, mdtest_name("tree", "create"), result)
            for item_kind in workload.item_kinds():
                items = workload.items
                for phase in workload.phases_of(item_kind):
                    if phase == "rename" and (not workload.dir_rename or items < 2):
                        continue  # reported as not supported; mdtest renames not one alone
                    result = self.phase(repetition, phase, items, item_kind=item_kind)
                    if phase == "create":
                        items = int(result["items_reached"])
                    self.collect(repetition, mdtest_name(item_kind, phase), result)
                if "remove" not in workload.phases:
                    self.remove_untimed(items, item_kind)
            if "remove" in workload.phases:
                result = self.phase(repetition, "remove", tree["items"], item_kind="tree")
                self.collect(repetition, mdtest_name("tree", "remove"), result)
            else:
                self.remove_untimed(tree["items"], "tree")

    def phase(
        self,
        repetition: int,
        phase: str,
        items: int,
        name: str | None = None,
        item_kind: str = "file",
    ) -> dict[str, Any]:
        """One phase between barriers on items of ``item_kind``; ``name`` is
        what it is reported as (mdtest's name of the phase unless given)."""
        from mpi4py import MPI

        name = name or mdtest_name(item_kind, phase)
        if item_kind == "tree":
            arguments = self.workload.tree_arguments(phase, self.rank, self.ranks)
        else:
            arguments = self.workload.arguments(phase, self.rank, self.ranks, item_kind)
        arguments["items"] = items
        progress = self.progress_path(repetition, name, self.rank, False)
        progress.parent.mkdir(parents=True, exist_ok=True)
        stonewall_s = (
            self.workload.stonewall_s if phase == "create" and item_kind != "tree" else 0.0
        )
        self.comm.Barrier()
        if self.rank == 0:
            self.announce(repetition, name, "running")
        result = dict(
            self.client.run_metadata_phase(
                **arguments, stonewall_s=stonewall_s, progress_path=str(progress)
            )
        )
        stonewall_items: int | None = None
        if stonewall_s > 0:
            stonewall_items = int(result["items_reached"])
            most = int(self.comm.allreduce(stonewall_items, op=MPI.MAX))
            if stonewall_items < most:
                rest = self.client.run_metadata_phase(
                    **{**arguments, "items": most},
                    first_item=stonewall_items,
                    progress_path=str(self.progress_path(repetition, name, self.rank, True)),
                )
                result = merge_results(result, rest)
        if phase == "create" and item_kind != "tree" and self.workload.sync_after_create:
            self.client.sync()
            result["end_unix_ns"] = time.time_ns()
        self.comm.Barrier()
        result["stonewall_ops"] = stonewall_items
        return result

    def remove_untimed(self, items: int, item_kind: str = "file") -> None:
        """The repetition's files, directories or tree, when no remove phase took them."""
        self.comm.Barrier()
        if item_kind == "tree":
            arguments = self.workload.tree_arguments("remove", self.rank, self.ranks)
        else:
            arguments = self.workload.arguments("remove", self.rank, self.ranks, item_kind)
        self.client.run_metadata_phase(**{**arguments, "items": items})
        self.comm.Barrier()
