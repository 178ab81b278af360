"""Render a Report as one self-contained HTML file (plots embedded as base64 PNG)."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from analysis.reports.columns import display_frame
from analysis.reports.model import Report, Table

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td { text-align: right; } td:first-child { text-align: left; }
th { background: #f0f0f0; }
caption { font-weight: bold; text-align: left; padding-bottom: 0.3em; }
img { max-width: 100%; border: 1px solid #ddd; }
li { margin: 0.2em 0; }
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
        parts.append(f"<h2>{escape(section.title)}</h2>")
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
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def html_table(table: Table) -> str:
    rows = display_frame(table.frame)
    head = "".join(f"<th>{escape(text)}</th>" for text in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(text)}</td>" for text in row) + "</tr>" for row in rows[1:]
    )
    return f"<table><caption>{escape(table.caption)}</caption><tr>{head}</tr>{body}</table>"
