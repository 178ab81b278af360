"""The console tables of `benchfs bench storage`, `metadata`, `scale`,
`mount` and `analysis`, as grids that fit the terminal (``benchfs.cli.tables``); `bench
cluster` and `bench rpc` have modules of their own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from benchfs.cli.tables import NAME, TEXT, Column, Grid
from benchfs.config.sizes import format_size

if TYPE_CHECKING:  # the benchmark modules pull in pandas and the engine
    from benchfs.bench.analysis import AnalysisBenchResult
    from benchfs.bench.metadata import MetadataBenchReport
    from benchfs.bench.mount import MountBenchReport
    from benchfs.bench.scale import Growth, ScaleReport
    from benchfs.bench.scale_hosts import HostScaleReport
    from benchfs.bench.storage import Side, StorageBenchReport


def storage_grid(report: StorageBenchReport, seq_bytes: int, rand_bytes: int, rounds: int) -> Grid:
    """Two rows a case, engine over fio. Each side shows its median round; the
    ratio is the median of the per-round ratios, with their range under it."""
    grid = Grid(
        f"engine vs fio on {report.directory} (sequential {format_size(seq_bytes)}, "
        f"random {format_size(rand_bytes)}, {rounds} paired rounds)",
        [Column("case", TEXT, key=True), Column("tool", NAME, key=True), Column("MiB/s"),
         Column("IOPS"), Column("p50 (ms)"), Column("p99 (ms)"), Column("ratio"),
         Column("io_depth")],
    )  # fmt: skip
    for case in report.cases:
        paired = case.paired
        for tool, side in (("engine", case.engine), ("fio", case.fio)):
            engine_row = tool == "engine"
            grid.add_row(
                case.name if engine_row else "",
                tool,
                f"{side.MiBps:,.0f}",
                f"{side.iops:,.0f}",
                f"{side.p50_us / 1000:.2f}",
                f"{side.p99_us / 1000:.2f}",
                f"{paired.median:.2f}" if engine_row else f"{paired.low:.2f}-{paired.high:.2f}",
                f"{case.io_depth_mean:.1f}" if engine_row else "",
            )
    caption = ["ratio: median of engine/fio per round, min-max below it"]
    if report.disk is not None:
        sizes = "; ".join(
            f"{case.name} {_request_KiB(case.engine)} / {_request_KiB(case.fio)}"
            for case in report.cases
        )
        caption.append(f"mean request on {report.disk}, KiB (engine / fio): {sizes}")
    if report.cases:
        first = report.cases[0]
        caption += [first.engine_setup.describe(), first.fio_setup.describe()]
    if report.trace_overhead is not None:
        overhead = report.trace_overhead
        caption.append(
            f"event log on/off throughput: {overhead.median:.3f} "
            f"({overhead.low:.3f}-{overhead.high:.3f}, {overhead.rounds} pairs)"
        )
    grid.caption = "\n".join(caption)
    return grid


def _request_KiB(side: Side) -> str:
    return "-" if side.disk_request_KiB is None else f"{side.disk_request_KiB:,.0f}"


def metadata_bench_grid(report: MetadataBenchReport) -> Grid:
    """A row a phase: each side's rate, its ratio to plain POSIX calls and,
    with mdtest, the built-in ranks on the mount over mdtest on the mount."""
    case = report.case
    sides = [("native", "run_ops_s", True), ("mount", "mount_ops_s", report.mount is not None),
             ("mdtest", "mdtest_ops_s", report.mdtest is not None),
             ("POSIX", "posix_ops_s", True)]  # fmt: skip
    ratios = [("native / POSIX", "ratio", True),
              ("mount / POSIX", "mount_ratio", report.mount is not None),
              ("mount / mdtest", "mount_mdtest_ratio", report.mdtest is not None)]  # fmt: skip
    shown = [(f"{name} (ops/s)", key, "{:,.0f}") for name, key, ran in sides if ran]
    shown += [(header, key, "{:.3f}") for header, key, ran in ratios if ran]
    grid = Grid.of(
        f"benchfs run{' and mdtest' if report.mdtest is not None else ''} vs POSIX calls on "
        f"{report.directory} ({case.nodes} daemons, {case.ranks} ranks, "
        f"{case.items} {'items' if case.kind == 'both' else case.kind} each, "
        f"{case.write_bytes} bytes written"
        f"{f', mount cache {case.mount_cache_s:g} s' if case.mount_cache_s else ''})",
        ["phase", *(header for header, _, _ in shown)],
        [],
    )
    for row in report.to_json()["phases"]:
        grid.add_row(row["mdtest_name"], *(form.format(row[key]) for _, key, form in shown))
    if report.mdtest is not None:
        grid.caption = f"mdtest on the mount: mdtest {' '.join(report.mdtest_args)}"
    return grid


def scale_grid(report: ScaleReport, target_nodes: int, superlinear: float) -> Grid:
    """A row a set-up step: its seconds at each size, the fitted growth and
    the estimate at ``target_nodes``."""
    headers = ["step (s)", *(f"N={row.nodes}" for row in report.rows), "growth k",
               f"N={target_nodes} (est.)"]  # fmt: skip
    grid = Grid.of(
        f"set-up cost by cluster size (local daemons, pool "
        f"{format_size(report.buffer_pool_size)} each)",
        headers,
        [],
        transpose=True,
        caption=f"growth k: t ~ N**k fitted over the sizes; '!' marks k > {superlinear}",
    )
    _add_growth_rows(grid, report.growth, [row.step for row in report.rows])
    return grid


def host_scale_grid(report: HostScaleReport, superlinear: float) -> Grid:
    """A row a step of a run across hosts: its seconds at each host count, the
    fitted growth and the estimate at 1,024 hosts."""
    headers = ["step (s)", *(f"{row.hosts} hosts" for row in report.rows), "growth k",
               "1,024 hosts (est.)"]  # fmt: skip
    grid = Grid.of(
        f"`benchfs run` by host count ({report.ranks_per_host} ranks a host)",
        headers,
        [],
        transpose=True,
        caption=f"growth k: t ~ N**k fitted over the counts; '!' marks k > {superlinear}",
    )
    _add_growth_rows(grid, report.growth, [row.seconds.__getitem__ for row in report.rows])
    return grid


def _add_growth_rows(
    grid: Grid, growths: Sequence[Growth], columns: Sequence[Callable[[str], float]]
) -> None:
    """One row a step: its seconds in each column (a size), the fitted growth
    ('!' past the bound) and the estimate at the target."""
    for growth in growths:
        mark = " !" if growth.superlinear else ""
        grid.add_row(
            growth.step.removesuffix("_s"),
            *(f"{seconds(growth.step):.4f}" for seconds in columns),
            f"{growth.exponent:.2f}{mark}",
            f"{growth.at_target_s:,.2f}",
        )


def mount_grid(report: MountBenchReport) -> Grid:
    """A row a case: the sides' medians for orientation, then the paired
    figure (the median of the per-round ratios or differences, with their
    range), which is what the target is judged on."""
    from benchfs.bench.mount import BW_TARGET, LATENCY_TARGET_US

    grid = Grid(
        "fio on the mount vs the native client / local disk "
        f"({report.settings.rounds} paired rounds)",
        [Column("case", key=True), Column("against", NAME), Column("mount"), Column("ref."),
         Column("paired"), Column("range"), Column("target", NAME)],
        caption=f"targets against native: 1 MiB >= {BW_TARGET:.2f}x, 4 KiB p50 <= "
        f"+{LATENCY_TARGET_US:g} us, judged on the paired median; target: met or "
        "missed, and in how many rounds the pair alone meets it",
    )  # fmt: skip
    for case in report.cases:
        paired = case.paired
        if case.by_difference:
            figure, spread = f"{paired.median:+.0f} us", f"{paired.low:+.0f}..{paired.high:+.0f}"
        else:
            figure, spread = f"{paired.median:.2f}x", f"{paired.low:.2f}-{paired.high:.2f}"
        target = ""
        if case.met is not None:
            target = f"{'met' if case.met else 'MISSED'} {case.rounds_met}/{paired.rounds}"
        grid.add_row(
            f"{case.name} ({case.unit})", case.reference_name, f"{case.mount:,.0f}",
            f"{case.reference:,.0f}", figure, spread, target,
        )  # fmt: skip
    return grid


def analysis_grid(result: AnalysisBenchResult) -> Grid:
    """One row a step of the load and of the report, its parts indented under it."""
    grid = Grid(
        f"load and report of {result.events:,} events "
        f"({result.trace_bytes / 2**20:,.0f} MiB of traces, {result.nodes} nodes)",
        [Column("step", NAME, key=True), Column("wall (s)"), Column("CPU (s)"),
         Column("wall (%)")],
    )  # fmt: skip

    def row(name: str, wall_s: float, cpu_s: float) -> None:
        share = wall_s / result.total_s * 100.0 if result.total_s > 0 else 0.0
        grid.add_row(name, f"{wall_s:.2f}", f"{cpu_s:.2f}", f"{share:.0f}")

    report = [(name, times) for name, times in result.steps.items() if name.split(".")[0] != "load"]
    for name, times in result.steps.items():
        if name.split(".")[0] == "load":
            row("  " * name.count(".") + name.rsplit(".", 1)[-1], times.wall_s, times.cpu_s)
    tops = [times for name, times in report if "." not in name]
    row("report", result.report_s, sum(times.cpu_s for times in tops))
    for name, times in report:
        row("  " * (name.count(".") + 1) + name.rsplit(".", 1)[-1], times.wall_s, times.cpu_s)
    return grid
