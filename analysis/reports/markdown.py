"""Render a Report as GitHub-flavoured Markdown."""

from __future__ import annotations

from pathlib import Path

from analysis.reports.columns import display_frame
from analysis.reports.model import Report, Table


def render_markdown(report: Report, base: Path | None = None) -> str:
    """Markdown text; figure paths are written relative to ``base`` when given."""
    lines = [f"# {report.title}", ""]
    for section in report.sections:
        lines += [f"## {section.title}", ""]
        for paragraph in section.paragraphs:
            lines += [paragraph, ""]
        if section.bullets:
            lines += [f"- {bullet}" for bullet in section.bullets] + [""]
        for table in section.tables:
            lines += [*markdown_table(table), ""]
        for figure in section.figures:
            path = (
                figure.path.relative_to(base) if base and figure.path.is_absolute() else figure.path
            )
            lines += [f"![{figure.caption}]({path.as_posix()})", ""]
    return "\n".join(lines).rstrip() + "\n"


def markdown_table(table: Table) -> list[str]:
    rows = display_frame(table.frame)
    lines = [f"**{table.caption}**", ""]
    if len(rows) == 1:
        return [*lines, "(no rows)"]
    escaped = [[text.replace("|", "\\|") for text in row] for row in rows]
    lines.append("| " + " | ".join(escaped[0]) + " |")
    lines.append("|" + "|".join("---" for _ in escaped[0]) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in escaped[1:]]
    return lines
