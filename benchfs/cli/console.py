"""The consoles of the ``benchfs`` command, and user text on them.

Text that comes from the user or from files (paths, node names, labels,
error messages) must print as it is: ``--nodes local:x:`` must not become an
emoji, nor ``[red]`` in a node name a style. The consoles never replace
``:name:`` codes, and ``plain`` escapes markup in one piece of such text.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.text import Text


def make_console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, emoji=False)


def plain(value: object) -> str:
    """``value`` as text with rich markup escaped (for an f-string with markup)."""
    return escape(str(value))


def cell(value: object) -> Text:
    """A table cell that is shown exactly as given."""
    return value if isinstance(value, Text) else Text(str(value))
