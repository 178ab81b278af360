"""The binding's am_pingpong run for real with the options that set it beside the engine
and perftest: an RPC's header bytes on every ping and pong (`--header`), and a bulk source
nobody writes (`--untouched-source`, as perftest's `UCX_ALLOC_PRIO=mmap` buffers)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

AM_PINGPONG = (
    Path(__file__).resolve().parents[2] / "benchfs_native/target/release/examples/am_pingpong"
)
needs_binary = pytest.mark.skipif(
    not AM_PINGPONG.is_file(), reason=f"{AM_PINGPONG} (make examples)"
)


def _report(*options: str) -> dict[str, dict[str, str]]:
    done = subprocess.run(
        [str(AM_PINGPONG), "--lat-iters", "2000", "--warmup", "100",
         "--bw-iters", "64", "--bw-size", str(1 << 20), *options],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = {}
    for line in done.stdout.splitlines():
        test, *pairs = line.split()
        if test in ("am_lat", "am_bw"):
            lines[test] = dict(pair.split("=", 1) for pair in pairs)
    return lines


@needs_binary
def test_header_bytes_and_an_untouched_source_run_both_tests() -> None:
    report = _report("--recv-copy", "--header", "56", "--untouched-source")
    assert set(report) == {"am_lat", "am_bw"}
    lat = report["am_lat"]
    # The pong came back with the header bytes the responder was told to send.
    assert lat["iters"] == "2000" and lat["header_bytes"] == "56" and float(lat["rtt_p50_us"]) > 0
    assert report["am_bw"]["iters"] == "64" and float(report["am_bw"]["MiB/s"]) > 0


@needs_binary
def test_an_unknown_option_is_refused() -> None:
    done = subprocess.run(
        [str(AM_PINGPONG), "--headers", "56"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "unknown argument --headers" in done.stderr
