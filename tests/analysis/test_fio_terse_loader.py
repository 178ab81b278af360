"""fio's terse output read like its JSON: both printed by one real fio run
(``--output-format=terse,json``), so every figure has the same source."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis.convert.fio import fio_phases
from analysis.errors import DataFormatError
from analysis.loaders.detect import ToolOutput, detect
from analysis.loaders.fio import Direction, FioReport, Latency, parse_fio_json
from analysis.loaders.fio_terse import parse_fio_terse
from analysis.loaders.tools import load_tool_output

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")

MIXED = ["--name=mixed", "--rw=randrw", "--rwmixread=60", "--bs=4k", "--size=4M", "--unlink=1"]


def _fio(directory: Path, *args: str) -> tuple[str, str]:
    """The terse lines and the JSON of one fio run that printed both."""
    done = subprocess.run(
        ["fio", f"--directory={directory}", "--output-format=terse,json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    start = done.stdout.index("{")
    return done.stdout[:start], done.stdout[start:]


def _same_latency(terse: Latency | None, json_: Latency | None) -> None:
    assert terse is not None and json_ is not None
    # terse prints means in microseconds to 6 decimals, the rest in whole microseconds
    assert terse.mean_ns == pytest.approx(json_.mean_ns, abs=1)
    assert terse.min_ns == pytest.approx(json_.min_ns, abs=1000)
    assert terse.max_ns == pytest.approx(json_.max_ns, abs=1000)


def _same_direction(terse: Direction, json_: Direction) -> None:
    assert terse.active and json_.active
    assert terse.io_bytes == json_.io_bytes
    assert terse.runtime_s == json_.runtime_s
    assert terse.bw_mib_s == pytest.approx(json_.bw_mib_s, abs=1 / 1024)  # whole KiB/s
    assert terse.iops == pytest.approx(json_.iops, abs=1)  # whole IOPS
    assert abs(terse.total_ios - json_.total_ios) <= json_.runtime_s + 1
    _same_latency(terse.clat, json_.clat)
    _same_latency(terse.lat, json_.lat)
    assert terse.clat is not None and json_.clat is not None
    for name in ("p50_ns", "p90_ns", "p99_ns", "p999_ns"):
        figure, expected = getattr(terse.clat, name), getattr(json_.clat, name)
        assert figure is not None and expected is not None
        assert figure == pytest.approx(expected, abs=1000), name
    assert terse.bw_min_mib_s == json_.bw_min_mib_s and terse.bw_max_mib_s == json_.bw_max_mib_s


def _same_report(terse: FioReport, json_: FioReport) -> None:
    assert terse.output_format == "terse" and json_.output_format == "json"
    assert terse.fio_version == json_.fio_version
    assert [(j.name, j.error) for j in terse.jobs] == [(j.name, j.error) for j in json_.jobs]
    for terse_job, json_job in zip(terse.jobs, json_.jobs, strict=True):
        for name, direction in json_job.directions.items():
            if direction.active:
                _same_direction(terse_job.directions[name], direction)
            else:
                assert not terse_job.directions[name].active, name


@pytest.mark.parametrize("version", [None, "3", "4", "5", "2"])
def test_terse_of_each_version_gives_the_jsons_figures(tmp_path: Path, version: str | None) -> None:
    options = [f"--terse-version={version}"] if version else []
    terse_text, json_text = _fio(tmp_path, *options, *MIXED)
    assert terse_text.startswith(f"{version or 3};")
    assert detect(terse_text) is ToolOutput.FIO_TERSE
    terse = parse_fio_terse(terse_text, "mixed.terse")
    json_report = parse_fio_json(json_text, "mixed.json")
    if version == "2":  # v2 does not name fio's version
        assert terse.fio_version == ""
        terse = FioReport(terse.source, json_report.fio_version, terse.jobs, output_format="terse")
    _same_report(terse, json_report)
    (job,) = terse.jobs
    assert job.name == "mixed" and job.read.active and job.write.active and not job.trim.active


def test_group_reporting_and_one_line_per_job(tmp_path: Path) -> None:
    jobs = ["--name=rand", "--rw=randread", "--bs=4k", "--size=2M", "--numjobs=2", "--unlink=1"]
    grouped_terse, grouped_json = _fio(tmp_path, "--group_reporting", *jobs)
    grouped = parse_fio_terse(grouped_terse, "grouped.terse")
    assert len(grouped.jobs) == 1 and grouped.jobs[0].read.io_bytes == 4 * 1024 * 1024
    _same_report(grouped, parse_fio_json(grouped_json, "grouped.json"))

    apart_terse, apart_json = _fio(tmp_path, *jobs)
    apart = parse_fio_terse(apart_terse, "apart.terse")
    assert [job.name for job in apart.jobs] == ["rand", "rand"]
    _same_report(apart, parse_fio_json(apart_json, "apart.json"))


def test_two_jobs_with_fios_banner_lines(tmp_path: Path) -> None:
    """Given after the jobs, the output format leaves fio's `name: (g=0): rw=...` banner."""
    jobs = ["--bs=4k", "--size=1M", "--unlink=1"]
    done = subprocess.run(
        ["fio", f"--directory={tmp_path}", "--name=writer", "--rw=write", *jobs,
         "--name=reader", "--rw=read", *jobs, "--output-format=terse,json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    start = done.stdout.index("{")
    terse_text, json_text = done.stdout[:start], done.stdout[start:]
    assert terse_text.startswith("writer: (g=0): rw=write")
    terse = parse_fio_terse(terse_text, "two.terse")
    assert [job.name for job in terse.jobs] == ["writer", "reader"]
    assert terse.jobs[0].write.active and not terse.jobs[0].read.active
    _same_report(terse, parse_fio_json(json_text, "two.json"))


def test_phases_from_terse_are_the_jsons_with_options_unknown(tmp_path: Path) -> None:
    terse_text, json_text = _fio(tmp_path, "--group_reporting", "--numjobs=2", *MIXED)
    path = tmp_path / "old-script.out"
    path.write_text(terse_text)
    loaded = load_tool_output(path)
    assert loaded.kind is ToolOutput.FIO_TERSE and loaded.tool == "fio"
    assert isinstance(loaded.report, FioReport)
    terse_rows = fio_phases(loaded.report)
    json_rows = fio_phases(parse_fio_json(json_text, "same.json"))
    assert [row["phase"] for row in terse_rows] == [row["phase"] for row in json_rows]
    for terse, json_ in zip(terse_rows, json_rows, strict=True):
        assert terse["bwMeanMIB"] == json_["bwMeanMIB"]  # the same bytes over the same ms
        assert terse["xsizeMiB"] == json_["xsizeMiB"] and terse["MeanTime"] == json_["MeanTime"]
        assert terse["p99_us"] == pytest.approx(json_["p99_us"], abs=1)
        # terse names no option: what JSON says of them is unknown, not fio's default
        assert json_["API"] == "psync" and json_["queue_depth"] == 1
        assert terse["API"] is None and terse["queue_depth"] is None
        assert terse["transferSize"] is None and terse["ordering"] is None
    json.dumps(terse_rows)  # the rows go into summary.json as they are


def test_a_terse_line_cut_short_names_the_file_and_line(tmp_path: Path) -> None:
    terse_text, _ = _fio(tmp_path, *MIXED)
    path = tmp_path / "cut.terse"
    path.write_text("a warning fio printed\n" + terse_text[: len(terse_text) // 3] + "\n")
    with pytest.raises(DataFormatError, match="too few for terse version 3") as caught:
        load_tool_output(path)
    assert caught.value.path == path and caught.value.position == "line 2"
    fields = terse_text.split(";")
    fields[6] = "lots"
    path.write_text(";".join(fields))
    with pytest.raises(DataFormatError, match=r"job mixed: field 7 \(bandwidth KiB/s\)"):
        load_tool_output(path)
