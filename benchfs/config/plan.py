"""Loading run configs, overrides, and sweeps.

A config file may give a list where one value is expected
(``transfer_size = ["64k", "1m"]``); each such list is a sweep axis and the
run covers the cartesian product. ``RunPlan`` is the file as given (after
overrides); ``expand_sweep`` turns it into validated ``SweepPoint``s.

Precedence: overrides > config file > defaults.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchfs.config.model import RunConfig
from benchfs.config.schema import allowed_range, is_daemon_key, kind_of, suggest
from benchfs.config.toml import parse_toml, read_config_text
from benchfs.errors import ConfigError

# Where an override came from, in errors: ``--set workload.transfer_size: ...``.
OVERRIDES = "--set"
# Points of one sweep: each is a run of its own, so this is weeks of runs.
MAX_SWEEP_POINTS = 10_000
_BOUNDS = {
    "finite_number",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "multiple_of",
}


@dataclass(frozen=True)
class Axis:
    """One swept key and its values, in the order given."""

    key: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class SweepPoint:
    """One run of a sweep: its position, the swept values, the full config."""

    index: int
    values: Mapping[str, Any]
    config: RunConfig

    def describe(self) -> str:
        """``workload.transfer_size=64k, cluster.chunk_size=1m`` (empty when no sweep)."""
        return ", ".join(f"{key}={value}" for key, value in self.values.items())


@dataclass(frozen=True)
class RunPlan:
    """A validated config file: the base config plus sweep axes.

    ``base`` uses the first value of every axis. Daemon axes (cluster and
    launcher settings) come first so that they change least often.
    """

    source: str
    data: Mapping[str, Any]
    axes: tuple[Axis, ...]
    base: RunConfig
    origins: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_sweep(self) -> bool:
        return bool(self.axes)


def load_config(path: Path | None) -> RunPlan:
    """Read and validate a TOML run config; None gives the defaults."""
    if path is None:
        return plan_from_dict({}, "defaults")
    return parse_config(read_config_text(path), str(path))


def parse_config(text: str, source: str) -> RunPlan:
    """Validate TOML text; ``source`` names it in errors."""
    return plan_from_dict(parse_toml(text, source), source)


def plan_from_dict(
    data: Mapping[str, Any], source: str, origins: Mapping[str, str] | None = None
) -> RunPlan:
    """Validate nested config data: the base point and every sweep value."""
    origins = dict(origins or {})
    axes = tuple(_ordered(_find_axes(data), source, origins))
    _check_sweep_size(axes, source, origins)
    base_data = _with_values(data, {axis.key: axis.values[0] for axis in axes})
    base = _validate(base_data, source, origins)
    for axis in axes:
        for index, value in enumerate(axis.values[1:], start=1):
            _validate(
                _with_values(base_data, {axis.key: value}), source, origins, (axis.key, index)
            )
    return RunPlan(source, copy.deepcopy(dict(data)), axes, base, origins)


def apply_overrides(plan: RunPlan, overrides: Mapping[str, Any]) -> RunPlan:
    """Set dotted keys (``{"workload.transfer_size": "1m"}``) over the plan.

    String values are read as on a command line: ``"64k,1m"`` for a single
    value is a sweep; a list key takes ``"write,read"``; a mapping key takes
    ``"k=v,k2=v2"``.
    """
    data = copy.deepcopy(dict(plan.data))
    origins = dict(plan.origins)
    for key, value in overrides.items():
        kind = kind_of(key)
        if kind is None:
            raise ConfigError(f"{OVERRIDES} {key}: unknown key{suggest(key)}")
        if kind == "section":
            raise ConfigError(f"{OVERRIDES} {key}: is a section; set one of its keys")
        _set(data, key, _from_text(key, kind, value) if isinstance(value, str) else value)
        origins[key] = OVERRIDES
    return plan_from_dict(data, plan.source, origins)


def expand_sweep(plan: RunPlan) -> list[SweepPoint]:
    """Every point of the sweep, the last axis varying fastest; one point
    (the base) when nothing is swept."""
    points: list[SweepPoint] = []
    for index, combo in enumerate(itertools.product(*(axis.values for axis in plan.axes))):
        values = {axis.key: value for axis, value in zip(plan.axes, combo, strict=True)}
        data = _with_values(plan.data, values)
        where = f"{plan.source}: sweep point {index} ({_describe(values)})"
        points.append(SweepPoint(index, values, _validate(data, where, plan.origins)))
    return points


def effective_config(config: RunConfig) -> dict[str, Any]:
    """Every key with its value, defaults included; sizes in bytes (JSON-ready)."""
    return config.model_dump(mode="json")


def daemon_settings(config: RunConfig) -> dict[str, Any]:
    """The settings the daemons are started with (flattened, dotted keys)."""
    flat = _flatten(effective_config(config))
    return {key: value for key, value in flat.items() if is_daemon_key(key)}


def needs_daemon_restart(previous: RunConfig, following: RunConfig) -> bool:
    """True when the two configs start daemons differently."""
    return daemon_settings(previous) != daemon_settings(following)


def _find_axes(data: Mapping[str, Any], prefix: str = "") -> Iterable[Axis]:
    for name, value in data.items():
        key = f"{prefix}{name}"
        kind = kind_of(key)
        if kind == "section" and isinstance(value, Mapping):
            yield from _find_axes(value, f"{key}.")
        elif _is_sweep(kind, value):
            yield Axis(key, tuple(value))


def _is_sweep(kind: str | None, value: Any) -> bool:
    """A list for a single value, or a list of lists for a list value."""
    if not isinstance(value, list):
        return False
    if kind == "scalar":
        return True
    return kind == "list" and bool(value) and all(isinstance(item, list) for item in value)


def _ordered(axes: Iterable[Axis], source: str, origins: Mapping[str, str]) -> list[Axis]:
    axes = list(axes)
    for axis in axes:
        if not axis.values:
            raise ConfigError(
                f"{_blame(axis.key, source, origins)}: empty list: a sweep needs at least one value"
            )
    return sorted(axes, key=lambda axis: not is_daemon_key(axis.key))  # stable sort


def _check_sweep_size(axes: Sequence[Axis], source: str, origins: Mapping[str, str]) -> None:
    """At most ``MAX_SWEEP_POINTS`` points, refused before any is validated
    (each is a run: a sweep beyond it would never end)."""
    points = math.prod(len(axis.values) for axis in axes)
    if points <= MAX_SWEEP_POINTS:
        return
    sizes = " x ".join(f"{len(axis.values):,} {axis.key}" for axis in axes)
    where = source if not any(k in origins for k in (a.key for a in axes)) else OVERRIDES
    raise ConfigError(
        f"{where}: a sweep of {points:,} points ({sizes}), more than the "
        f"{MAX_SWEEP_POINTS:,} one benchfs run may have: split it into several runs"
    )


def _with_values(data: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(dict(data))
    for key, value in values.items():
        _set(result, key, value)
    return result


def _set(data: dict[str, Any], key: str, value: Any) -> None:
    *sections, name = key.split(".")
    target = data
    for section in sections:
        child = target.get(section)
        if not isinstance(child, dict):
            child = target[section] = {}
        target = child
    target[name] = value


def _from_text(key: str, kind: str, text: str) -> Any:
    parts = [part.strip() for part in text.split(",")]
    if kind == "list":
        return [part for part in parts if part]
    if kind == "mapping":
        pairs = [part.partition("=") for part in parts if part]
        if any(not equals or not name for name, equals, _ in pairs):
            raise ConfigError(f"{OVERRIDES} {key}: expected 'name=value,...', got {text!r}")
        return {name.strip(): value.strip() for name, _, value in pairs}
    return parts if len(parts) > 1 else text


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, value in data.items():
        if kind_of(f"{prefix}{name}") == "section" and isinstance(value, Mapping):
            flat.update(_flatten(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def _describe(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in values.items())


def _validate(
    data: Mapping[str, Any],
    source: str,
    origins: Mapping[str, str],
    sweep_value: tuple[str, int] | None = None,
) -> RunConfig:
    try:
        return RunConfig.model_validate(data)
    except ValidationError as error:
        problems = [_problem(item, source, origins, sweep_value) for item in error.errors()]
        raise ConfigError("; ".join(problems)) from None


def _problem(
    item: Any, source: str, origins: Mapping[str, str], sweep_value: tuple[str, int] | None
) -> str:
    key = ".".join(str(part) for part in item["loc"]) or "(top level)"
    shown = key
    if sweep_value is not None and _within(key, sweep_value[0]):
        shown = f"{sweep_value[0]}[{sweep_value[1]}]{key[len(sweep_value[0]) :]}"
    kind = item["type"]
    given = f" (got {item['input']!r})" if "input" in item else ""
    if kind == "extra_forbidden":
        message = f"unknown key{suggest(key)}"
    elif kind in _BOUNDS and allowed_range(key):
        message = f"must be {allowed_range(key)}{given}"
    else:
        message = str(item["msg"]).removeprefix("Value error, ")
        if kind != "value_error" and not isinstance(item.get("input"), dict):
            message += given
    return f"{_blame(shown, source, origins, key)}: {message}"


def _blame(shown: str, source: str, origins: Mapping[str, str], key: str | None = None) -> str:
    """``FILE: KEY`` or ``--set KEY``: where the value at fault was given. A
    problem of a whole section (two keys that disagree) is blamed on the
    overrides inside it, if any."""
    key = key or shown
    where = next(
        (origins[k] for k in sorted(origins, key=len, reverse=True) if _within(key, k)), None
    )
    if where is None:
        inside = sorted(k for k in origins if _within(k, key) and origins[k] == OVERRIDES)
        if inside:
            return f"{OVERRIDES} {', '.join(inside)}: {shown}"
        where = source
    return f"{OVERRIDES} {shown}" if where == OVERRIDES else f"{where}: {shown}"


def _within(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(f"{prefix}.")
