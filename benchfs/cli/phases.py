"""`benchfs analyze phases`: the phase tables of tool outputs or results directories.

A thin command over analysis.sources.results; analysis/ is imported inside
the command so that other commands start without pandas.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from benchfs.cli.analyze import AllowPartial, Csv, _show, err_console
from benchfs.cli.tables import ColumnsOption, View, WideOption

PathsArgument = Annotated[
    list[Path],
    typer.Argument(
        help="Results directories, directories of IOR/mdtest/fio outputs, or output files."
    ),
]


def phases(
    paths: PathsArgument,
    csv: Csv = False,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print the workload/summary.json document (phases) instead."),
    ] = False,
    ranks: Annotated[bool, typer.Option("--ranks", help="Also show the per-rank rows.")] = False,
    allow_partial: AllowPartial = False,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """Data and metadata phases (IOR's and mdtest's names) with the tool that produced them."""
    from analysis.reports.phases import phase_tables, tool_output_tables
    from analysis.sources.results import load_phase_source

    view = View.of(wide, columns)
    documents = []
    for path in paths:
        source = load_phase_source(path, allow_partial=allow_partial)
        for note in source.notes:
            err_console.print(f"[yellow]warning:[/] {note}", highlight=False, soft_wrap=True)
        if json_output:
            documents.append({"path": str(path), **source.document})
            continue
        prefix = f"{path}: " if len(paths) > 1 else ""
        # One column per phase where the phases' figures do not fit side by side.
        for table in phase_tables(source.workload):
            _show(table.frame, prefix + table.caption, csv, view, transpose=True,
                  lift_constant=True)  # fmt: skip
        outputs = source.document.get("tool_outputs")
        for table in tool_output_tables(outputs if isinstance(outputs, list) else []):
            _show(table.frame, prefix + table.caption, csv, view, texts=("command_line",),
                  transpose=True)  # fmt: skip
        if ranks and source.ranks is not None:
            _show(source.ranks, prefix + "per-rank rows", csv, view)
    if json_output:
        value = documents[0] if len(documents) == 1 else documents
        typer.echo(json.dumps(_finite(value), indent=2))
    else:
        view.check()


def _finite(value: Any) -> Any:
    """JSON without NaN (not JSON): NaN becomes null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
