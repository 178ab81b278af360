"""Render a Report as one self-contained HTML file (plots embedded as base64 PNG)."""

from __future__ import annotations

import base64
import re
from html import escape
from pathlib import Path

from analysis.reports.columns import display_frame
from analysis.reports.model import Report, Table

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td { text-align: right; } td:first-child { text-align: left; }
th { background: #f0f0f0; }
caption { font-weight: bold; text-align: left; padding-bottom: 0.3em; }
img { max-width: 100%; border: 1px solid #ddd; }
li { margin: 0.2em 0; }
.table { overflow-x: auto; }
details { margin: 1em 0; } summary h2 { display: inline; cursor: pointer; }
"""


def render_html(report: Report, base: Path | None = None) -> str:
    """HTML text; figures are read from disk (relative to ``base``) and embedded."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(report.title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(report.title)}</h1>",
    ]
    for section in report.sections:
        heading = f"<h2>{escape(section.title)}</h2>"
        parts.append(f'<section id="{_slug(section.title)}">')
        # Reference material is folded away: the answer comes first, the manifest on request.
        parts.append(f"<details><summary>{heading}</summary>" if section.collapsed else heading)
        parts += [f"<p>{escape(paragraph)}</p>" for paragraph in section.paragraphs]
        if section.bullets:
            items = "".join(f"<li>{escape(bullet)}</li>" for bullet in section.bullets)
            parts.append(f"<ul>{items}</ul>")
        parts += [html_table(table) for table in section.tables]
        for figure in section.figures:
            path = figure.path if figure.path.is_absolute() or base is None else base / figure.path
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            parts.append(
                f'<figure><img alt="{escape(figure.caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{escape(figure.caption)}</figcaption></figure>"
            )
        parts.append("</details></section>" if section.collapsed else "</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def html_table(table: Table) -> str:
    rows = display_frame(table.frame)
    head = "".join(f"<th>{escape(text)}</th>" for text in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(text)}</td>" for text in row) + "</tr>" for row in rows[1:]
    )
    caption = f"<caption>{escape(table.caption)}</caption>"
    # Wide tables scroll inside their box; the page itself keeps the window's width.
    return f'<div class="table"><table>{caption}<tr>{head}</tr>{body}</table></div>'


def _slug(title: str) -> str:
    """An id for a section: its title in lower case, words joined by dashes."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
