"""`benchfs bench ...`: side-by-side benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table

from benchfs.cli.cluster_display import print_cluster_report
from benchfs.cli.console import make_console
from benchfs.cli.rpc_display import print_rpc_report
from benchfs.config.model import MAX_BULK_SPIN_US, MAX_QUEUE_DEPTH
from benchfs.config.sizes import format_size, parse_size

if TYPE_CHECKING:  # the benchmark modules pull in pandas: imported when a command runs
    from benchfs.bench.mount import MountBenchReport
    from benchfs.bench.storage import Side, StorageBenchReport

app = typer.Typer(help="Side-by-side benchmarks: the engine against a reference tool.")
console = make_console()
err_console = make_console(stderr=True)

# Options several benchmarks share.
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
DiskDirOption = Annotated[
    Path | None,
    typer.Option("--dir", help="Directory on the disk to measure (default: the temp dir)."),
]
ResultsDirOption = Annotated[
    Path, typer.Option("--results-dir", help="Where the run's results directory goes.")
]


def _size(text: str, option: str) -> int:
    try:
        return parse_size(text)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None


@app.command("storage")
def storage(
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir", help="Directory on the file system to measure (default: the temp dir)."
        ),
    ] = None,
    json_output: JsonOption = False,
    seq_size: Annotated[
        str, typer.Option(help="Bytes per sequential case (e.g. 4GiB, 512m).")
    ] = "4GiB",
    rand_size: Annotated[str, typer.Option(help="Bytes per random 4 KiB case.")] = "1GiB",
    queue_depth: Annotated[int, typer.Option(min=1, max=1024, help="Operations in flight.")] = 32,
    rounds: Annotated[
        int,
        typer.Option(
            min=1,
            help="Engine/fio pairs per case; the ratio is the median of the per-pair ratios.",
        ),
    ] = 7,
    trace_repeats: Annotated[
        int,
        typer.Option(min=0, help="On/off pairs for the event log overhead (0 to skip)."),
    ] = 5,
) -> None:
    """Run the engine and fio (io_uring, direct) on the same four cases and compare."""
    from benchfs.bench.storage import run_storage_bench, standard_cases

    cases = standard_cases(
        _size(seq_size, "--seq-size"), _size(rand_size, "--rand-size"), queue_depth
    )
    progress = err_console.status("starting")
    with progress:
        report = run_storage_bench(
            directory,
            cases,
            rounds=rounds,
            trace_repeats=trace_repeats,
            on_progress=lambda step: progress.update(step),
        )
    if json_output:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        console.print(_table(report, cases[0].total_bytes, cases[-1].total_bytes, rounds))


def _table(report: StorageBenchReport, seq_bytes: int, rand_bytes: int, rounds: int) -> Table:
    """Two rows a case, engine over fio, so it stays readable in 80 columns:
    figures keep their full width, only the case names wrap. Each side shows
    its median round; the ratio is the median of the per-round ratios, with
    their range under it."""
    rows: list[tuple[str, ...]] = []
    for case in report.cases:
        paired = case.paired
        for tool, side in (("engine", case.engine), ("fio", case.fio)):
            engine_row = tool == "engine"
            rows.append(
                (
                    case.name if engine_row else "",
                    tool,
                    f"{side.MiBps:,.0f}",
                    f"{side.iops:,.0f}",
                    f"{side.p50_us / 1000:.2f}",
                    f"{side.p99_us / 1000:.2f}",
                    f"{paired.median:.2f}" if engine_row else f"{paired.low:.2f}-{paired.high:.2f}",
                    f"{case.io_depth_mean:.1f}" if engine_row else "",
                )
            )
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        title=f"engine vs fio on {report.directory} "
        f"(sequential {format_size(seq_bytes)}, random {format_size(rand_bytes)}, "
        f"{rounds} paired rounds)",
    )
    table.add_column("case", overflow="fold")
    headers = ("tool", "MiB/s", "IOPS", "p50 ms", "p99 ms", "ratio", "io_depth")
    for index, header in enumerate(headers, start=1):
        width = max([len(header), *(len(row[index]) for row in rows)])
        table.add_column(
            header, justify="left" if index == 1 else "right", no_wrap=True, min_width=width
        )
    for row in rows:
        table.add_row(*row, end_section=row[1] == "fio")
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
    table.caption = "\n".join(caption)
    return table


def _request_KiB(side: Side) -> str:
    return "-" if side.disk_request_KiB is None else f"{side.disk_request_KiB:,.0f}"


@app.command("analysis")
def analysis(
    json_output: JsonOption = False,
    events: Annotated[int, typer.Option(min=1000, help="Trace events to generate.")] = 10_000_000,
) -> None:
    """Time loading 10 million trace events and writing the full report; peak memory."""
    from benchfs.bench.analysis import run_analysis_bench

    with err_console.status(f"generating {events:,} events, then loading and reporting"):
        result = run_analysis_bench(events)
    if json_output:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    verdict = "within" if result.within_targets else "OUTSIDE"
    console.print(
        f"{result.events:,} events ({result.trace_bytes / 2**20:,.0f} MiB of traces): "
        f"load {result.load_s:.2f} s + report {result.report_s:.2f} s = {result.total_s:.2f} s "
        f"({result.cpu_s:.2f} s CPU), "
        f"peak RSS {result.peak_rss_bytes / 2**30:.2f} GiB; {verdict} the targets "
        f"({result.target_s:g} s, {result.target_peak_bytes / 2**30:g} GiB)"
    )


@app.command("cluster")
def cluster(
    directory: DiskDirOption = None,
    json_output: JsonOption = False,
    transfer_size: Annotated[str, typer.Option(help="Bytes per I/O (IOR -t).")] = "1m",
    block_size: Annotated[str, typer.Option(help="Bytes per rank (IOR -b).")] = "256m",
    nodes: Annotated[int, typer.Option(min=1, help="Local daemons (and ranks).")] = 4,
    queue_depth: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_QUEUE_DEPTH,
            help="Transfers in flight per rank on every side (the run's window, fio's iodepth).",
        ),
    ] = 16,
    rounds: Annotated[
        int,
        typer.Option(
            min=1,
            help="Rounds of every side back to back; each ratio is the median of the "
            "per-round ratios.",
        ),
    ] = 7,
    posix: Annotated[
        bool,
        typer.Option(
            help="At --queue-depth 1, also the same workload on a posix: target on the "
            "disk (O_DIRECT)."
        ),
    ] = True,
    results_dir: ResultsDirOption = Path("results"),
    bulk_spin_us: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=MAX_BULK_SPIN_US,
            help="The daemons' bulk_spin_us (0: their idle loops sleep after 50 us even "
            "after bulk data; 2000 is the value measured); default: the daemon's, 0.",
        ),
    ] = None,
) -> None:
    """A local cluster `benchfs run` against fio (and posix:) with the same bytes,
    block size, jobs and queue depth, in paired rounds."""
    from benchfs.bench.cluster import ClusterBenchCase, run_cluster_bench

    case = ClusterBenchCase(
        nodes=nodes,
        transfer_size=_size(transfer_size, "--transfer-size"),
        block_size=_size(block_size, "--block-size"),
        queue_depth=queue_depth,
        rounds=rounds,
        posix=posix,
        bulk_spin_us=bulk_spin_us,
    )
    with err_console.status("starting") as progress:
        report = run_cluster_bench(
            case,
            directory=directory,
            results_dir=results_dir,
            on_progress=lambda step: progress.update(step),
        )
    if json_output:
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    print_cluster_report(console, report)


@app.command("metadata")
def metadata(
    directory: DiskDirOption = None,
    json_output: JsonOption = False,
    items: Annotated[
        int, typer.Option(min=1, help="Files (and directories) per rank (mdtest -n).")
    ] = 2000,
    kind: Annotated[
        str, typer.Option(help="files (mdtest -F), dirs (-D) or both (directories first).")
    ] = "both",
    write_bytes: Annotated[str, typer.Option(help="Bytes written per file (mdtest -w).")] = "0",
    read_bytes: Annotated[str, typer.Option(help="Bytes read per file (mdtest -e).")] = "0",
    nodes: Annotated[int, typer.Option(min=1, help="Local daemons (and ranks).")] = 4,
    mount: Annotated[
        bool, typer.Option(help="Also through BenchFS's FUSE mount (needs /dev/fuse).")
    ] = True,
    results_dir: ResultsDirOption = Path("results"),
) -> None:
    """The metadata workload on a local cluster (native client, the mount) and by
    plain POSIX calls on its disk."""
    from benchfs.bench.metadata import MetadataBenchCase, run_metadata_bench
    from benchfs.workload.metadata_spec import ITEM_KINDS

    if kind not in ITEM_KINDS:
        raise typer.BadParameter(
            f"{kind!r} is not one of {', '.join(ITEM_KINDS)}", param_hint="--kind"
        )
    case = MetadataBenchCase(
        nodes=nodes,
        items=items,
        kind=kind,
        write_bytes=_size(write_bytes, "--write-bytes"),
        read_bytes=_size(read_bytes, "--read-bytes"),
        mount=mount,
    )
    with err_console.status("starting") as progress:
        report = run_metadata_bench(
            case,
            directory=directory,
            results_dir=results_dir,
            on_progress=lambda step: progress.update(step),
        )
    if json_output:
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"benchfs run vs POSIX calls on {report.directory} ({case.ranks} ranks, "
        f"{case.items} {'items' if case.kind == 'both' else case.kind} each, "
        f"{case.write_bytes} bytes written)",
    )
    headers = ["phase", "native (ops/s)", "mount (ops/s)", "POSIX (ops/s)",
               "native / POSIX", "mount / POSIX"]  # fmt: skip
    if report.mount is None:
        headers = [h for h in headers if not h.startswith("mount")]
    for header in headers:
        table.add_column(header, justify="right" if header != "phase" else "left", no_wrap=True)
    for row in report.to_json()["phases"]:
        cells = [row["mdtest_name"], f"{row['run_ops_s']:,.0f}"]
        if report.mount is not None:
            cells.append(f"{row['mount_ops_s']:,.0f}")
        cells += [f"{row['posix_ops_s']:,.0f}", f"{row['ratio']:.3f}"]
        if report.mount is not None:
            cells.append(f"{row['mount_ratio']:.3f}")
        table.add_row(*cells)
    console.print(table)
    for side, run_dir in report.results_dirs.items():
        console.print(f"results ({side}): {run_dir}", highlight=False)


@app.command("rpc")
def rpc(
    json_output: JsonOption = False,
    transport: Annotated[
        list[str] | None,
        typer.Option(help="auto (shared memory on one host) and/or tcp; default: both."),
    ] = None,
    rounds: Annotated[
        int,
        typer.Option(
            min=1, help="Rounds of the engine and its references, in turns; per-round ratios."
        ),
    ] = 7,
    lat_iterations: Annotated[int, typer.Option(min=100, help="Pings per latency round.")] = 20000,
    bw_iterations: Annotated[int, typer.Option(min=10, help="1 MiB pings per round.")] = 2000,
    examples_dir: Annotated[
        Path | None,
        typer.Option(
            "--examples-dir",
            help="Where am_pingpong and core_to_core are "
            "(default: benchfs_native/target/release/examples; `make examples` builds them).",
        ),
    ] = None,
    perftest: Annotated[
        str,
        typer.Option(
            "--perftest",
            help="The ucx_perftest to compare with (a path or a name on PATH); one with -y "
            "(UCX 1.15 and later) also runs its 4 KiB round trip copying each payload out.",
        ),
    ] = "ucx_perftest",
    bulk_spin_us: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=MAX_BULK_SPIN_US,
            help="The daemon's bulk_spin_us (0: its idle loop sleeps after 50 us even "
            "after bulk data; 2000 is the value measured); default: the daemon's, 0.",
        ),
    ] = None,
) -> None:
    """The RPC layer against ucx_perftest and the UCX binding doing the same work, round by
    round with the CPU placement recorded, and end to end via a daemon."""
    from benchfs.bench.rpc import RpcBenchSettings, run_rpc_bench

    chosen = transport or ["auto", "tcp"]
    bad = [t for t in chosen if t not in ("auto", "tcp")]
    if bad:
        raise typer.BadParameter(f"{bad[0]!r} is not auto or tcp", param_hint="--transport")
    settings = RpcBenchSettings(
        rounds=rounds,
        lat_iterations=lat_iterations,
        bw_iterations=bw_iterations,
        examples_dir=examples_dir,
        bulk_spin_us=bulk_spin_us,
        perftest=perftest,
    )
    with err_console.status("starting") as progress:
        reports = run_rpc_bench(
            tuple(chosen),  # type: ignore[arg-type]
            settings,
            on_step=lambda step: progress.update(step),
        )
    if json_output:
        typer.echo(json.dumps([r.to_dict() for r in reports], indent=2))
        return
    for report in reports:
        print_rpc_report(console, report)


@app.command("scale")
def scale(
    nodes: Annotated[
        list[int] | None,
        typer.Option("--nodes", min=1, help="Cluster sizes to measure (default: 8 16 32 64)."),
    ] = None,
    json_output: JsonOption = False,
    buffer_pool_size: Annotated[
        str, typer.Option(help="Each daemon's buffer pool (small: many daemons share the RAM).")
    ] = "8m",
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Where the daemons' data goes (default: the temp dir)."),
    ] = None,
) -> None:
    """Set-up cost as the cluster grows: spawn, membership, connect, first RPC, stop."""
    from benchfs.bench.scale import DEFAULT_SIZES, SUPERLINEAR, TARGET_NODES, run_scale_bench

    pool = _size(buffer_pool_size, "--buffer-pool-size")
    with err_console.status("starting") as progress:
        report = run_scale_bench(
            nodes or DEFAULT_SIZES,
            buffer_pool_size=pool,
            directory=directory,
            on_progress=lambda step: progress.update(step),
        )
    if json_output:
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"set-up cost by cluster size (local daemons, pool {format_size(pool)} each)",
    )
    table.add_column("step (s)", no_wrap=True)
    for row in report.rows:
        table.add_column(f"N={row.nodes}", justify="right", no_wrap=True)
    table.add_column("growth k", justify="right", no_wrap=True)
    table.add_column(f"N={TARGET_NODES} (est.)", justify="right", no_wrap=True)
    for growth in report.growth:
        mark = " !" if growth.superlinear else ""
        table.add_row(
            growth.step.removesuffix("_s"),
            *(f"{row.step(growth.step):.4f}" for row in report.rows),
            f"{growth.exponent:.2f}{mark}",
            f"{growth.at_target_s:,.2f}",
        )
    console.print(table)
    console.print(
        f"growth k: t ~ N**k fitted over the sizes; '!' marks k > {SUPERLINEAR}",
        highlight=False,
    )


@app.command("mount")
def mount(
    json_output: JsonOption = False,
    directory: DiskDirOption = None,
    seq_size: Annotated[
        str, typer.Option(help="Bytes per job of the 1 MiB sequential cases (e.g. 256MiB).")
    ] = "128MiB",
    small_ops: Annotated[
        int, typer.Option(min=100, help="4 KiB sequential operations at QD1.")
    ] = 2000,
    threads: Annotated[
        int, typer.Option(min=0, max=256, help="Mount worker threads (0: none).")
    ] = 4,
    rounds: Annotated[
        int,
        typer.Option(
            min=1,
            help="Rounds of native/mount/disk back to back; each comparison is the "
            "median of the per-round ratios (latency: differences).",
        ),
    ] = 7,
    session_spin: Annotated[
        int,
        typer.Option(
            "--session-spin",
            min=0,
            max=1000,
            help="Microseconds the mount's session thread polls for the next request "
            "before sleeping (0: none).",
        ),
    ] = 0,
) -> None:
    """fio on the FUSE mount against the native client and against the local disk."""
    from benchfs.bench.mount import MountBenchSettings, run_mount_bench

    settings = MountBenchSettings(
        seq_bytes_per_job=_size(seq_size, "--seq-size"),
        small_ops=small_ops,
        threads=threads,
        rounds=rounds,
        session_spin_us=session_spin,
    )
    with err_console.status("starting") as progress:
        report = run_mount_bench(directory, settings, on_step=lambda s: progress.update(s))
    if json_output:
        typer.echo(json.dumps(report.to_dict(), indent=2))
        return
    console.print(_mount_table(report))
    sides = dict.fromkeys(
        (c.name, c.reference_name, c.mount_side, c.reference_side) for c in report.cases
    )
    for name, against, mount_side, reference_side in sides:
        console.print(
            f"{name} vs {against}: mount = {mount_side}; {against} = {reference_side}",
            highlight=False,
        )
    start, end = report.load_start, report.load_end
    console.print(
        f"load average (1/5/15 min): {start[0]:.2f} {start[1]:.2f} {start[2]:.2f} at the "
        f"start, {end[0]:.2f} {end[1]:.2f} {end[2]:.2f} at the end",
        highlight=False,
    )


def _mount_table(report: MountBenchReport) -> Table:
    """A row a case: the sides' medians for orientation, then the paired
    figure (the median of the per-round ratios or differences, with their
    range), which is what the target is judged on."""
    from benchfs.bench.mount import BW_TARGET, LATENCY_TARGET_US

    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        title="fio on the mount vs the native client / local disk "
        f"({report.settings.rounds} paired rounds)",
    )
    headers = ("case", "against", "mount", "ref.", "paired", "range", "target")
    for header in headers:
        table.add_column(header, justify="left" if header in ("case", "against") else "right")
    for case in report.cases:
        paired = case.paired
        if case.by_difference:
            figure, spread = f"{paired.median:+.0f} us", f"{paired.low:+.0f}..{paired.high:+.0f}"
        else:
            figure, spread = f"{paired.median:.2f}x", f"{paired.low:.2f}-{paired.high:.2f}"
        target = ""
        if case.met is not None:
            target = f"{'met' if case.met else 'MISSED'} {case.rounds_met}/{paired.rounds}"
        table.add_row(
            f"{case.name} ({case.unit})", case.reference_name, f"{case.mount:,.0f}",
            f"{case.reference:,.0f}", figure, spread, target,
        )  # fmt: skip
    table.caption = (
        f"targets against native: 1 MiB >= {BW_TARGET:.2f}x, 4 KiB p50 <= "
        f"+{LATENCY_TARGET_US:g} us, judged on the paired median; target: met or "
        "missed, and in how many rounds the pair alone meets it"
    )
    return table
