"""The binding's am_pingpong run for real with the options that set it beside the engine
and perftest: an RPC's header bytes on every ping and pong (`--header`), a bulk source
nobody writes (`--untouched-source`, as perftest's `UCX_ALLOC_PRIO=mmap` buffers), and a
bulk source on transparent huge pages with a receive buffer per message in flight
(`--huge-source --recv-buffers 16`, as the engine's client and daemon)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchfs.tools.ucx_examples import key_values

AM_PINGPONG = (
    Path(__file__).resolve().parents[2] / "benchfs_native/target/release/examples/am_pingpong"
)
THP_MODE = Path("/sys/kernel/mm/transparent_hugepage/enabled")
needs_binary = pytest.mark.skipif(
    not AM_PINGPONG.is_file(), reason=f"{AM_PINGPONG} (make examples)"
)


def _report(*options: str) -> tuple[dict[str, float], dict[str, float]]:
    """Its latency and bandwidth lines, read as `benchfs bench rpc` reads them."""
    done = subprocess.run(
        [str(AM_PINGPONG), "--lat-iters", "2000", "--warmup", "100",
         "--bw-iters", "64", "--bw-size", str(1 << 20), *options],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return key_values(done.stdout, "am_lat"), key_values(done.stdout, "am_bw")


@needs_binary
def test_header_bytes_and_an_untouched_source_run_both_tests() -> None:
    lat, bw = _report("--recv-copy", "--header", "56", "--untouched-source")
    assert lat and bw, "no am_lat or am_bw line"
    # The pong came back with the header bytes the responder was told to send.
    assert lat["iters"] == 2000 and lat["header_bytes"] == 56 and lat["rtt_p50_us"] > 0
    assert bw["iters"] == 64 and bw["MiB/s"] > 0


def _thp_mode() -> str:
    """The kernel's THP mode: always, madvise or never (never without THP)."""
    text = THP_MODE.read_text() if THP_MODE.exists() else "[never]"
    return text[text.index("[") + 1 : text.index("]")]


@needs_binary
def test_a_huge_page_source_is_a_mapping_the_kernel_may_back_with_huge_pages() -> None:
    _, heap = _report("--recv-buffers", "16")
    _, huge = _report("--recv-buffers", "16", "--huge-source")
    assert heap["recv_buffers"] == huge["recv_buffers"] == 16
    mode = _thp_mode()
    # Aligned and advised: eligible wherever the kernel has THP at all.
    assert huge["source_thp_eligible"] == (0 if mode == "never" else 1)
    if mode == "madvise":
        # The heap's 1 MiB is not advised, so it stays on base pages.
        assert (heap["source_thp_eligible"], heap["source_huge_kB"]) == (0, 0)


@needs_binary
def test_an_unknown_option_is_refused() -> None:
    done = subprocess.run(
        [str(AM_PINGPONG), "--headers", "56"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "unknown argument --headers" in done.stderr
