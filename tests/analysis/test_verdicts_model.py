"""verdicts.json: the per-node verdict model written by a run and read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.errors import DataFormatError
from analysis.layout import RunLayout
from analysis.loaders.verdicts import COLUMNS, load_verdicts, parse_verdicts, verdicts_frame
from analysis.verdicts import Alert, Figures, Interval, LayerTime, NodeVerdict, Verdicts


def throttled_node() -> NodeVerdict:
    alert = Alert(
        node="local3", phase="read", metric="storage_op_ms", layer="kernel", onset_s=10.0,
        raised_s=12.0, onset_unix_ns=1_700_000_010_000_000_000, value=194.0, others=1.1,
        unit="ms", action="warn",
        message="local3: storage ops 194 ms vs 1.1 ms on the others, since 00:10",
    )  # fmt: skip
    return NodeVerdict(
        node="local3", host="here", phase="read", metric="storage_op_ms", op="read",
        status="slow", layer="kernel", pattern="onset", onset_s=10.0,
        intervals=[Interval(start_s=10.0)],
        figures=Figures(unit="ms", p50=194.0, p99=260.0, others_p50=1.1, others_p99=2.0),
        layers=[LayerTime(layer="kernel", node=193.0, others=0.1),
                LayerTime(layer="device", node=1.0, others=0.9)],
        evidence=["the daemon's cgroup caps reads on 7:3 at 20 MiB/s"],
        alerts=[alert],
        verdict="local3: storage op +193 ms while the device's await is normal",
    )  # fmt: skip


def healthy_node() -> NodeVerdict:
    return NodeVerdict(
        node="local0", phase="read", metric="storage_op_ms", status="ok",
        figures=Figures(unit="ms", p50=1.0, p99=2.0, others_p50=1.1, others_p99=2.0),
        verdict="local0: storage ops 1.0 ms, like the others (1.1 ms)",
    )  # fmt: skip


def test_verdicts_written_are_read_back_the_same(tmp_path: Path) -> None:
    document = Verdicts(nodes=["local0", "local3"], verdicts=[healthy_node(), throttled_node()])
    path = RunLayout(tmp_path).verdicts
    path.write_text(document.to_json())
    back = load_verdicts(path)
    assert back == document
    assert [v.node for v in back.slow()] == ["local3"]
    assert [a.raised_s - a.onset_s for a in back.alerts()] == [2.0]
    assert back.slow()[0].figures.ratio == pytest.approx(194.0 / 1.1)
    assert back.slow()[0].layers[0].extra == pytest.approx(192.9)


def test_the_table_has_one_row_per_verdict() -> None:
    frame = verdicts_frame(Verdicts(verdicts=[healthy_node(), throttled_node()]))
    assert list(frame.columns) == COLUMNS
    assert frame["status"].tolist() == ["ok", "slow"]
    assert frame.loc[1, "intervals"] == "10-end"
    assert frame.loc[1, "alerts"] == 1


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("{", "line 1"),
        (json.dumps({"format": "other"}), "format"),
        (json.dumps({"format": "benchfs-verdicts", "version": 2}), "version"),
        (json.dumps({"format": "benchfs-verdicts", "verdicts": [{"node": "n"}]}), "verdicts.0"),
        (json.dumps({"format": "benchfs-verdicts", "surprise": 1}), "surprise"),
    ],
)
def test_a_bad_document_names_where(text: str, where: str) -> None:
    with pytest.raises(DataFormatError, match=f"at {where}"):
        parse_verdicts(text, "verdicts.json")
