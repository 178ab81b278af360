"""User text (node specs, paths, names) prints as given: no emoji codes, no
rich markup taken from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rich.table import Table

from benchfs.cli.console import cell, make_console, plain


def test_an_error_with_an_emoji_code_prints_as_given(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "run", "--nodes", "local:x:", "--results-dir",
         str(tmp_path / "r")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: --nodes local:x:: local node count must be a positive integer, got 'x:'"
    ]


def test_markup_in_user_text_is_shown_not_applied() -> None:
    console = make_console()
    with console.capture() as captured:
        console.print(f"[bold]label:[/] {plain('[red]n1[/red] :x:')}")
        table = Table()
        table.add_column("node")
        table.add_row(cell("[blink]n2 :smiley:"))
        console.print(table)
    text = captured.get()
    assert "label: [red]n1[/red] :x:" in text
    assert "[blink]n2 :smiley:" in text
