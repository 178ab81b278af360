"""Tables that fit the terminal they are printed to, without cutting a figure or a name.

Every table of the ``benchfs`` command goes through here. Describe it as a
``Grid`` of plain strings and print it::

    grid = Grid("write on BenchFS native client", [
        Column("phase", key=True),            # repeated in every part, never cut
        Column("bw (MiB/s)"),                 # a figure: as wide as its widest cell
        Column("p99.9 (ms)", wide=True),      # shown with --wide (or --columns)
        Column("flagged", kind=TEXT),         # words: wraps between them
    ])
    grid.add_row("write", "1,234", "0.42", "r_await 3x the median")
    print_grid(console, grid, View.of(wide, columns))

A command offers ``WideOption`` and ``ColumnsOption``, passes both to
``View.of`` and calls ``view.check()`` once its tables are printed. What
``fit`` does, until the table fits ``console.width``:

1. the ``wide`` columns are left out (unless ``--wide``, or named in
   ``--columns``, which shows the key columns and those it names; a table
   without any of them shows its default columns); a note under the table
   names the columns left out and the option that shows them;
2. a figure or name column is exactly as wide as its widest cell, and its
   header wraps between words, never inside one; text columns share what
   is left and wrap between words; two spaces between columns, or one
   where two would not fit;
3. a grid with ``transpose=True`` whose columns do not fit in one table
   (or that has one row) is turned so that each row becomes a column (one
   column per phase) when that fits;
4. otherwise the columns that do not fit move to further tables, each
   repeating the key columns: a figure is never shortened.

With ``lift_constant``, a column holding one value in every row is said
once under the title instead ("same in every row: verdict = ...").
``Column.kind`` defaults to ``infer``: a column whose every cell reads as
a figure (digits, signs, separators, units such as ``x`` or ``%``, ranges
such as ``0.97-1.05``) is a ``FIGURE`` (right-aligned), otherwise a
``NAME`` (left-aligned, kept on one line). ``fit`` returns the tables,
their headings and the notes, for a ``Live`` display or anything that is
not a plain print.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Literal

import typer
from rich import box
from rich.align import Align
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from benchfs.cli.console import cell

Kind = Literal["figure", "name", "text", "infer"]
FIGURE: Kind = "figure"
NAME: Kind = "name"
TEXT: Kind = "text"

# Spaces between columns: two, or one where two would split the table.
GAPS = (2, 1)
# The narrowest a text column is squeezed to (or its longest word, if longer).
MIN_TEXT = 12
# A figure, a range or a ratio of two: "1,234", "-0.5%", "> 1,000", "0.97-1.05", "-2 .. +8", "5/5".
_NUMBER = r"[-+<>=~]?\s*\d[\d.,]*(?:[eE][-+]?\d+)?(?:\s*(?:x|%|k|M|G|us|ms|s))?"
_FIGURE = re.compile(rf"^{_NUMBER}(?:\s*(?:\.\.|-|/)\s*{_NUMBER})?$")

WideOption = Annotated[
    bool, typer.Option("--wide", help="Show every column (tables split to fit the terminal).")
]
ColumnsOption = Annotated[
    str | None,
    typer.Option(
        "--columns", help="Comma-separated columns to show (by header), after the key columns."
    ),
]


@dataclass(frozen=True)
class Column:
    header: str
    kind: Kind = "infer"
    key: bool = False  # names the row: shown in every part of a split table
    wide: bool = False  # only with --wide or --columns


@dataclass
class Grid:
    title: str
    columns: list[Column]
    rows: list[list[str | Text]] = field(default_factory=list)
    caption: str = ""
    transpose: bool = False  # one column per row, when that fits and the other way does not
    lift_constant: bool = False  # a column with one value in every row is said under the title

    def add_row(self, *cells: str | Text) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    @classmethod
    def of(
        cls,
        title: str,
        headers: Sequence[str],
        rows: Sequence[Sequence[str]],
        *,
        keys: int = 1,
        wide: Sequence[str] = (),
        texts: Sequence[str] = (),
        caption: str = "",
        transpose: bool = False,
        lift_constant: bool = False,
    ) -> Grid:
        """A grid of ``headers`` and ``rows`` (strings); the first ``keys``
        columns name the rows, the headers in ``wide`` wait for --wide, those
        in ``texts`` hold words that may wrap; the others' kinds are inferred."""
        columns = [
            Column(header, TEXT if header in texts else "infer", index < keys, header in wide)
            for index, header in enumerate(headers)
        ]
        return cls(title, columns, [list(row) for row in rows], caption, transpose, lift_constant)


@dataclass
class View:
    """What the user asked for: every column, or the named ones. A command
    that prints several tables shows in each the named columns it has, and
    calls ``check`` at its end: a name no table had is an error."""

    wide: bool = False
    columns: tuple[str, ...] | None = None
    hint: str = "--wide"
    offered: dict[str, str] = field(default_factory=dict)  # casefolded -> header
    matched: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, wide: bool = False, columns: str | None = None) -> View:
        names = None if columns is None else tuple(c.strip() for c in columns.split(",") if c)
        return cls(wide=wide, columns=names)

    def check(self) -> None:
        """Raise for a name in --columns that no table printed had."""
        unknown = [name for name in self.columns or () if name.casefold() not in self.matched]
        if unknown:
            known = ", ".join(self.offered.values()) or "none"
            raise typer.BadParameter(
                f"no column {unknown[0]!r}; columns: {known}", param_hint="--columns"
            )


@dataclass(frozen=True)
class Fitted:
    """What shows a grid, in order: each part's heading lines (the title, what
    every row shares) and its table, then the notes."""

    parts: list[tuple[list[str], Table]]
    notes: list[str]

    @property
    def tables(self) -> list[Table]:
        return [table for _, table in self.parts]

    def renderables(self) -> list[RenderableType]:
        shown: list[RenderableType] = []
        for heading, table in self.parts:
            shown += [Text(line, style="bold") for line in heading]
            shown.append(table)
        return shown + [Text(note, style="dim") for note in self.notes]


def print_grid(console: Console, grid: Grid, view: View | None = None) -> None:
    """Print ``grid`` as one or more tables that fit ``console``, then its notes."""
    for renderable in fit(grid, console.width, view or View()).renderables():
        console.print(renderable)
    console.print()


def fit(grid: Grid, width: int, view: View | None = None) -> Fitted:
    """The tables and notes that show ``grid`` within ``width`` columns."""
    view = view or View()
    shown, hidden = _choose(grid, view)
    grid = _typed(replace(grid, columns=[grid.columns[i] for i in shown],
                          rows=[[row[i] for i in shown] for row in grid.rows]))  # fmt: skip
    shared = ""
    if grid.lift_constant and len(grid.rows) > 1:
        grid, shared = _lifted(grid)
    notes = []
    if hidden:
        notes.append(f"{len(hidden)} more column(s) with {view.hint}: {', '.join(hidden)}")
    gap, parts = _parts(grid, width)
    # One row reads better as a list of (header, value), and so do a few rows
    # whose columns do not fit side by side.
    if grid.transpose and (len(parts) > 1 or len(grid.rows) == 1) and grid.rows:
        turned = _typed(_transposed(grid))
        turned_gap, turned_parts = _parts(turned, width)
        if len(turned_parts) == 1:
            grid, gap, parts = turned, turned_gap, turned_parts
    fitted = []
    for index, part in enumerate(parts):
        title = grid.title if len(parts) == 1 else f"{grid.title} ({index + 1} of {len(parts)})"
        heading = [line for line in (title, shared if index == 0 else "") if line]
        caption = grid.caption if index == len(parts) - 1 else ""
        fitted.append((heading, _table(grid, part, width, gap, caption)))
    return Fitted(fitted, notes)


def _choose(grid: Grid, view: View) -> tuple[list[int], list[str]]:
    """Indices of the columns to show, and the headers left out."""
    keys = [i for i, column in enumerate(grid.columns) if column.key]
    if view.columns is not None:
        by_name = {column.header.casefold(): i for i, column in enumerate(grid.columns)}
        view.offered.update(
            {column.header.casefold(): column.header for column in grid.columns if not column.key}
        )
        named = [by_name[n.casefold()] for n in view.columns if n.casefold() in by_name]
        view.matched.update(n.casefold() for n in view.columns if n.casefold() in by_name)
        chosen = [i for i in dict.fromkeys(named) if i not in keys]
        if chosen:
            return keys + chosen, []
    if view.wide:
        return list(range(len(grid.columns))), []
    shown = [i for i, column in enumerate(grid.columns) if not column.wide]
    hidden = [column.header for column in grid.columns if column.wide]
    return shown, hidden


def _lifted(grid: Grid) -> tuple[Grid, str]:
    """``grid`` without the columns that hold one value in every row, and the
    line that says them once."""
    same = [
        i
        for i, column in enumerate(grid.columns)
        if not column.key and len({_plain(row[i]) for row in grid.rows}) == 1
    ]
    if not same:
        return grid, ""
    said = ", ".join(f"{grid.columns[i].header} = {_plain(grid.rows[0][i])}" for i in same)
    keep = [i for i in range(len(grid.columns)) if i not in same]
    lifted = replace(
        grid,
        columns=[grid.columns[i] for i in keep],
        rows=[[row[i] for i in keep] for row in grid.rows],
    )
    return lifted, f"same in every row: {said}"


def _typed(grid: Grid) -> Grid:
    """``grid`` with every ``infer`` column given its kind from its cells."""
    columns = []
    for index, column in enumerate(grid.columns):
        if column.kind == "infer":
            cells = [_plain(row[index]) for row in grid.rows]
            figures = [text for text in cells if text not in ("", "-")]
            kind: Kind = FIGURE if figures and all(map(_FIGURE.match, figures)) else NAME
            column = replace(column, kind=kind)
        columns.append(column)
    return replace(grid, columns=columns)


def _plain(cell: str | Text) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _least(grid: Grid, index: int) -> int:
    """The narrowest column ``index`` may be: its widest cell (or, for text, its
    longest word), and its header's longest word."""
    column = grid.columns[index]
    cells = [_plain(row[index]) for row in grid.rows]
    words = column.header.split() or [""]
    if column.kind == TEXT:
        longest = max((cell_len(w) for text in cells for w in text.split()), default=0)
        least = max(min(MIN_TEXT, _whole(grid, index)), longest)
    else:
        least = max((cell_len(text) for text in cells), default=0)
    return max(least, *map(cell_len, words))


def _whole(grid: Grid, index: int) -> int:
    """Column ``index`` on one line: its widest cell or its whole header."""
    cells = [cell_len(_plain(row[index])) for row in grid.rows]
    return max(cell_len(grid.columns[index].header), *cells, 0)


def _span(widths: Sequence[int], gap: int) -> int:
    return sum(widths) + gap * max(len(widths) - 1, 0)


def _parts(grid: Grid, width: int) -> tuple[int, list[list[int]]]:
    """The widest gap between columns that keeps the table whole, and its parts."""
    for gap in GAPS:
        parts = _split(grid, width, gap)
        if len(parts) == 1:
            break
    return gap, parts


def _split(grid: Grid, width: int, gap: int) -> list[list[int]]:
    """The columns of each table: the keys, then as many of the others as fit."""
    keys = [i for i, column in enumerate(grid.columns) if column.key]
    others = [i for i in range(len(grid.columns)) if i not in keys]
    least = {i: _least(grid, i) for i in range(len(grid.columns))}
    parts: list[list[int]] = []
    current = list(keys)
    for index in others:
        if current != keys and _span([least[i] for i in [*current, index]], gap) > width:
            parts.append(current)
            current = list(keys)
        current.append(index)
    if current != keys or not parts:
        parts.append(current)
    return parts


def _transposed(grid: Grid) -> Grid:
    """One row per column of ``grid`` and one column per row, named by its keys."""
    keys = [i for i, column in enumerate(grid.columns) if column.key]
    names = [" ".join(_plain(row[i]) for i in keys if _plain(row[i])) for row in grid.rows]
    corner = " ".join(grid.columns[i].header for i in keys)  # what names the columns now
    # A column now holds every kind of cell: words wrap if any were words.
    kind = TEXT if any(column.kind == TEXT for column in grid.columns) else FIGURE
    columns = [Column(corner, kind=NAME, key=True), *(Column(n, kind=kind) for n in names)]
    rows: list[list[str | Text]] = [
        [column.header, *(row[index] for row in grid.rows)]
        for index, column in enumerate(grid.columns)
        if index not in keys
    ]
    return Grid(grid.title, columns, rows, grid.caption)


def _table(grid: Grid, part: list[int], width: int, gap: int, caption: str) -> Table:
    table = Table(
        caption=caption or None,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        # The box's divider is one space; the padding right of each column adds the rest.
        padding=(0, gap - 1, 0, 0),
        caption_justify="left",
        show_header=any(grid.columns[i].header for i in part),
    )
    widths = {i: _least(grid, i) for i in part}
    # Text columns grow into what is left, up to their whole length.
    texts = [i for i in part if grid.columns[i].kind == TEXT]
    spare = width - _span(list(widths.values()), gap)
    for i in texts:
        grow = min(max(spare, 0) // max(len(texts), 1), _whole(grid, i) - widths[i])
        widths[i] += max(grow, 0)
    # The others take their whole header on one line where there is room, the
    # cheapest first: more headers read whole.
    for i in sorted(part, key=lambda i: _whole(grid, i) - widths[i]):
        need = _whole(grid, i) - widths[i]
        if grid.columns[i].kind != TEXT and 0 < need <= width - _span(list(widths.values()), gap):
            widths[i] += need
    for i in part:
        column = grid.columns[i]
        justify: Literal["left", "right"] = "right" if column.kind == FIGURE else "left"
        table.add_column(
            # A header wrapped over lines sits on the rule, beside the others' last line.
            Align(Text(column.header, justify=justify), justify, vertical="bottom"),
            justify=justify,
            width=widths[i],
            # Cells fit their width (text wraps between words), headers wrap between
            # words; folding is left for a single word wider than the terminal.
            overflow="fold",
        )
    for row in grid.rows:
        table.add_row(*(cell(row[i]) for i in part))  # user text is never markup
    return table
