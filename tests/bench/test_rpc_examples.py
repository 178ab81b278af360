"""Where `benchfs bench rpc` gets its UCX examples (am_pingpong, core_to_core)
when none is given: from the source tree the installed package was built
from, whatever the working directory, built there by cargo on first use;
without that tree, one line says how to get them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import benchfs_native
from benchfs.errors import ToolError
from benchfs.tools.ucx_examples import build_argv, built_from, examples_dir_of, find_examples

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "benchfs_native"
needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")


def test_the_extension_says_which_source_tree_built_it() -> None:
    source = built_from()
    assert source is not None and (source / "Cargo.toml").is_file()
    assert benchfs_native.build_info()["source_dir"] == str(source)


def test_without_the_source_tree_one_line_says_how_to_get_them(tmp_path: Path) -> None:
    gone = tmp_path / "benchfs_native"
    with pytest.raises(ToolError) as caught:
        find_examples(source_dir=gone)
    message = str(caught.value)
    assert "\n" not in message
    assert message == (
        "the UCX examples am_pingpong and core_to_core are not installed with the package and "
        f"the source tree it was built from ({gone}) is not there: build them with "
        "`make examples` in a BenchFS source tree and give "
        "--examples-dir SOURCE/benchfs_native/target/release/examples"
    )
    with pytest.raises(ToolError, match=r"^.*: no am_pingpong and core_to_core there"):
        find_examples(tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(2400)
@needs_cargo
def test_built_on_first_use_with_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh cargo target directory: nothing built yet, as after `pip install` alone."""
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "target"))
    assert not (examples_dir_of(SOURCE) / "am_pingpong").exists()
    steps: list[str] = []
    found = find_examples(source_dir=SOURCE, on_step=steps.append)
    built = tmp_path / "target" / "release" / "examples"
    assert (found.am_pingpong, found.core_to_core) == (built / "am_pingpong",
                                                       built / "core_to_core")  # fmt: skip
    assert steps == [
        f"building the UCX examples am_pingpong and core_to_core once, into {built}: "
        + " ".join(build_argv(SOURCE))
    ]
    done = subprocess.run([str(found.core_to_core), "--cpus", "0,0", "--iters", "100"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "rtt_p50_ns=" in done.stdout, done.stderr
    again: list[str] = []
    assert find_examples(source_dir=SOURCE, on_step=again.append) == found and not again


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("ucx_perftest") is None, reason="ucx_perftest (ucx-utils)")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="CPUs 0 and 1")
def test_an_installed_package_runs_bench_rpc_outside_the_source_tree(tmp_path: Path) -> None:
    """The installed package (not this checkout: the command runs elsewhere) finds the
    examples of the tree it was built from, with no --examples-dir."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CARGO_TARGET_DIR")}
    where = subprocess.run(
        [sys.executable, "-c", "import benchfs; print(benchfs.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env=env, check=True,
    )  # fmt: skip
    installed = Path(where.stdout.strip())
    assert installed.parent != REPO / "benchfs" and "site-packages" in installed.parts, installed
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "bench", "rpc", "--transport", "tcp", "--rounds", "1",
         "--lat-iterations", "200", "--bw-iterations", "10"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=800,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "not found" not in done.stderr and "make examples" not in done.stderr
    assert "ratio" in done.stdout
