"""The trace reader against files of known content, and against damaged files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from analysis_support import write_records

from analysis.errors import DataFormatError, MissingDataError
from analysis.loaders.trace_format import MAGIC, PREFIX, RECORD_SIZE
from analysis.loaders.traces import load_traces
from analysis.synthetic import empty_records, trace_header, write_trace

START = 1_700_000_000_000_000_000


def _two_nodes(tmp_path: Path) -> Path:
    write_records(
        tmp_path / "trace-a-1.bftrace",
        [
            {"t_ns": 10, "kind": "storage_op", "op": "write", "node": 0, "bytes": 4096,
             "d0": 500_000, "d1": 7, "d2": 8192},
            {"t_ns": 20, "kind": "submit", "op": 0, "node": 0, "d0": 3, "d1": 5, "d2": 900},
            {"t_ns": 30, "kind": "rpc_client", "op": "read", "node": 1, "retries": 2,
             "bytes": 100, "d0": 1, "d1": 2, "d2": 3},
        ],
        node="a", node_id=0, pid=1, start_unix_ns=START,
    )  # fmt: skip
    write_records(
        tmp_path / "trace-b-2.bftrace",
        [
            {"t_ns": 5, "kind": "storage_op", "op": "read", "node": 1, "status": -5,
             "d0": 2_000_000},
            {"t_ns": 6, "kind": "rpc_server", "op": "read", "node": 0, "d0": 11, "d1": 12,
             "d2": 13},
        ],
        node="b", node_id=1, pid=2, start_unix_ns=START + 1_000,
    )  # fmt: skip
    return tmp_path


def test_every_kind_lands_in_its_frame_with_header_names(tmp_path: Path) -> None:
    traces = load_traces([_two_nodes(tmp_path)])
    assert sorted(traces.events) == ["rpc_client", "rpc_server", "storage_op", "submit"]
    ops = traces.kind("storage_op").sort_values("time_ns")
    assert list(ops["node"]) == ["a", "b"]
    assert list(ops["op"]) == ["write", "read"]
    assert list(ops["latency_ns"]) == [500_000, 2_000_000]
    assert list(ops["queue_ns"]) == [7, 0]
    assert list(ops["offset"]) == [8192, 0]
    assert list(ops["status"]) == [0, -5]
    assert list(ops["pid"]) == [1, 2]
    # absolute time: the file's start plus t_ns
    assert list(ops["time_ns"]) == [START + 10, START + 1_000 + 5]
    submit = traces.kind("submit")
    assert submit[["sqes", "in_flight", "submit_ns"]].iloc[0].tolist() == [3, 5, 900]
    client = traces.kind("rpc_client")
    assert client["peer"].iloc[0] == "b"  # target node id 1 is node b
    assert client["retries"].iloc[0] == 2
    server = traces.kind("rpc_server")
    assert server["peer"].iloc[0] == "a"
    assert server[["queue_ns", "storage_ns", "reply_ns"]].iloc[0].tolist() == [11, 12, 13]
    assert traces.start_unix_ns == START
    assert traces.event_count == 5
    assert traces.nodes == ["a", "b"]


def test_column_names_follow_the_header_not_a_table_of_ours(tmp_path: Path) -> None:
    header = trace_header("x", 0, 1, START)
    header["kinds"] = {"1": {"name": "storage_op", "d0": "lat_ns", "d1": "q_ns", "d2": "off"}}
    header["ops"] = {"1": "put"}
    records = empty_records(2)
    records["kind"] = 1
    records["op"] = 1
    records["d0"] = [1, 2]
    write_trace(tmp_path / "t.bftrace", header, records)
    ops = load_traces([tmp_path / "t.bftrace"]).kind("storage_op")
    assert {"lat_ns", "q_ns", "off"} <= set(ops.columns)
    assert "latency_ns" not in ops.columns
    assert list(ops["op"]) == ["put", "put"]


def test_missing_kind_is_named(tmp_path: Path) -> None:
    traces = load_traces([_two_nodes(tmp_path)])
    with pytest.raises(MissingDataError, match=r"no 'gc' events.*rpc_client"):
        traces.kind("gc")


def test_no_trace_files_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError, match="no trace files"):
        load_traces([tmp_path])
    with pytest.raises(MissingDataError, match="nope"):
        load_traces([tmp_path / "nope"])


def _one_file(tmp_path: Path, count: int = 4) -> Path:
    rows = [{"t_ns": i, "kind": "storage_op", "op": "read", "d0": 1000 + i} for i in range(count)]
    return write_records(tmp_path / "t.bftrace", rows)


def _data_offset(path: Path) -> int:
    _, _, header_len = PREFIX.unpack(path.read_bytes()[: PREFIX.size])
    return int(PREFIX.size + header_len)


def test_truncated_file_names_the_offset_and_partial_load_reports_the_loss(
    tmp_path: Path,
) -> None:
    path = _one_file(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-10])  # the last record loses 10 of its 48 bytes
    expected_at = _data_offset(path) + 3 * RECORD_SIZE
    with pytest.raises(DataFormatError) as caught:
        load_traces([path])
    assert caught.value.position == expected_at
    assert str(path) in str(caught.value)
    assert f"byte {expected_at}" in str(caught.value)
    traces = load_traces([path], allow_partial=True)
    assert list(traces.kind("storage_op")["latency_ns"]) == [1000, 1001, 1002]
    (loss,) = traces.losses
    assert loss.bytes_dropped == RECORD_SIZE - 10
    assert "truncated" in loss.describe()


def test_bad_magic(tmp_path: Path) -> None:
    path = _one_file(tmp_path)
    path.write_bytes(b"NOTTRACE" + path.read_bytes()[8:])
    with pytest.raises(DataFormatError, match="bad magic") as caught:
        load_traces([path])
    assert caught.value.position == 0


def test_bad_json_header_gives_the_offset_inside_the_header(tmp_path: Path) -> None:
    path = _one_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[PREFIX.size + 1] = ord("}")  # '{}format"...': an object, then garbage
    path.write_bytes(bytes(data))
    with pytest.raises(DataFormatError, match="not valid JSON") as caught:
        load_traces([path])
    assert caught.value.position == PREFIX.size + 2


def test_record_size_mismatch_and_other_data_version(tmp_path: Path) -> None:
    header = trace_header("x", 0, 1, START)
    header["record_size"] = 64
    path = write_trace(tmp_path / "a.bftrace", header, empty_records(0))
    with pytest.raises(DataFormatError, match="record_size 64"):
        load_traces([path])
    path = _one_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[8:12] = (2).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(DataFormatError, match="data version 2") as caught:
        load_traces([path])
    assert caught.value.position == 8


def test_header_version_must_match_too(tmp_path: Path) -> None:
    header = trace_header("x", 0, 1, START)
    header["version"] = 2
    path = write_trace(tmp_path / "a.bftrace", header, empty_records(0))
    with pytest.raises(DataFormatError, match="header version 2"):
        load_traces([path])


def test_partial_load_skips_an_unreadable_file_and_keeps_the_others(tmp_path: Path) -> None:
    good = _one_file(tmp_path)
    bad = tmp_path / "bad.bftrace"
    bad.write_bytes(MAGIC + b"\x01\x00\x00\x00\xff\xff\x00\x00{")
    with pytest.raises(DataFormatError, match="inside the"):
        load_traces([good, bad])
    traces = load_traces([good, bad], allow_partial=True)
    assert len(traces.kind("storage_op")) == 4
    (loss,) = traces.losses
    assert loss.path == bad
    assert loss.bytes_dropped == bad.stat().st_size


@pytest.mark.parametrize("bad_kind", [0, 99])
def test_record_of_an_undeclared_kind_is_corruption(tmp_path: Path, bad_kind: int) -> None:
    path = _one_file(tmp_path)
    data = bytearray(path.read_bytes())
    at = _data_offset(path) + 2 * RECORD_SIZE
    data[at + 8] = bad_kind  # kind byte of the third record
    path.write_bytes(bytes(data))
    with pytest.raises(DataFormatError, match=f"kind {bad_kind}") as caught:
        load_traces([path])
    assert caught.value.position == at
    traces = load_traces([path], allow_partial=True)
    assert list(traces.kind("storage_op")["latency_ns"]) == [1000, 1001, 1003]
    assert traces.losses[0].records_dropped == 1


def test_files_disagreeing_on_a_kind_are_rejected(tmp_path: Path) -> None:
    _one_file(tmp_path)
    header = trace_header("y", 1, 2, START)
    header["kinds"] = json.loads(json.dumps(header["kinds"]))
    header["kinds"]["1"]["d0"] = "service_ns"
    write_trace(tmp_path / "other.bftrace", header, empty_records(1))
    with pytest.raises(DataFormatError, match="storage_op"):
        load_traces([tmp_path])


def test_unknown_peer_id_gets_a_name(tmp_path: Path) -> None:
    path = write_records(tmp_path / "t.bftrace",
                         [{"kind": "rpc_client", "op": "read", "node": 7}])  # fmt: skip
    client = load_traces([path]).kind("rpc_client")
    assert client["peer"].iloc[0] == "node-id-7"
    assert np.issubdtype(client["total_ns"].dtype, np.integer)


def test_a_file_of_a_header_alone_loads_beside_the_others(tmp_path: Path) -> None:
    # A daemon killed before its first flush leaves its header and no record.
    _two_nodes(tmp_path)
    write_trace(tmp_path / "trace-c-3.bftrace", trace_header("c", 2, 3, START), empty_records(0))
    traces = load_traces([tmp_path])
    assert len(traces.headers) == 3
    assert len(traces.events["storage_op"]) == 2 and traces.losses == []
    (alone,) = [h for h in traces.headers if h.path.name == "trace-c-3.bftrace"]
    assert alone.path.stat().st_size == alone.data_offset
