"""Limits the assessment compares figures with; defaults documented in docs/DIAGNOSE.md.

A TOML file overrides any of them, flat (``seq_read_min_MiB_s = 500``) or in
a ``[thresholds]`` table; unknown keys and non-numbers are errors naming the
file and the key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchfs.config.toml import parse_toml, read_config_text
from benchfs.errors import ConfigError


@dataclass(frozen=True)
class Thresholds:
    # Absolute limits: below a minimum or above a maximum is "degraded".
    seq_write_min_MiB_s: float = 100.0
    seq_read_min_MiB_s: float = 100.0
    rand_iops_min: float = 2000.0  # read + write IOPS of the 4 KiB 70/30 test
    rand_read_p99_max_ms: float = 20.0
    rand_write_p99_max_ms: float = 50.0
    fsync_iops_min: float = 50.0
    fsync_p99_max_ms: float = 100.0
    create_min_ops_s: float = 500.0
    stat_min_ops_s: float = 2000.0
    delete_min_ops_s: float = 500.0
    r_await_max_ms: float = 50.0
    w_await_max_ms: float = 100.0
    # Relative checks.
    # One direction this many times slower than the other: a warning, then degraded.
    asymmetry_ratio_warn: float = 4.0
    asymmetry_ratio: float = 16.0
    tail_ratio_warn: float = 20.0  # p99 / p50
    tail_ratio_degraded: float = 200.0
    bw_cv_warn: float = 0.5  # stdev / mean of bandwidth over time
    # Cross-node outliers: robust z = |x - median| / (1.4826 * MAD), and at least
    # this relative distance from the median, in the bad direction.
    outlier_z: float = 3.5  # the usual cut-off for the modified z-score (Iglewicz and Hoaglin)
    outlier_min_relative: float = 0.5
    # An outlier is a warning; this many times worse than the median makes it "degraded".
    outlier_degraded_factor: float = 10.0
    # Exclusion policy: never keep fewer nodes than this (or this fraction of them).
    min_nodes: int = 1
    min_node_fraction: float = 0.5

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


def threshold_keys() -> list[str]:
    return [item.name for item in dataclasses.fields(Thresholds)]


def thresholds_from_mapping(values: dict[str, Any], source: str) -> Thresholds:
    """Defaults overridden by ``values``; errors name ``source`` and the key."""
    known = {item.name: item for item in dataclasses.fields(Thresholds)}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(
                f"{source}: unknown threshold key {key!r} (known: {', '.join(sorted(known))})"
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{source}: threshold {key!r} must be a number, got {value!r}")
        if value < 0:
            raise ConfigError(f"{source}: threshold {key!r} must not be negative, got {value}")
        changes[key] = int(value) if known[key].type in (int, "int") else float(value)
    return dataclasses.replace(Thresholds(), **changes)


def load_thresholds(path: Path | None) -> Thresholds:
    """Defaults, or the defaults overridden by the TOML file at ``path``."""
    if path is None:
        return Thresholds()
    document = parse_toml(read_config_text(path, "thresholds file"), str(path))
    table = document.get("thresholds", document)
    if "thresholds" in document and len(document) > 1:
        extra = sorted(key for key in document if key != "thresholds")
        raise ConfigError(f"{path}: unknown key {extra[0]!r} beside [thresholds]")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: 'thresholds' must be a table")
    return thresholds_from_mapping(table, str(path))
