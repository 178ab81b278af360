"""What every table of the command promises in a terminal of a given width:
no line wider than it, nothing cut (no ellipsis), every figure and every
header word whole on one line."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.cells import cell_len

ELLIPSIS = "…"


def whole_on_a_line(output: str, text: str) -> bool:
    """``text`` appears on one line of ``output``, not inside a longer token
    (a sentence's comma or bracket may follow it)."""
    pattern = re.compile(rf"(?<![^\s(]){re.escape(text)}(?=\s|$|[,;)](?:\s|$))")
    return any(pattern.search(line) for line in output.splitlines())


def assert_fits(
    output: str, width: int, figures: Iterable[str] = (), headers: Iterable[str] = ()
) -> None:
    wide = [line for line in output.splitlines() if cell_len(line.rstrip()) > width]
    assert not wide, f"lines wider than {width}:\n" + "\n".join(wide)
    assert ELLIPSIS not in output, f"something was cut to fit {width} columns:\n{output}"
    cut = [figure for figure in figures if not whole_on_a_line(output, figure)]
    assert not cut, f"figures not whole at {width} columns: {cut}\n{output}"
    words = [word for header in headers for word in header.split()]
    missing = [word for word in words if not whole_on_a_line(output, word)]
    assert not missing, f"header words cut at {width} columns: {missing}\n{output}"
