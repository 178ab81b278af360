"""iostat on every used node while the workload runs, and the stragglers it shows.

Step 6 of the flow (DESIGN.md): a node whose disk turns slow mid-run shows
in its r_await/w_await. Each host's iostat JSON goes to
``<run_dir>/iostat/<host>.json`` (the node name is the file name, as
``analysis.loaders.run`` reads it). iostat is an observer: when it cannot
start or its output cannot be read, the run goes on and a note says so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.loaders.iostat import IostatFormatError, parse_iostat_json
from analysis.stats.stragglers import find_stragglers, iostat_over_time
from benchfs.cluster.hostfile import Host
from benchfs.errors import BenchfsError
from benchfs.health.iostat_watch import IostatWatch, _complete_reports
from benchfs.launchers.base import Launcher

IOSTAT_DIR = "iostat"
# How long iostat may take to write its first report through the launcher,
# and one interval report after that. Only a guard against a stuck iostat.
_REPORT_DEADLINE_S = 30.0


class RunIostat:
    """One ``IostatWatch`` per host, started together and stopped together."""

    def __init__(
        self,
        hosts: Sequence[Host],
        launcher: Launcher,
        run_dir: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.directory = run_dir / IOSTAT_DIR
        self.watches = [
            IostatWatch(host, launcher, raw_output=self.directory / f"{host.name}.json", env=env)
            for host in hosts
        ]
        self.started: list[IostatWatch] = []
        self.notes: list[str] = []

    def start(self) -> None:
        """Start iostat on every host and wait until each is sampling (its
        since-boot report is out), so that the workload's window is covered."""
        for watch in self.watches:
            try:
                self.started.append(watch.start())
            except (BenchfsError, OSError) as error:
                self.notes.append(f"iostat not watched on {watch.host.name}: {error}")
        self._wait_for_reports(1, "no report")

    def stop(self) -> None:
        """Stop every watch once it has written at least one interval report
        after its since-boot one (a short workload still gets a sample); a
        host's output that was cut off keeps its complete reports."""
        self._wait_for_reports(2, "no interval report")
        started, self.started = self.started, []
        for watch in started:
            try:
                watch.stop()
            except (BenchfsError, OSError, ValueError) as error:
                self.notes.append(f"iostat on {watch.host.name} unreadable: {error}")
                continue
            path = watch.raw_output
            if path is None:
                continue
            text = path.read_text()
            try:
                parse_iostat_json(text, str(path))
            except IostatFormatError:
                path.write_text(_complete_reports(text))

    def _wait_for_reports(self, count: int, missing: str) -> None:
        end = time.monotonic() + _REPORT_DEADLINE_S  # one deadline for all hosts
        for watch in self.started:
            if not watch.wait_for_reports(count, max(0.0, end - time.monotonic())):
                self.notes.append(
                    f"iostat on {watch.host.name}: {missing} within {_REPORT_DEADLINE_S:.0f} s"
                )


def _host_frame(path: Path) -> pd.DataFrame:
    frame = parse_iostat_json(path.read_text(), str(path)).to_frame()
    if frame.empty:
        return frame
    stamps = pd.to_datetime(frame["timestamp"], utc=True, errors="coerce", format="ISO8601")
    frame["time_ns"] = stamps.dt.as_unit("ns").astype("int64").where(stamps.notna())
    return frame.rename(columns={"util_pct": "util"}).assign(node=path.stem)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def straggler_record(run_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """The manifest's ``stragglers`` record and one line per straggler."""
    directory = run_dir / IOSTAT_DIR
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
        record: dict[str, Any] = {
            "status": "not checked",
            "reason": "no iostat samples under iostat/",
            "unreadable": unreadable,
        }
        return record, []
    table = find_stragglers(iostat_over_time(pd.concat(frames, ignore_index=True)))
    nodes = [{key: _plain(value) for key, value in row.items()} for row in table.to_dict("records")]
    found = [node for node in nodes if node["verdict"] != "ok"]
    record = {
        "status": "checked",
        "stragglers": [node["node"] for node in found],
        "nodes": nodes,
        "unreadable": unreadable,
    }
    lines = [f"straggler: {node['node']}: {node['verdict']}" for node in found]
    return record, lines
