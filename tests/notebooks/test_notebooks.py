"""Execute every analysis notebook against a results directory built from real output."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from analysis_support import REPO, build_run, fio_text, iostat_text, run_dir
from nbclient import NotebookClient

__all__ = ["fio_text", "iostat_text", "run_dir"]  # fixtures used below

NOTEBOOKS = REPO / "notebooks"


def _execute(name: str, tmp_path: Path) -> nbformat.NotebookNode:
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(book, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # fmt: skip
    return book


def _text(book: nbformat.NotebookNode) -> str:
    parts = []
    for cell in book.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


@pytest.fixture
def notebook_env(monkeypatch: pytest.MonkeyPatch, run_dir: Path) -> Path:
    # the kernel inherits this environment: the run to open, and this source tree
    monkeypatch.setenv("BENCHFS_RUN_DIR", str(run_dir))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    return run_dir


def test_every_notebook_has_the_parameter_first() -> None:
    books = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert [book.name for book in books] == [
        "io_depth.ipynb", "latency_and_nodes.ipynb", "run_comparison.ipynb",
    ]  # fmt: skip
    for path in books:
        book = nbformat.read(path, as_version=4)
        first_code = next(cell for cell in book.cells if cell.cell_type == "code")
        assert "run_dir = " in first_code.source and "BENCHFS_RUN_DIR" in first_code.source
        assert all(not cell.get("outputs") for cell in book.cells if cell.cell_type == "code")


def test_io_depth_notebook(notebook_env: Path, tmp_path: Path) -> None:
    text = _text(_execute("io_depth.ipynb", tmp_path))
    assert "mean io_depth (SQEs)" in text and "129-512" in text
    assert (notebook_env / "plots" / "io_depth_hist.png").is_file()


def test_latency_and_nodes_notebook(notebook_env: Path, tmp_path: Path) -> None:
    text = _text(_execute("latency_and_nodes.ipynb", tmp_path))
    slow = "slow nodes (over 100 ms or far above the rest): node03 (slow from the start to the end)"
    assert slow in text
    assert "read_write_ratio" in text
    assert (notebook_env / "plots" / "node_heatmap.png").is_file()


def test_run_comparison_notebook(
    notebook_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    iostat_text: str, fio_text: str,
) -> None:  # fmt: skip
    other = build_run(tmp_path / "b", iostat_text, fio_text, slow_nodes=(), bw=2000.0)
    monkeypatch.setenv("BENCHFS_RUN_DIR_B", str(other))
    text = _text(_execute("run_comparison.ipynb", tmp_path))
    assert "bwMeanMIB" in text and "slow nodes (count)" in text
    assert "same effective configuration" in text
    # one repetition per run: the verdicts say so, and the method is stated
    assert "no noise estimate (1 repetition)" in text
    assert "exact two-sided Mann-Whitney U" in text and "seed 0" in text
