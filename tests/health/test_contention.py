"""A REAL device busy with someone else's I/O: `benchfs diagnose` on an ext4
loop device while a fio outside the diagnose reads the device itself, and the
report names contention from outside the test (iostat's total on the device
well above the test's own bandwidth).

The outside fio reads the raw device with O_DIRECT at a deep queue; the test
waits until the device's own counters show it reading before diagnosing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from fixtures.loopdisk import loop_disk, loop_disk_unavailable
from fixtures.outside_io import outside_fio

pytestmark = [
    pytest.mark.slow,
    pytest.mark.root,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        shutil.which("fio") is None or shutil.which("iostat") is None,
        reason="needs fio and iostat",
    ),
]


def outside_reader(device: str) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """A fio reading ``device`` until stopped, once the device shows its reads."""
    return outside_fio(
        device,
        "read",
        [f"--filename={device}", "--readonly", "--rw=randread", "--bs=64k", "--direct=1",
         "--ioengine=libaio", "--iodepth=32", "--numjobs=2", "--time_based", "--runtime=600"],
    )  # fmt: skip


def test_diagnose_names_contention_from_outside_on_a_device_busy_with_others(
    tmp_path: Path,
) -> None:
    reason = loop_disk_unavailable()
    if reason:
        pytest.skip(f"no loop device: {reason}")
    with loop_disk(tmp_path / "disk", size_mib=1024) as disk, outside_reader(disk.loop_device):
        done = subprocess.run(
            [sys.executable, "-m", "benchfs", "diagnose", "--dir", str(disk.mount_point),
             "--quick", "--json", "--output", str(tmp_path / "report")],
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip
    assert done.returncode in (0, 1, 2), done.stderr
    report = json.loads(done.stdout)
    (node,) = report["nodes"]
    found = [f for f in node["findings"] if f["kind"] == "contention"]
    assert found, node["findings"]
    for finding in found:
        assert finding["test"] in ("seq_write_direct", "seq_read_direct", "rand_rw"), finding
        assert "the device busy with others' I/O: " in finding["message"], finding
        assert " MB/s on it against the test's own " in finding["message"], finding
        assert finding["message"].endswith("contention from outside the test"), finding
    assert found[0]["message"] in (tmp_path / "report" / "diagnose.md").read_text()
