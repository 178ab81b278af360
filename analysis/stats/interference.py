"""Traffic from outside the job: datagrams another user sent to the daemons'
shared-memory wake-up sockets (``foreign_signal`` events; docs/TRANSPORT.md,
"The wake-up sockets"). Any local user can send them, and each wakes an idle
daemon, so a run that had them was not alone on its nodes."""

from __future__ import annotations

import pandas as pd

FOREIGN_SIGNAL = "foreign_signal"


def foreign_signal_finding(events: pd.DataFrame) -> str | None:
    """One sentence naming the nodes, the datagrams and their senders; None
    when there were none."""
    if events.empty or int(events["datagrams"].sum()) == 0:
        return None
    per_node = events.groupby("node", sort=True)["datagrams"].sum()
    nodes = ", ".join(f"{node} ({int(n):,})" for node, n in per_node.items())
    senders = sorted({int(u) for u in events["sender_uid"]})
    uids = ", ".join(str(u) for u in senders)
    return (
        f"interference from outside the job: {int(per_node.sum()):,} datagrams from "
        f"uid {uids} reached the daemons' shared-memory wake-up sockets, each waking an "
        f"idle daemon: {nodes}; another user on these nodes was sending them during the run"
    )
