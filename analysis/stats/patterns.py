"""The time pattern of a slow node (``analysis.verdicts.Pattern``), one
vocabulary for the live view, the engine's traces and iostat:

- whole: slow from the start to the end;
- onset: slow from a later onset to the end (never "passing");
- recovered: one slow span that ended before the phase did;
- intermittent: two spans or more, each with its interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.verdicts import Interval, Pattern


@dataclass(frozen=True)
class Said:
    pattern: Pattern
    onset_s: float | None
    intervals: list[Interval]

    def words(self) -> str:
        """``slow from t+10 s to the end``, as a sentence part."""
        spans = [_span(interval) for interval in self.intervals]
        if self.pattern == "whole":
            return "slow from the start to the end"
        if self.pattern == "onset":
            return f"slow from {spans[0]}"
        if self.pattern == "recovered":
            return f"slow {spans[0]}, then recovered"
        if self.pattern == "intermittent":
            return f"slow in {len(spans)} intervals: {', '.join(spans)}"
        return "not slow"

    def short(self) -> str:
        """``onset (t+10 s to the end)``: the pattern and its spans, for a table cell."""
        if not self.intervals:
            return self.pattern
        return f"{self.pattern} ({', '.join(_span(interval) for interval in self.intervals)})"


def _span(interval: Interval) -> str:
    start = f"t+{interval.start_s:.0f} s"
    if interval.end_s is None:
        return f"{start} to the end"
    return f"{start} to t+{interval.end_s:.0f} s"


def pattern_of(
    spans: Sequence[tuple[float, float | None]], first_s: float, interval_s: float
) -> Said:
    """The pattern of ``spans`` (start, end or None: to the end) in a phase whose
    first judged interval began at ``first_s``; a span beginning within two
    intervals of it began with the phase."""
    intervals = [Interval(start_s=round(start, 1), end_s=None if end is None else round(end, 1))
                 for start, end in sorted(spans)]  # fmt: skip
    if not intervals:
        return Said("none", None, [])
    onset = intervals[0].start_s
    if len(intervals) > 1:
        return Said("intermittent", onset, intervals)
    (only,) = intervals
    if only.end_s is not None:
        return Said("recovered", onset, intervals)
    if onset <= first_s + 2 * interval_s:
        return Said("whole", onset, intervals)
    return Said("onset", onset, intervals)


# Slow in at least this share of the buckets from its first slow one on: slow to the end.
TO_THE_END_SHARE = 0.9


def bucket_pattern(starts: Sequence[float], slow: Sequence[bool], bucket_s: float) -> Said:
    """The pattern of time buckets (their start times and whether the node was slow
    in each): runs of slow buckets, two runs one healthy bucket apart taken as one;
    slow to the end when the last run reaches the last bucket, as one span when
    the node was slow in nearly every bucket from its first slow one on."""
    order = np.argsort(np.asarray(starts, dtype=np.float64), kind="stable")
    times = [float(starts[i]) for i in order]
    flags = [bool(slow[i]) for i in order]
    if not any(flags):
        return Said("none", None, [])
    runs: list[list[int]] = []
    for index, flag in enumerate(flags):
        if not flag:
            continue
        if runs and index - runs[-1][1] <= 2:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    first = runs[0][0]
    tail = flags[first:]
    last = len(flags) - 1
    if runs[-1][1] == last and (len(runs) == 1 or sum(tail) >= TO_THE_END_SHARE * len(tail)):
        spans: list[tuple[float, float | None]] = [(times[first], None)]
    else:
        spans = [(times[a], None if b == last else times[b] + bucket_s) for a, b in runs]
    return pattern_of(spans, times[0], bucket_s / 4)
