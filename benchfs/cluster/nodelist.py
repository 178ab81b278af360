"""Slurm's compressed node lists (``node[01-03,7],gpu[1-2]``), expanded like
``scontrol show hostnames`` does.

Rules, taken from Slurm's hostlist.c:
- items are separated by commas (or whitespace) outside brackets;
- inside brackets, comma-separated numbers or ``lo-hi`` ranges;
- the width of ``lo`` sets the zero padding of every number in its range
  (``[08-10]`` gives 08 09 10, ``[8-10]`` gives 8 9 10);
- several bracket groups in one item are a cartesian product, the leftmost
  group varying slowest (``rack[1-2]-n[1-2]`` gives rack1-n1 rack1-n2 ...);
- order and duplicates are kept as written (so the counts of
  ``SLURM_TASKS_PER_NODE`` line up with the hosts; a sorted, deduplicated
  node set such as ClusterShell's ``NodeSet`` would not).

A list or a task count that would make more than ``MAX_HOSTS`` hosts is
refused before anything is expanded.
"""

from __future__ import annotations

import re

from benchfs.errors import HostfileError

# Slurm refuses ranges larger than this (MAX_RANGE); so do we, to keep a typo
# like ``node[1-99999999]`` from eating memory.
MAX_RANGE = 64 * 1024
# Hosts in one node list, hostfile or SLURM_TASKS_PER_NODE: beyond any machine
# (the largest have about 160,000 nodes), yet refused in well under a second.
MAX_HOSTS = 1 << 18

_RANGE = re.compile(r"^(\d{1,18})(?:-(\d{1,18}))?$")


def expand_slurm_nodelist(nodelist: str) -> list[str]:
    """Expand a Slurm node list into host names, in order."""
    items = _split_items(nodelist)
    total = 0
    for item in items:
        total += _count_item(item, nodelist)
        if total > MAX_HOSTS:
            raise HostfileError(
                f"node list {nodelist!r}: names more than {MAX_HOSTS:,} hosts (the limit)"
            )
    names: list[str] = []
    for item in items:
        names.extend(_expand_item(item, nodelist))
    return names


def _count_item(item: str, nodelist: str) -> int:
    """How many names ``item`` expands to, without expanding it."""
    count = 1
    while (start := item.find("[")) >= 0:
        end = item.index("]", start)
        ranges = _parse_ranges(item[start + 1 : end], nodelist)
        count *= sum(high - low + 1 for low, high, _ in ranges)
        if count > MAX_HOSTS:
            return count
        item = item[end + 1 :]
    return count


def _split_items(nodelist: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in nodelist:
        if char == "[":
            depth += 1
            if depth > 1:
                raise HostfileError(f"node list {nodelist!r}: nested '[' is not allowed")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostfileError(f"node list {nodelist!r}: ']' without '['")
        if depth == 0 and (char == "," or char.isspace()):
            if current:
                items.append("".join(current))
            current = []
            continue
        current.append(char)
    if depth != 0:
        raise HostfileError(f"node list {nodelist!r}: '[' without ']'")
    if current:
        items.append("".join(current))
    return items


def _expand_item(item: str, nodelist: str) -> list[str]:
    start = item.find("[")
    if start < 0:
        return [item]
    end = item.index("]", start)
    prefix, body, rest = item[:start], item[start + 1 : end], item[end + 1 :]
    suffixes = _expand_item(rest, nodelist) if rest else [""]
    return [
        prefix + number + suffix for number in _expand_ranges(body, nodelist) for suffix in suffixes
    ]


def _expand_ranges(body: str, nodelist: str) -> list[str]:
    return [
        f"{value:0{width}d}"
        for low, high, width in _parse_ranges(body, nodelist)
        for value in range(low, high + 1)
    ]


def _parse_ranges(body: str, nodelist: str) -> list[tuple[int, int, int]]:
    """``lo-hi`` ranges of a bracket group as (low, high, padding width)."""
    ranges: list[tuple[int, int, int]] = []
    for part in body.split(","):
        match = _RANGE.match(part.strip())
        if match is None:
            raise HostfileError(f"node list {nodelist!r}: bad range {part!r} in [{body}]")
        low_text, high_text = match.group(1), match.group(2)
        low = int(low_text)
        high = int(high_text) if high_text is not None else low
        if high < low:
            raise HostfileError(f"node list {nodelist!r}: range {part!r} runs backwards")
        if high - low + 1 > MAX_RANGE:
            raise HostfileError(f"node list {nodelist!r}: range {part!r} exceeds {MAX_RANGE} hosts")
        ranges.append((low, high, len(low_text)))
    return ranges


def parse_tasks_per_node(value: str) -> list[int]:
    """Expand Slurm's SLURM_TASKS_PER_NODE (``2(x3),1`` -> [2, 2, 2, 1])."""
    entries: list[tuple[int, int]] = []
    for part in value.split(","):
        match = re.fullmatch(r"\s*(\d{1,18})(?:\(x(\d{1,18})\))?\s*", part)
        if match is None:
            raise HostfileError(f"SLURM_TASKS_PER_NODE={value!r}: bad entry {part!r}")
        entries.append((int(match.group(1)), int(match.group(2) or 1)))
    if sum(repeat for _, repeat in entries) > MAX_HOSTS:
        raise HostfileError(
            f"SLURM_TASKS_PER_NODE={value!r}: names more than {MAX_HOSTS:,} hosts (the limit)"
        )
    return [count for count, repeat in entries for _ in range(repeat)]
