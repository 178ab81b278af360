"""Every notebook, executed against results directories that `benchfs run` just wrote."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from analysis_support import REPO
from nbclient import NotebookClient
from run_helpers import benchfs_run, run_dirs, small_args

from analysis.loaders.run import load_run
from analysis.stats.rpc import rpc_load_by_target, rpc_phases

NOTEBOOKS = REPO / "notebooks"


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A sweep of two transfer sizes on the local cluster: two results directories."""
    tmp = tmp_path_factory.mktemp("real-run")
    sweep = tmp / "sweep.toml"
    sweep.write_text('[workload]\ntransfer_size = ["64k", "256k"]\n')
    args = small_args(tmp)
    at = args.index("--transfer-size")
    del args[at : at + 2]  # the sweep sets it
    done = benchfs_run([*args, "--config", str(sweep)])
    assert done.returncode == 0, done.stderr
    first, second = run_dirs(tmp / "results")
    return first, second


def _execute(name: str, cwd: Path) -> str:
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(book, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()  # fmt: skip
    return "\n".join(
        output.get("text", "") + output.get("data", {}).get("text/plain", "")
        for cell in book.cells
        for output in cell.get("outputs", [])
    )


@pytest.mark.parametrize(
    ("name", "expected", "plot"),
    [
        ("io_depth.ipynb", "mean io_depth (SQEs)", "io_depth_hist.png"),
        ("latency_and_nodes.ipynb", "read_write_ratio", "node_heatmap.png"),
        ("run_comparison.ipynb", "bwMeanMIB", None),
    ],
)
def test_notebook_on_a_real_run(
    real_runs: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    name: str,
    expected: str,
    plot: str | None,
) -> None:
    first, second = real_runs
    monkeypatch.setenv("BENCHFS_RUN_DIR", str(first))
    monkeypatch.setenv("BENCHFS_RUN_DIR_B", str(second))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    text = _execute(name, tmp_path)
    assert expected in text
    if plot is not None:
        assert (first / "plots" / plot).is_file()


def test_rpc_statistics_of_a_real_run(real_runs: tuple[Path, Path]) -> None:
    first, _ = real_runs
    run = load_run(first)
    assert run.traces is not None and run.iostat is not None and len(run.iostat) > 0
    client, server = run.traces.kind("rpc_client"), run.traces.kind("rpc_server")
    phases = rpc_phases(client, server).set_index("phase")
    for phase in ("client send", "client wait", "server queue", "server storage", "reply"):
        assert phases.loc[phase, "count"] > 0, phase
    # Every daemon served requests; the daemons served both points of the sweep.
    load = rpc_load_by_target(client, all_nodes=run.traces.server_nodes)
    assert sorted(load["target"]) == [f"local{i}" for i in range(4)]
    assert (load["requests"] > 0).all()
    assert len(server) >= len(client) > 0
