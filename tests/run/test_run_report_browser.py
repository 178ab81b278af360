"""A real run's report.html in a real browser: headless Chromium lays it out
at laptop width (1366x768) and takes a screenshot; the page leads with the
title (label, target, date), the findings, the headline table and the
nodes, and keeps the manifest and the configuration folded away at the end.
What is asserted is the page's DOM as Chromium built it, never its pixels."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from run_helpers import benchfs_run, run_dirs, small_args

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(400),
    pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium (make system)"),
]

LAPTOP = (1366, 768)


class Outline(HTMLParser):
    """The page as a list of (tag, id, text, inside a closed <details>) in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[str, str, str, bool]] = []
        self.stack: list[tuple[str, str]] = []
        self.folded = 0  # depth of <details> elements that are not open
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag == "details" and "open" not in names:
            self.folded += 1
        self.stack.append((tag, names.get("id") or ""))
        self.text = []

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            open_tag, ident = self.stack.pop()
            if open_tag in ("h1", "h2", "caption", "th", "section"):
                text = " ".join("".join(self.text).split())
                self.items.append((open_tag, ident, text, self.folded > 0))
            if open_tag == "details" and self.folded:
                self.folded -= 1
            if open_tag == tag:
                break
        if tag in ("h1", "h2", "caption", "th"):
            self.text = []

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={LAPTOP[0]},{LAPTOP[1]}", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is no PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_html_report_leads_with_the_answer_at_laptop_width(tmp_path: Path) -> None:
    done = benchfs_run(small_args(tmp_path, "--label", "laptop", "--verify"), timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    page = run_dir / "report.html"

    shot = tmp_path / "report.png"
    taken = _chromium(f"--screenshot={shot}", page.as_uri())
    assert shot.is_file(), taken.stderr
    assert _png_size(shot) == LAPTOP

    dumped = _chromium("--dump-dom", page.as_uri())
    assert dumped.returncode == 0, dumped.stderr
    outline = Outline()
    outline.feed(dumped.stdout)
    items = outline.items

    (title,) = [text for tag, _, text, _ in items if tag == "h1"]
    assert re.fullmatch(r"BenchFS run laptop: BenchFS native client, \d{4}-\d\d-\d\d \d\d:\d\d UTC",
                        title), title  # fmt: skip
    sections = [ident for tag, ident, _, _ in items if tag == "section"]
    # Sections close in document order, so their ids are in the page's order too.
    assert sections[:3] == ["findings", "results", "nodes"], sections
    assert sections[-2:] == ["run-manifest", "run-effective-configuration"], sections
    folded = {text for tag, _, text, hidden in items if tag == "caption" and hidden}
    assert folded == {"Manifest", "Effective configuration"}  # in closed <details>

    def position(tag: str, text: str) -> int:
        return next(i for i, item in enumerate(items) if item[0] == tag and item[2] == text)

    headline = position("caption", "Each phase: bandwidth or rate, time, latency, stonewall, "
                        "verification")  # fmt: skip
    headers = [text for tag, _, text, _ in items[headline:] if tag == "th"][:7]
    assert headers == ["phase", "bw (MiB/s)", "time (s)", "p50 (ms)", "p99 (ms)", "stonewalled",
                       "verified"]  # fmt: skip
    order = [
        position("h1", title),
        position("h2", "Findings"),
        headline,
        position("h2", "Nodes"),
        position("caption", "Per node, worst first (slow = over the threshold)"),
        position("h2", "Every figure of each phase"),
        position("caption", "Manifest"),
        position("caption", "Effective configuration"),
    ]
    assert order == sorted(order), order

    markdown = (run_dir / "report.md").read_text()
    headings = re.findall(r"^## (.+)$", markdown, re.M)
    assert headings[:3] == ["Findings", "Results", "Nodes"]
    assert headings[-2:] == ["Run: manifest", "Run: effective configuration"]
    assert markdown.startswith(f"# {title}\n")
    read_row = re.search(r"^\| read \| .*$", markdown.split("## Nodes")[0], re.M)
    assert read_row is not None and read_row[0].endswith(
        "| no | yes |"
    )  # not stonewalled, verified
