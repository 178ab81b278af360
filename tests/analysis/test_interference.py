"""The finding for datagrams from outside the job (``foreign_signal`` events;
the real daemon's records are read in tests/daemon/test_daemon_outsiders.py)."""

from __future__ import annotations

import pandas as pd

from analysis.stats.interference import foreign_signal_finding


def test_the_finding_names_nodes_counts_and_senders() -> None:
    events = pd.DataFrame(
        {
            "node": ["node1", "node0", "node1"],
            "datagrams": [10, 2_000, 5],
            "sender_uid": [65534, 65534, 1001],
        }
    )
    finding = foreign_signal_finding(events)
    assert finding is not None
    assert finding.startswith("interference from outside the job: 2,015 datagrams")
    assert "uid 1001, 65534" in finding
    assert "node0 (2,000), node1 (15)" in finding


def test_no_datagrams_no_finding() -> None:
    empty = pd.DataFrame({"node": [], "datagrams": [], "sender_uid": []})
    assert foreign_signal_finding(empty) is None
