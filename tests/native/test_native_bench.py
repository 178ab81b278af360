"""bench_storage: small buffered runs of every pattern; build_info."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import benchfs_native as bn


def test_patterns_and_result_shape(tmp_path: Path) -> None:
    small = {"block_size": 65536, "queue_depth": 4, "direct": False}
    with pytest.raises(FileNotFoundError, match=r"open failed: .*bench\.0"):
        bn.bench_storage(str(tmp_path), pattern="read", total_bytes=1 << 20, **small)  # type: ignore[arg-type]
    bn.bench_storage(str(tmp_path), pattern="write", total_bytes=1 << 20, **small)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="write pattern first"):
        bn.bench_storage(str(tmp_path), pattern="read", total_bytes=2 << 20, **small)  # type: ignore[arg-type]
    for pattern, bs in (("write", 65536), ("read", 65536), ("randwrite", 4096), ("randread", 4096)):
        r = bn.bench_storage(
            str(tmp_path),
            pattern=pattern,  # type: ignore[arg-type]
            block_size=bs,
            queue_depth=8,
            total_bytes=4 << 20,
            files=2,
            direct=False,
        )
        assert set(r) == set(bn.StorageBenchResult.__annotations__)
        assert set(r["latency"]) == set(bn.LatencyStats.__annotations__)
        assert r["pattern"] == pattern
        assert r["ops"] == (4 << 20) // bs
        assert r["bytes"] == 4 << 20
        assert r["latency"]["count"] == r["ops"]
        assert r["MiBps"] > 0 and r["iops"] > 0 and r["seconds"] > 0
        assert 1 <= r["io_depth_mean"] <= 8
        assert r["direct"] is False
        known = {"SINGLE_ISSUER|DEFER_TASKRUN", "SINGLE_ISSUER|COOP_TASKRUN", "COOP_TASKRUN"}
        assert r["ring_setup"] in known | {"no setup flags"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.0", "bench.1"]
    assert (tmp_path / "bench.1").stat().st_size == 2 << 20


def test_direct_bench_when_supported(tmp_path: Path) -> None:
    try:
        r = bn.bench_storage(
            str(tmp_path), pattern="write", block_size=4096, queue_depth=4, total_bytes=1 << 20
        )
    except ValueError as e:
        assert "O_DIRECT" in str(e)
        pytest.skip(f"no O_DIRECT here: {e}")
    assert r["direct"] is True
    assert r["ops"] == 256


def test_build_info() -> None:
    b = bn.build_info()
    assert set(b) == set(bn.BuildInfo.__annotations__)
    assert b["version"] == bn.__version__
    assert b["profile"] in ("debug", "release")
    assert re.fullmatch(r"[0-9a-f]{4,40}(-dirty)?|unknown", b["git_revision"]), b
    assert b["rustc"].startswith("rustc ")
    assert re.fullmatch(r"\d+\.\d+\.\d+", b["ucx"]), b
