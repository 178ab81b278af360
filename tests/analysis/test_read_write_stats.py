"""Reads against writes per node: the gap is found only beyond 2x per op, and
the parts of the time say whether the disk or the software explains it."""

from __future__ import annotations

import pandas as pd

from analysis.stats.io_depth import batching_verdict, io_depth_summary
from analysis.stats.read_write import compared, read_write_gaps, read_write_table

MS = 1_000_000
START = 1_763_800_000_000_000_000
SECOND = 1_000_000_000


def _ops(node: str, op: str, storage_ms: float, first_s: int) -> list[dict[str, object]]:
    return [
        {"node": node, "op": op, "time_ns": START + (first_s + i) * SECOND,
         "latency_ns": int(storage_ms * MS)}
        for i in range(10)
    ]  # fmt: skip


def _frames(
    *,
    read: tuple[float, float, float, float],
    write: tuple[float, float, float, float],
    node: str = "n0",
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(total, queue, storage, disk await) in ms per op: writes in s 0-9, reads in s 20-29."""
    ops, client, server, iostat = [], [], [], []
    for op, (total, queue, storage, disk), first in (("write", write, 0), ("read", read, 20)):
        ops += _ops(node, op, storage, first)
        client += [{"node": "c0", "peer": node, "op": op, "total_ns": int(total * MS)}] * 10
        server += [{"node": node, "op": op, "queue_ns": int(queue * MS)}] * 10
        await_column, rate_column = ("r_await_ms", "r/s") if op == "read" else ("w_await_ms", "w/s")
        iostat += [
            {"node": node, "time_ns": START + (first + i) * SECOND, "r/s": 0.0, "w/s": 0.0,
             "r_await_ms": 0.0, "w_await_ms": 0.0, rate_column: 100.0, await_column: disk}
            for i in range(10)
        ]  # fmt: skip
    return pd.DataFrame(ops), pd.DataFrame(client), pd.DataFrame(server), pd.DataFrame(iostat)


def test_slow_disk_reads_are_put_on_the_disk() -> None:
    frames = _frames(read=(5.0, 0.1, 4.5, 4.0), write=(1.2, 0.1, 1.0, 0.8))
    table = read_write_table(*frames)
    row = table.iloc[0]
    assert row["read_disk_ms"] == 4.0 and row["write_disk_ms"] == 0.8
    assert row["read_total_ms"] == 5.0 and row["write_queue_ms"] == 0.1
    (gap,) = read_write_gaps(table)
    assert (gap.node, gap.slow, gap.fast, gap.basis) == ("n0", "read", "write", "client total")
    assert round(gap.ratio, 2) == 4.17
    sentence = gap.sentence()
    assert sentence.startswith("n0: reads are 4.2x slower than writes per op (client total)")
    assert "disk await 4 vs 0.8" in sentence
    assert "the disk explains it" in sentence


def test_a_sick_disk_of_seconds_per_read_prints_whole_milliseconds() -> None:
    frames = _frames(read=(2500.0, 0.1, 2450.0, 2400.0), write=(1.2, 0.1, 1.0, 0.8))
    (gap,) = read_write_gaps(read_write_table(*frames))
    sentence = gap.sentence()
    assert "client total 2,500 vs 1.2" in sentence
    assert "its own await differs by +2,399 of the +2,499 ms" in sentence
    assert "e+" not in sentence


def test_reads_queued_in_the_daemon_are_put_on_the_software() -> None:
    frames = _frames(read=(5.0, 3.6, 1.1, 0.9), write=(1.2, 0.1, 1.0, 0.8))
    (gap,) = read_write_gaps(read_write_table(*frames))
    assert "the software explains it, not the disk" in gap.explanation
    assert "most is in the server queue (+3.5 ms)" in gap.explanation


def test_slow_writes_in_the_client_and_network() -> None:
    frames = _frames(read=(1.0, 0.1, 0.7, 0.6), write=(3.0, 0.1, 0.8, 0.6))
    (gap,) = read_write_gaps(read_write_table(*frames))
    assert (gap.slow, gap.fast) == ("write", "read")
    assert "most is in the client and network" in gap.explanation


def test_within_a_factor_of_two_is_no_finding() -> None:
    table = read_write_table(*_frames(read=(1.9, 0.1, 1.5, 1.2), write=(1.0, 0.1, 0.8, 0.6)))
    assert compared(table)
    assert read_write_gaps(table) == []


def test_without_client_traces_or_iostat_it_says_what_it_cannot_tell() -> None:
    ops, _, server, _ = _frames(read=(0, 0.1, 3.0, 0), write=(0, 0.1, 1.0, 0))
    (gap,) = read_write_gaps(read_write_table(ops, None, server, None))
    assert gap.basis == "storage op" and gap.ratio == 3.0
    assert "the disk cannot be told from the software" in gap.explanation


def test_only_writes_is_not_compared() -> None:
    ops, client, server, iostat = _frames(read=(5, 1, 4, 3), write=(1, 0.1, 1, 1))
    writes = ops[ops["op"] == "write"]
    table = read_write_table(writes, client, server, iostat)
    assert not compared(table) and read_write_gaps(table) == []


def _submits(in_flight: float, sqes: float) -> pd.DataFrame:
    return pd.DataFrame({"sqes": [sqes] * 100, "in_flight": [in_flight] * 100})


def test_batching_is_judged_only_under_load() -> None:
    light = batching_verdict(io_depth_summary(_submits(2.0, 1.0)))
    assert light.startswith("not enough load to judge batching: 2.0 ops in flight")
    assert batching_verdict(io_depth_summary(_submits(8.0, 3.0))).startswith("batching present")
    assert batching_verdict(io_depth_summary(_submits(8.0, 1.0))) == "batching absent under load"


def test_a_gap_the_storage_op_cannot_hold_is_software_even_without_iostat() -> None:
    ops, client, server, _ = _frames(read=(3.6, 0.0, 0.3, 0), write=(1.5, 0.0, 0.55, 0))
    (gap,) = read_write_gaps(read_write_table(ops, client, server, None))
    assert gap.explanation.startswith("the software explains it, not the disk (no iostat")
    assert "most is in the client and network" in gap.explanation


def test_a_storage_gap_under_an_even_client_total_is_found_on_the_storage_op() -> None:
    # As on this machine's virtio disk: the client waits about as long either
    # way, while the daemon's reads take 3x its writes, and so does the disk.
    frames = _frames(read=(3.8, 0.01, 2.4, 2.0), write=(3.1, 0.01, 0.77, 0.77))
    (gap,) = read_write_gaps(read_write_table(*frames))
    assert (gap.basis, gap.slow) == ("storage op", "read")
    assert round(gap.ratio, 1) == 3.1
    assert gap.explanation.startswith("the disk explains it")
