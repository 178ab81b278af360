"""The names of a results directory (analysis.layout), shared by writers and readers."""

from __future__ import annotations

from pathlib import Path

from analysis.layout import RunLayout, latency_file_name, parse_latency_file_name


def test_latency_file_names_round_trip() -> None:
    assert latency_file_name("write", 3) == "latency-write-3.npy"
    assert parse_latency_file_name("latency-write-3.npy") == ("write", 3)
    assert parse_latency_file_name("latency-my-phase-12.npy") == ("my-phase", 12)
    for other in ("latency-write.npy", "ranks.jsonl", "latency-write-x.npy", "latency--1.npy"):
        assert parse_latency_file_name(other) is None


def test_paths_of_a_run() -> None:
    paths = RunLayout(Path("/r"))
    assert paths.manifest == Path("/r/manifest.json")
    assert paths.summary == Path("/r/workload/summary.json")
    assert paths.ranks == Path("/r/workload/ranks.jsonl")
    assert paths.latency("read", 0) == Path("/r/workload/latency-read-0.npy")
    assert paths.preflight_file("n1") == Path("/r/preflight/n1.json")
    assert paths.preflight_stderr("n1") == Path("/r/preflight/n1.stderr")
    assert paths.iostat_file("n1") == Path("/r/iostat/n1.json")
    assert paths.workload_log == Path("/r/logs/workload.log")
    assert paths.daemon_logs_dir == Path("/r/logs/daemons")
    assert paths.live_samples == Path("/r/live/samples.jsonl")
    assert paths.verdicts == Path("/r/verdicts.json")
    assert paths.report_files() == [Path("/r/report.md"), Path("/r/report.html"), Path("/r/plots")]
