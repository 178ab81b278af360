"""The console form of `benchfs bench rpc`: per case, the engine against each
reference with the per-round ratios' spread, then the placement of every round."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from benchfs.cli.tables import NAME, TEXT, Column, Grid, View, print_grid

if TYPE_CHECKING:  # the benchmark module pulls in the engine: imported when it runs
    from benchfs.bench.rpc import RpcBenchReport, RpcCase


def print_rpc_report(console: Console, report: RpcBenchReport, view: View) -> None:
    grid = Grid(
        f"RPC vs references, transport {report.transport}: per-round ratios, steady rounds",
        [Column("case", key=True), Column("reference", TEXT), Column("engine"), Column("ref."),
         Column("ratio [q1-q3]"), Column("min-max"), Column("target", NAME)],
    )  # fmt: skip
    for case in report.cases:
        number = "{:,.2f}" if case.unit == "us" else "{:,.0f}"
        for ref in case.references:
            ratios = case.ratios(ref.key)
            q1, q3 = ratios.quartiles
            grid.add_row(
                f"{case.name} ({case.unit})",
                ref.key if ref.like_for_like else f"{ref.key} ({ref.differs})",
                number.format(case.engine_median()),
                number.format(case.reference_median(ref.key)),
                f"{ratios.median:.2f} [{q1:.2f}-{q3:.2f}]",
                f"{ratios.low:.2f}-{ratios.high:.2f}",
                _verdict(case, ref.key),
            )
    print_grid(console, grid, view)
    for case in report.cases:
        rounds = ", ".join(
            f"{r.placement.name} {r.placement.before_ns:.0f}/{r.placement.after_ns:.0f}"
            for r in case.rounds
        )
        console.print(
            f"  {case.name}: {len(case.counted)} of {len(case.rounds)} rounds counted; "
            f"core-to-core ns before/after: {rounds}",
            highlight=False,
        )
    if report.perftest is not None:
        console.print(
            f"  engine on UCX {report.engine_ucx}; {report.perftest.binary} on UCX "
            f"{report.perftest.ucx_version}"
            + ("" if report.perftest.copies else " (no -y: its 4 KiB payloads go unread)"),
            highlight=False,
        )
    start, end = report.load_start, report.load_end
    console.print(
        f"  load average (1 min): {start[0]:.2f} at the start, {end[0]:.2f} at the end",
        highlight=False,
    )
    idle = report.idle_policy
    if idle:
        console.print(
            f"  daemon idle policy: bulk_spin_us {idle['bulk_spin_us']}; looks at the run "
            f"queue after bulk data: {idle['bulk_spin_free']} found a CPU free (spun on), "
            f"{idle['bulk_spin_busy']} found threads waiting (slept)",
            highlight=False,
        )
    e2e = report.e2e
    console.print(
        f"  end to end 4 KiB (buffered): write p50 {e2e['write_p50_us']:.1f} us "
        f"p99 {e2e['write_p99_us']:.1f} us; read p50 {e2e['read_p50_us']:.1f} us "
        f"p99 {e2e['read_p99_us']:.1f} us (target p50 <= 20 us)",
        highlight=False,
    )
    if report.daemon is not None:
        d = report.daemon
        console.print(
            f"  daemon: registered after {d.registered_after_ms:.0f} ms (target <= 1000); "
            f"peak RSS {d.peak_rss_MiB:.0f} MiB = pool {d.buffer_pool_MiB:.0f} MiB "
            f"+ {d.rss_over_pool_MiB:.0f} MiB (target <= +100)",
            highlight=False,
        )


def _verdict(case: RpcCase, reference: str) -> str:
    sign = ">=" if case.higher_is_better else "<="
    met = case.met(reference)
    outcome = "no steady round" if met is None else ("met" if met else "MISSED")
    return f"{sign} {case.target:g} {outcome}"
