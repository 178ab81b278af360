"""Byte sizes as people write them for IOR: ``4096``, ``4k``, ``1m``, ``1MiB``.

Suffixes are binary, as in IOR: k/K/KiB = 1024, m/M/MiB = 1024**2, g/G/GiB,
t/T/TiB. ``KB``/``MB`` are refused: they read as decimal to some people and
binary to others, and a benchmark must not guess.
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+)\s*(?:([kmgtKMGT])(iB)?)?\s*$")
_DECIMAL_LOOKALIKE = re.compile(r"^\s*(\d+)\s*([kmgtKMGT])[bB]\s*$")


def parse_size(value: object) -> int:
    """Bytes from an int or a size string; ValueError with the reason otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size, got {value!r}")
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a size such as 4096, '4k' or '1MiB', got {value!r}")
    match = _SIZE.match(value)
    if match is None:
        lookalike = _DECIMAL_LOOKALIKE.match(value)
        if lookalike:
            number, unit = lookalike.group(1), lookalike.group(2).lower()
            raise ValueError(
                f"ambiguous size {value!r}: write '{number}{unit}' or "
                f"'{number}{unit.upper()}iB' (binary units)"
            )
        raise ValueError(f"bad size {value!r}: expected e.g. 4096, '4k', '1m', '1MiB', '2g'")
    number, unit = int(match.group(1)), (match.group(2) or "").lower()
    return number * _UNITS[unit]


def format_size(size: int) -> str:
    """Shortest exact IOR-style spelling: 1048576 -> '1m', 1536 -> '1536'."""
    for suffix in ("t", "g", "m", "k"):
        unit = _UNITS[suffix]
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)
