"""`benchfs run`: deploy the file system on the nodes, run the IOR-style
workload, and leave a results directory (see benchfs.run.orchestrate)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from benchfs.cli.tables import ColumnsOption, View, WideOption
from benchfs.cluster.lifecycle import Lifecycle, Terminated
from benchfs.cluster.private import private_umask
from benchfs.config.plan import apply_overrides, load_config
from benchfs.errors import ConfigError


def _overrides(
    sets: list[str] | None, options: dict[str, str | int | bool | None]
) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for item in sets or []:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ConfigError(f"--set {item}: expected KEY=VALUE (e.g. workload.transfer_size=1m)")
        overrides[key.strip()] = value.strip()
    for name, given in options.items():
        if given is not None:
            overrides[name] = given
    return overrides


def run(
    nodes: Annotated[
        str | None,
        typer.Option(
            "--nodes",
            help="Hostfile (OpenMPI, MPICH or plain list), 'slurm', 'pbs' or 'local[:N]'. "
            "Default: the embedded local cluster.",
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="Run config (TOML); lists make a sweep.")
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="Set a config key: --set workload.transfer_size=1m."),
    ] = None,
    transfer_size: Annotated[
        str | None, typer.Option("--transfer-size", help="Bytes per I/O (IOR -t), e.g. 1m.")
    ] = None,
    block_size: Annotated[
        str | None, typer.Option("--block-size", help="Bytes per rank and segment (IOR -b).")
    ] = None,
    segments: Annotated[int | None, typer.Option("--segments", help="Segments (IOR -s).")] = None,
    tasks_per_node: Annotated[
        int | None, typer.Option("--tasks-per-node", help="Workload ranks per node.")
    ] = None,
    api: Annotated[
        str | None,
        typer.Option("--api", help="file-per-process (IOR -F) or shared (one file)."),
    ] = None,
    verify: Annotated[
        bool | None, typer.Option("--verify/--no-verify", help="Check the data read (IOR -R).")
    ] = None,
    queue_depth: Annotated[
        str | None,
        typer.Option(
            "--queue-depth",
            help="Transfers in flight per rank: 1 as IOR's POSIX backend; 1,16 sweeps.",
        ),
    ] = None,
    repetitions: Annotated[
        int | None, typer.Option("--repetitions", help="Repetitions (IOR -i).")
    ] = None,
    interface: Annotated[
        str | None,
        typer.Option(
            "--interface",
            help="How ranks reach BenchFS: native (its client) or mount (FUSE on every node).",
        ),
    ] = None,
    metadata: Annotated[
        str | None,
        typer.Option("--metadata", help="Metadata phases (mdtest): off, with-data or only."),
    ] = None,
    metadata_items: Annotated[
        int | None,
        typer.Option("--metadata-items", help="Files or directories per rank (mdtest -n)."),
    ] = None,
    metadata_kind: Annotated[
        str | None,
        typer.Option(
            "--metadata-kind",
            help="Metadata items: files (mdtest -F), dirs (-D) or both (directories first).",
        ),
    ] = None,
    metadata_tree_depth: Annotated[
        int | None,
        typer.Option(
            "--metadata-tree-depth", help="Levels of directories below each rank's (mdtest -z)."
        ),
    ] = None,
    metadata_branch_factor: Annotated[
        int | None,
        typer.Option(
            "--metadata-branch-factor", help="Subdirectories of each tree directory (mdtest -b)."
        ),
    ] = None,
    suite: Annotated[
        str | None,
        typer.Option("--suite", help="A whole suite instead: io500 or io500-quick (suite.name)."),
    ] = None,
    label: Annotated[str | None, typer.Option("--label", help="Results directory label.")] = None,
    results_dir: Annotated[
        str | None, typer.Option("--results-dir", help="Where results directories go.")
    ] = None,
    transport: Annotated[str | None, typer.Option("--transport", help="auto, shm or tcp.")] = None,
    exclude_slow: Annotated[
        bool | None,
        typer.Option("--exclude-slow/--no-exclude-slow", help="Leave out nodes found slow."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the summary as JSON on stdout; logs on stderr.")
    ] = False,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """Start the daemons, run the IOR-style workload (and the mdtest-style one, with
    --metadata), or a whole suite (--suite io500), stop everything, keep the results."""
    private_umask()  # results, scratch, registry and data: this user's only
    plan = load_config(config)
    overrides = _overrides(
        sets,
        {
            "workload.transfer_size": transfer_size,
            "workload.block_size": block_size,
            "workload.segments": None if segments is None else str(segments),
            "workload.tasks_per_node": None if tasks_per_node is None else str(tasks_per_node),
            "workload.api": api,
            "workload.verify": verify,
            "workload.repetitions": None if repetitions is None else str(repetitions),
            "workload.queue_depth": queue_depth,
            "workload.interface": interface,
            "metadata.mode": metadata,
            "metadata.items": None if metadata_items is None else str(metadata_items),
            "metadata.kind": metadata_kind,
            "metadata.tree_depth": None
            if metadata_tree_depth is None
            else str(metadata_tree_depth),
            "metadata.branch_factor": (
                None if metadata_branch_factor is None else str(metadata_branch_factor)
            ),
            "suite.name": suite,
            "output.label": label,
            "output.results_dir": results_dir,
            "cluster.transport": transport,
            "preflight.exclude_slow": exclude_slow,
        },
    )
    if overrides:
        plan = apply_overrides(plan, overrides)
    # Imported here: the orchestration pulls in numpy and pandas, which the
    # other commands (`benchfs daemon`, `benchfs --version`) do not need.
    from benchfs.cli.run_display import ConsoleObserver, err_console, print_results
    from benchfs.run.orchestrate import run_plan

    observer = ConsoleObserver()
    try:
        # SIGTERM and SIGHUP unwind as Terminated from the first step to the last report.
        with Lifecycle():
            results = run_plan(
                plan, nodes_spec=nodes, command_line=["benchfs", *sys.argv[1:]], observer=observer
            )
    except (Exception, KeyboardInterrupt, Terminated) as error:
        # benchfs.cli.main then says what stopped the run, in one line.
        if observer.run_dir is not None:
            ended = "failed" if isinstance(error, Exception) else "interrupted"
            err_console.print(
                f"results ({ended} run): {escape(str(observer.run_dir))}", highlight=False
            )
        raise
    print_results(results, json_output, View.of(wide, columns))
