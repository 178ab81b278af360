"""The stragglers of a run: nodes whose disk turned slow while the workload ran.

Step 6 of the flow (docs/ARCHITECTURE.md): iostat watches every used node
(``benchfs.tools.iostat.IostatWatches``, one ``iostat/<node>.json`` each);
a node whose r_await/w_await rose far above the others' shows here. An
observer: a host whose output cannot be read is named, the run goes on.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.layout import RunLayout
from analysis.loaders.iostat import IostatFormatError, iostat_frame
from analysis.manifest import StragglersChecked, StragglersNotChecked, StragglersRecord
from analysis.stats.stragglers import find_stragglers, iostat_over_time


def _host_frame(path: Path) -> pd.DataFrame:
    frame = iostat_frame(path.read_text(), str(path))
    if frame.empty:
        return frame
    return frame.rename(columns={"util_pct": "util"}).assign(node=path.stem)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def straggler_record(run_dir: Path) -> tuple[StragglersRecord, list[str]]:
    """The manifest's ``stragglers`` record and one line per straggler."""
    directory = RunLayout(run_dir).iostat_dir
    files = sorted(directory.glob("*.json")) if directory.is_dir() else []
    frames = []
    unreadable = []
    for path in files:
        try:
            frames.append(_host_frame(path))
        except (IostatFormatError, ValueError, OSError) as error:
            unreadable.append(f"{path.name}: {error}")
    frames = [frame for frame in frames if not frame.empty]
    if not frames:
        reason = "no iostat samples under iostat/"
        return StragglersNotChecked(reason=reason, unreadable=unreadable), []
    table = find_stragglers(iostat_over_time(pd.concat(frames, ignore_index=True)))
    nodes = [{key: _plain(value) for key, value in row.items()} for row in table.to_dict("records")]
    found = [node for node in nodes if node["verdict"] != "ok"]
    names = [node["node"] for node in found]
    record = StragglersChecked(stragglers=names, nodes=nodes, unreadable=unreadable)
    lines = [f"straggler: {node['node']}: {node['verdict']}" for node in found]
    return record, lines
