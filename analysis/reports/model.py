"""A report as plain data: sections of paragraphs, tables and figures.

Builders fill it; the Markdown and HTML renderers only lay it out, so both
formats always say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Table:
    caption: str
    frame: pd.DataFrame


@dataclass(frozen=True)
class Figure:
    caption: str
    path: Path  # the PNG, relative paths are relative to the report's directory


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    # Reference material (manifest, configuration): folded away in HTML, last in both.
    collapsed: bool = False


@dataclass
class Report:
    title: str
    sections: list[Section] = field(default_factory=list)

    def section(self, title: str, *, collapsed: bool = False) -> Section:
        section = Section(title, collapsed=collapsed)
        self.sections.append(section)
        return section
