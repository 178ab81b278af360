"""The results directory is one contract: every file a real `benchfs run`
writes is read back by the loaders of analysis/, and nothing that is there
is reported missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_helpers import benchfs_run, needs_fio_and_iostat, run_dirs, small_args

from analysis.layout import RunLayout
from analysis.loaders.run import load_run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), needs_fio_and_iostat]
HOSTS = ["local0", "local1", "local2", "local3"]


def test_every_file_of_a_run_is_read_back(tmp_path: Path) -> None:
    args = small_args(
        tmp_path,
        "--set", "preflight.enabled=true",
        "--set", "preflight.runtime_s=1",
    )  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    paths = RunLayout(run_dir)
    made_by_the_report = paths.report_files()
    written = sorted(
        str(path.relative_to(run_dir))
        for path in run_dir.rglob("*")
        if path.is_file()
        and not any(path == made or made in path.parents for made in made_by_the_report)
    )
    run = load_run(run_dir)
    assert sorted(set(written) - set(run.files)) == []
    assert run.absent == [] and run.notes == []
    # Each part as the run wrote it.
    assert run.preflight is not None and sorted(set(run.preflight["node"])) == HOSTS
    assert set(run.preflight["job"]) == {"preflight_write", "preflight_read"}
    assert run.iostat is not None and sorted(set(run.iostat["node"])) == HOSTS
    assert run.traces is not None and set(HOSTS) <= set(run.traces.nodes)
    assert run.ranks is not None and len(run.ranks) == 2 * len(HOSTS)  # write and read
    assert run.connects is not None and sorted(run.connects["rank"]) == list(range(len(HOSTS)))
    assert (run.connects["end_unix_ns"] >= run.connects["start_unix_ns"]).all()
    assert sorted(run.latencies) == [("read", 0), ("write", 0)]
    assert int(run.latencies[("write", 0)].size) == int(run.ranks["ops"].sum()) // 2
    assert paths.workload_log.relative_to(run_dir).as_posix() in run.logs
    assert len([name for name in run.logs if name.startswith("logs/daemons/")]) == len(HOSTS)
    report = paths.report_markdown.read_text()
    assert "not in this run" not in report
    assert "## Preflight (fio)" in report
