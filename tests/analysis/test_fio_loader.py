"""The fio JSON parser on real fio output: normal, json+, client mode; and damaged input."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from analysis.loaders.fio import (
    FioFormatError,
    FioReport,
    merge_bw_logs,
    parse_fio_bw_log,
    parse_fio_json,
)

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")

JOB = [
    "--name=mixed",
    "--rw=randrw",
    "--rwmixread=70",
    "--bs=4k",
    "--size=8M",
    "--iodepth=4",
    "--ioengine=psync",
    "--runtime=1",
    "--time_based",
    "--unlink=1",
]


def _fio(directory: Path, *args: str) -> str:
    result = subprocess.run(
        ["fio", f"--directory={directory}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Real fio output in json and json+ (one run each), plus a bandwidth log."""
    directory = tmp_path_factory.mktemp("fio")
    plain = _fio(directory, "--output-format=json", *JOB)
    log_prefix = directory / "seq"
    plus = _fio(
        directory,
        "--output-format=json+",
        "--name=seq",
        "--rw=write",
        "--bs=64k",
        "--size=16M",
        # Rate-limited to 8 MiB/s: the job lasts about 2 s however fast the disk, so the
        # 100 ms bandwidth log has many intervals.
        "--rate=8m",
        "--unlink=1",
        f"--write_bw_log={log_prefix}",
        "--log_avg_msec=100",
    )
    logs = sorted(directory.glob("seq_bw.*.log"))
    return {"json": plain, "json+": plus, "bwlog": logs[0].read_text()}


def _check_latency_order(report: FioReport) -> None:
    for job in report.jobs:
        for direction in (job.read, job.write):
            if not direction.active:
                continue
            clat = direction.clat
            assert clat is not None
            assert clat.p50_ns is not None and clat.p99_ns is not None
            assert clat.p90_ns is not None and clat.p999_ns is not None
            assert 0 < clat.p50_ns <= clat.p90_ns <= clat.p99_ns <= clat.p999_ns
            # fio's percentiles are bin upper bounds: they may exceed max by one bin.
            assert clat.max_ns >= clat.p50_ns


def test_plain_json_gives_both_directions_with_consistent_figures(
    outputs: dict[str, str],
) -> None:
    report = parse_fio_json(outputs["json"], "plain.json")
    assert report.fio_version.startswith("fio-")
    (job,) = report.jobs
    assert job.name == "mixed" and job.hostname is None and job.error == 0
    assert job.read.active and job.write.active and not job.trim.active
    for direction in (job.read, job.write):
        assert direction.io_bytes == direction.total_ios * 4096
        expected = direction.io_bytes / direction.runtime_s / (1024 * 1024)
        assert direction.bw_mib_s == pytest.approx(expected, rel=0.05)
    assert job.read.total_ios > job.write.total_ios  # 70/30 mix
    assert job.options["rw"] == "randrw"
    _check_latency_order(report)
    frame = report.to_frame()
    assert list(frame["direction"]) == ["read", "write"]
    assert "clat_p99.9_ns" in frame.columns


def test_json_plus_parses_like_json(outputs: dict[str, str]) -> None:
    assert '"bins"' in outputs["json+"]
    report = parse_fio_json(outputs["json+"], "plus.json")
    (job,) = report.jobs
    assert job.write.active and not job.read.active
    assert job.write.bw_sample_count > 0
    assert job.write.bw_variation() is not None
    _check_latency_order(report)


def test_warnings_before_and_after_the_document_are_ignored(outputs: dict[str, str]) -> None:
    noisy = (
        "fio: this platform does not support process shared mutexes, forcing use of threads\n"
        "note: both iodepth >= 1 and synchronous I/O engine are selected\n"
        + outputs["json"]
        + "\nfio: trailing remark\n"
    )
    report = parse_fio_json(noisy, "noisy.json")
    assert report.jobs[0].name == "mixed"


def test_truncated_output_names_source_and_position(outputs: dict[str, str]) -> None:
    text = outputs["json"]
    cut = text[: len(text) // 2]
    with pytest.raises(FioFormatError) as caught:
        parse_fio_json(cut, "cut.json")
    message = str(caught.value)
    assert message.startswith("cut.json:")
    line = int(message.split(":")[1])
    assert 1 < line <= cut.count("\n") + 1
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no json at all", "no fio JSON object"),
        ('{"fio version": "fio-3", "other": 1}', "neither 'jobs' nor 'client_stats'"),
        ('{"jobs": [{"jobname": "x", "read": {"iops": "fast"}}]}', "job #0 (x): read: iops"),
        ('{"jobs": [{"read": {}}]}', "missing 'jobname'"),
    ],
)
def test_corrupt_documents_are_errors_naming_the_problem(text: str, expected: str) -> None:
    with pytest.raises(FioFormatError, match=r"^bad\.json") as caught:
        parse_fio_json(text, "bad.json")
    assert expected in str(caught.value)


def test_bandwidth_log_parses_and_merges(outputs: dict[str, str]) -> None:
    series = parse_fio_bw_log(outputs["bwlog"], "seq_bw.1.log")
    assert set(series) == {1}  # writes only
    writes = series[1]
    assert len(writes) >= 5
    assert all(mib_s >= 0 for _t, mib_s in writes)
    merged = merge_bw_logs([writes, writes], 100)
    assert sum(merged) == pytest.approx(2 * sum(v for _t, v in writes))
    with pytest.raises(FioFormatError, match=r"^log:2: not a fio bw log line"):
        parse_fio_bw_log("100, 5, 1, 4096, 0\nbroken\n", "log")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def fio_servers(tmp_path: Path) -> Iterator[list[int]]:
    """Two real fio servers on localhost ports; killed at teardown."""
    ports = [_free_port()]
    while len(ports) < 2:
        ports = list(dict.fromkeys([*ports, _free_port()]))
    servers = [
        subprocess.Popen(
            ["fio", f"--server=ip:127.0.0.1,{port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=tmp_path,
        )
        for port in ports
    ]
    try:
        deadline = time.monotonic() + 60  # a hang, not a slow start
        for port, server in zip(ports, servers, strict=True):
            while True:
                if server.poll() is not None:  # e.g. its port was taken meanwhile
                    pytest.fail(f"fio server on port {port} exited with {server.returncode}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"fio server on port {port} did not start")
                    time.sleep(0.1)
        yield ports
    finally:
        for server in servers:
            server.kill()
            server.wait()


def test_client_mode_gives_one_job_per_host(tmp_path: Path, fio_servers: list[int]) -> None:
    jobfile = tmp_path / "job.fio"
    jobfile.write_text(
        f"[reader]\ndirectory={tmp_path}\nrw=randread\nbs=4k\nsize=4M\n"
        "ioengine=psync\nruntime=1\ntime_based\n"
    )
    argv = ["fio", "--output-format=json"]
    for port in fio_servers:
        argv += [f"--client=ip:127.0.0.1,{port}", str(jobfile)]
    text = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    assert "client_stats" in text and "All clients" in text
    report = parse_fio_json(text, "client.json")
    assert len(report.jobs) == 2  # fio's "All clients" sum is dropped
    assert all(job.name == "reader" and job.hostname for job in report.jobs)
    assert report.hostnames == [report.jobs[0].hostname]  # both servers are this host
    assert all(job.read.iops > 0 for job in report.jobs)
    assert report.job("reader", report.jobs[0].hostname) is report.jobs[0]
    with pytest.raises(KeyError, match="no fio job named 'other'"):
        report.job("other")
