"""``workload/summary.json`` of the IO500 suite run with the built-in loops.

One phase row per IO500 phase, named as IO500 names it, in its order: the
ior phases as data rows (IOR's figures, ``operation`` write or read), the
mdtest phases and find as metadata rows (mdtest's figures; find's
``items`` are the files it scanned, ``found`` those that matched). Every
row, and every repetition row, carries ``io500_rate``: the phase's IO500
figure (GiB/s or kIOPS, ``io500_unit``). The document adds ``suite`` (what
ran), and ``score``, ``bandwidth`` and ``metadata`` as IO500 computes them
(``analysis.io500``), ``valid`` and ``invalid_reasons`` (each phase row
its own) as the reference's rules judge the run, and ``suite.checks``: the
fsyncs, syncs and read verifications the phases did, as the reference's
IOR and mdtest flags.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from analysis.io500 import GROUPS, PHASE_NAMES, UNITS, phase_figure, score_of_rows, with_validity
from benchfs.config.suite import IOR_HARD_TRANSFER, SuiteSizes
from benchfs.workload import metadata_summary
from benchfs.workload.io500_rank import (
    FIND_NAME,
    FIND_SIZE,
    ROOT,
    applied_checks,
    suite_workloads,
)
from benchfs.workload.metadata_spec import MetadataWorkload
from benchfs.workload.spec import WorkloadSpec
from benchfs.workload.summary import (
    SUMMARY_VERSION,
    RankRow,
    WorkloadParameters,
    phase_row,
    repetition_result,
    repetition_row,
)

Latencies = Mapping[tuple[str, int], npt.NDArray[np.uint64]]


def data_parameters(spec: WorkloadSpec, sizes: SuiteSizes, family: str) -> WorkloadParameters:
    """ior-easy's or ior-hard's IOR parameters."""
    easy = family == "ior-easy"
    return WorkloadParameters(
        api="file-per-process" if easy else "shared",
        transfer_size=sizes.ior_easy_transfer_size if easy else IOR_HARD_TRANSFER,
        block_size=sizes.ior_easy_block_size if easy else IOR_HARD_TRANSFER,
        segments=1 if easy else sizes.ior_hard_segments,
        tasks=spec.ranks,
        tasks_per_node=spec.tasks_per_node,
        repetitions=1,
        file_per_process=easy,
        reorder_tasks=spec.reorder_tasks,
        stonewall_s=sizes.stonewall_s,
        verify=True,
        queue_depth=spec.queue_depth,
        verify_seeds=(spec.seed_for(0 if easy else 1),),
        target=spec.target,
    )


def _find_workload() -> MetadataWorkload:
    # find has no items of its own and nothing per file; only its name is used.
    return MetadataWorkload(items=0, phases=[], unique_dir=False, write_bytes=0, read_bytes=0,
                            stonewall_s=0.0, repetitions=1, prefix=ROOT)  # fmt: skip


def _with_figure(row: dict[str, Any], phase: str, figure: float) -> dict[str, Any]:
    row["io500_rate"] = figure
    row["io500_unit"] = UNITS[GROUPS[phase]]
    return row


def _phase_rows(
    phase: str, rows: list[RankRow], spec: WorkloadSpec, sizes: SuiteSizes, latency: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    family, _, operation = phase.rpartition("-")
    if family.startswith("ior-"):
        parameters = data_parameters(spec, sizes, family)
        result = repetition_result(rows)
        summary = phase_row(phase, [result], parameters, latency)
        summary["operation"] = operation
        repetition = repetition_row(result, parameters, latency)
        repetition["access"] = operation
    else:
        workload = _find_workload() if phase == "find" else suite_workloads(sizes)[family]
        summary = metadata_summary.phase_row(phase, [rows], workload, latency)
        repetition = metadata_summary.repetition_row(rows, latency)
        # mdtest-hard-read checks every file's bytes (mdtest -X).
        summary["verify_errors"] = repetition["verify_errors"] = sum(r.verify_errors for r in rows)
        if phase == "find":
            found = sum(row.found or 0 for row in rows)
            summary.update(items_per_rank=None, access=None, write_bytes=None, read_bytes=None,
                           stonewall_s=None, found=found, criteria={"name": FIND_NAME,
                           "size": FIND_SIZE, "newer": "mdtest-easy-write"})  # fmt: skip
            repetition["found"] = found
    if family.startswith("ior-"):
        of_repetition = float(repetition["bwMiB"] or 0.0) / 1024.0
    else:
        of_repetition = float(repetition["rate_ops_s"] or 0.0) / 1000.0
    return (
        _with_figure(summary, phase, phase_figure(summary)),
        _with_figure(repetition, phase, of_repetition),
    )


def summarize_suite(
    rows: Iterable[RankRow], spec: WorkloadSpec, latencies: Latencies | None = None
) -> dict[str, Any]:
    """The suite's whole ``workload/summary.json`` from the ranks' rows."""
    assert spec.suite is not None
    sizes = spec.suite
    latencies = latencies or {}
    grouped: dict[str, list[RankRow]] = {}
    for row in rows:
        grouped.setdefault(row.phase, []).append(row)
    phases: list[dict[str, Any]] = []
    repetitions: list[dict[str, Any]] = []
    for phase in PHASE_NAMES:
        if phase in grouped:
            summary, repetition = _phase_rows(
                phase, grouped[phase], spec, sizes, latencies.get((phase, 0))
            )
            phases.append(summary)
            repetitions.append(repetition)
    score = score_of_rows(phases)
    suite = {
        **sizes.model_dump(),
        "target": spec.target,
        "interface": spec.interface,
        "tasks": spec.ranks,
        "tasks_per_node": spec.tasks_per_node,
        "checks": applied_checks(sizes.tool, spec.on_files),
    }
    phases, validity = with_validity(phases, suite)
    return {
        "summary_version": SUMMARY_VERSION,
        "suite": suite,
        **score.to_json(),
        **validity,
        "phases": phases,
        "repetitions": repetitions,
        "errors": sum(int(row.get("errors") or 0) for row in phases),
        "verify_errors": sum(int(row.get("verify_errors") or 0) for row in phases),
    }
