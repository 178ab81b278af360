"""`benchfs bench ...`: side-by-side benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from benchfs.cli.bench_display import (
    analysis_grid,
    host_scale_grid,
    metadata_bench_grid,
    mount_grid,
    scale_grid,
    storage_grid,
)
from benchfs.cli.cluster_display import print_cluster_report
from benchfs.cli.console import make_console
from benchfs.cli.rpc_display import print_rpc_report
from benchfs.cli.tables import ColumnsOption, Grid, View, WideOption, print_grid
from benchfs.config.model import (
    MAX_BULK_SPIN_US,
    MAX_MOUNT_SESSION_SPIN_US,
    MAX_MOUNT_THREADS,
    MAX_QUEUE_DEPTH,
)
from benchfs.config.sizes import parse_size
from benchfs.errors import ToolError

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
FioHugePagesOption = Annotated[
    bool,
    typer.Option(
        "--fio-huge-pages",
        help="fio's buffers from the huge-page pool (iomem=mmaphuge; vm.nr_hugepages must "
        "hold them), as the engine's lie on huge pages: its direct requests then reach the "
        "disk whole, not split at 4 KiB page boundaries.",
    ),
]


def _print(grid: Grid, view: View) -> None:
    print_grid(console, grid, view)
    view.check()


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
    fio_huge_pages: FioHugePagesOption = False,
    wide: WideOption = False,
    columns: ColumnsOption = None,
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
            fio_huge_pages=fio_huge_pages,
            on_progress=lambda step: progress.update(step),
        )
    if json_output:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        grid = storage_grid(report, cases[0].total_bytes, cases[-1].total_bytes, rounds)
        _print(grid, View.of(wide, columns))


@app.command("analysis")
def analysis(
    json_output: JsonOption = False,
    events: Annotated[int, typer.Option(min=1000, help="Trace events to generate.")] = 10_000_000,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """Time loading 10 million trace events and writing the full report, step by step;
    peak memory."""
    from benchfs.bench.analysis import run_analysis_bench

    with err_console.status(f"generating {events:,} events, then loading and reporting"):
        result = run_analysis_bench(events)
    if json_output:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    _print(analysis_grid(result), View.of(wide, columns))
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
    live_interval_s: Annotated[
        float | None,
        typer.Option(
            min=0,
            max=60,
            help="The run side's live.interval_s (0: the live view off, to measure its "
            "cost beside a run with it on); default: the run's, 1 s.",
        ),
    ] = None,
    fio_huge_pages: FioHugePagesOption = False,
    wide: WideOption = False,
    columns: ColumnsOption = None,
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
        live_interval_s=live_interval_s,
        fio_huge_pages=fio_huge_pages,
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
    view = View.of(wide, columns)
    print_cluster_report(console, report, view)
    view.check()


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
    nodes: Annotated[int, typer.Option(min=1, help="Local daemons.")] = 4,
    ranks_per_node: Annotated[int, typer.Option(min=1, help="Ranks beside each daemon.")] = 1,
    mount: Annotated[
        bool, typer.Option(help="Also through BenchFS's FUSE mount (needs /dev/fuse).")
    ] = True,
    mount_cache: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=3600.0,
            help="Seconds the kernel may keep the mount's attributes and names "
            "(0: every stat asks the daemons; docs/MOUNT.md).",
        ),
    ] = 0.0,
    mdtest: Annotated[
        bool | None,
        typer.Option(
            "--mdtest/--no-mdtest",
            help="Also the real mdtest through the mount (default: when mdtest is found).",
            show_default=False,
        ),
    ] = None,
    mdtest_path: Annotated[
        str | None,
        typer.Option(
            help="The mdtest binary or its directory (default: PATH, $IOR_BIN_DIR, /opt/ior/bin)."
        ),
    ] = None,
    results_dir: ResultsDirOption = Path("results"),
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """The metadata workload on a local cluster (native client, the mount, mdtest
    on the mount) and by plain POSIX calls on its disk."""
    from benchfs.bench.metadata import MetadataBenchCase, run_metadata_bench
    from benchfs.bench.metadata_mdtest import choose_mdtest
    from benchfs.workload.metadata_spec import ITEM_KINDS

    if kind not in ITEM_KINDS:
        raise typer.BadParameter(
            f"{kind!r} is not one of {', '.join(ITEM_KINDS)}", param_hint="--kind"
        )
    case = MetadataBenchCase(
        nodes=nodes,
        ranks_per_node=ranks_per_node,
        mount_cache_s=mount_cache,
        items=items,
        kind=kind,
        write_bytes=_size(write_bytes, "--write-bytes"),
        read_bytes=_size(read_bytes, "--read-bytes"),
        mount=mount,
        mdtest=choose_mdtest(mdtest, mdtest_path, mount=mount),
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
    _print(metadata_bench_grid(report), View.of(wide, columns))
    if case.mdtest.skipped is not None:
        console.print(f"mdtest on the mount left out: {case.mdtest.skipped}", highlight=False)
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
            help="Where am_pingpong and core_to_core are (default: the release build of "
            "the source tree the package was built from, built there on first use).",
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
    wide: WideOption = False,
    columns: ColumnsOption = None,
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
    view = View.of(wide, columns)
    for report in reports:
        print_rpc_report(console, report, view)
    view.check()


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
    wide: WideOption = False,
    columns: ColumnsOption = None,
    hosts: Annotated[
        str | None,
        typer.Option(
            "--hosts",
            help="Host counts, e.g. 4,8,16: a tiny `benchfs run` on the first k hosts of "
            "--hostfile each, timed step by step (instead of local daemons).",
        ),
    ] = None,
    hostfile: Annotated[
        Path | None, typer.Option("--hostfile", help="The hosts of --hosts (a hostfile).")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Run config of the --hosts runs (launcher, transport)."),
    ] = None,
    ranks_per_host: Annotated[
        int, typer.Option("--ranks-per-host", min=1, help="Ranks on each host with --hosts.")
    ] = 4,
) -> None:
    """Set-up cost as the cluster grows: spawn, membership, connect, first RPC, stop."""
    from benchfs.bench.scale import DEFAULT_SIZES, SUPERLINEAR, TARGET_NODES, run_scale_bench

    if hosts is not None:
        _scale_hosts(hosts, hostfile, config, ranks_per_host, directory, json_output, wide, columns)
        return
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
    _print(scale_grid(report, TARGET_NODES, SUPERLINEAR), View.of(wide, columns))


def _scale_hosts(
    counts_text: str,
    hostfile: Path | None,
    config: Path | None,
    ranks_per_host: int,
    directory: Path | None,
    json_output: bool,
    wide: bool,
    columns: str | None,
) -> None:
    import os

    from benchfs.bench.scale import SUPERLINEAR
    from benchfs.bench.scale_hosts import run_hosts_scale_bench
    from benchfs.bench.scope import bench_scope
    from benchfs.cluster.hostfile import parse_hostfile

    try:
        counts = [int(part) for part in counts_text.split(",") if part.strip()]
    except ValueError:
        raise ToolError(f"--hosts {counts_text}: expected counts like 4,8,16") from None
    if hostfile is None:
        raise ToolError("--hosts needs --hostfile (the hosts to run on)")
    with (
        err_console.status("starting") as progress,
        bench_scope(directory, "benchfs-scale-hosts-") as (_, root),
    ):
        report = run_hosts_scale_bench(
            parse_hostfile(hostfile),
            counts,
            ranks_per_host=ranks_per_host,
            settings={},
            directory=root,
            env=dict(os.environ),
            on_progress=lambda step: progress.update(step),
            config_path=config,
        )
    if json_output:
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    _print(host_scale_grid(report, SUPERLINEAR), View.of(wide, columns))


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
        int, typer.Option(min=0, max=MAX_MOUNT_THREADS, help="Mount worker threads (0: none).")
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
            max=MAX_MOUNT_SESSION_SPIN_US,
            help="Microseconds the mount's session thread polls for the next request "
            "before sleeping (0: none).",
        ),
    ] = 0,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """fio on the FUSE mount against the native client and against the local disk."""
    from benchfs.bench.mount import MountBenchSettings, run_mount_bench
    from benchfs.mount.settings import MountSettings

    settings = MountBenchSettings(
        seq_bytes_per_job=_size(seq_size, "--seq-size"),
        small_ops=small_ops,
        rounds=rounds,
        mount=MountSettings.checked(threads=threads, session_spin_us=session_spin),
    )
    with err_console.status("starting") as progress:
        report = run_mount_bench(directory, settings, on_step=lambda s: progress.update(s))
    if json_output:
        typer.echo(json.dumps(report.to_dict(), indent=2))
        return
    _print(mount_grid(report), View.of(wide, columns))
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
