"""The growing iostat output read piece by piece, on real iostat output: what
the pieces give is what parsing the whole output so far gives."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from benchfs.tools.iostat import iostat_argv, parse_lenient
from benchfs.tools.iostat_stream import IostatStream

pytestmark = pytest.mark.skipif(shutil.which("iostat") is None, reason="sysstat is not installed")
REPORTS = 4


@pytest.fixture(scope="module")
def output() -> bytes:
    """Four reports of every device (the since-boot one first), as iostat wrote them."""
    done = subprocess.run(
        [*iostat_argv([], 1), str(REPORTS)], capture_output=True, check=True, timeout=60
    )
    assert done.stdout.count(b'"timestamp"') == REPORTS
    return done.stdout


def _cuts(output: bytes) -> list[int]:
    """Where the pieces end: inside the header, in the middle of a disk's record,
    between two records of one report, just after a report's closing line, the end."""
    second = output.index(b'"timestamp"', output.index(b'"timestamp"') + 1)
    record = output.index(b'{"disk_device"', second)
    next_record = output.index(b'{"disk_device"', record + 1)
    closed = output.index(b"]", next_record) + 2
    return [20, record + 30, next_record, closed, len(output)]


def test_pieces_give_what_the_whole_output_so_far_gives(output: bytes) -> None:
    stream = IostatStream("iostat")
    start = 0
    for end in _cuts(output):
        stream.feed(output[start:end])
        start = end
        assert stream.offset == end
        so_far = parse_lenient(output[:end].decode(), "iostat")
        assert stream.report().samples == so_far.samples, end
    whole = parse_lenient(output.decode(), "iostat")
    assert stream.report() == whole
    assert {sample.interval for sample in whole.samples} == set(range(REPORTS - 1))


def test_a_record_cut_in_the_middle_waits_for_its_end(output: bytes) -> None:
    cut = _cuts(output)[1]
    stream = IostatStream("iostat")
    stream.feed(output[:cut])
    # The report the cut falls in is not there yet; the since-boot one never is.
    assert stream.report().samples == ()
    stream.feed(output[cut : cut + 1])
    assert stream.report().samples == ()
    stream.feed(output[cut + 1 :])
    assert len({sample.timestamp for sample in stream.report().samples}) == REPORTS - 1


def test_byte_by_byte_is_the_same(output: bytes) -> None:
    stream = IostatStream("iostat")
    for index in range(len(output)):
        stream.feed(output[index : index + 1])
    assert stream.report() == parse_lenient(output.decode(), "iostat")
