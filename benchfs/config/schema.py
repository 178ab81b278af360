"""What kind of value each dotted key of the run config holds.

Loading, overrides and sweeps need to know whether a list in the input is a
sweep (a list given for a single value) or the value itself (``phases``).
"""

from __future__ import annotations

import difflib
from typing import Any, Literal, get_origin

import annotated_types
from pydantic import BaseModel, BeforeValidator
from pydantic.fields import FieldInfo

from benchfs.config.model import RunConfig
from benchfs.config.sizes import format_size, parse_size

Kind = Literal["section", "scalar", "list", "mapping"]


def _kinds(model: type[BaseModel], prefix: str = "") -> dict[str, Kind]:
    kinds: dict[str, Kind] = {}
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            kinds[key] = "section"
            kinds.update(_kinds(annotation, f"{key}."))
        elif get_origin(annotation) is list:
            kinds[key] = "list"
        elif get_origin(annotation) is dict:
            kinds[key] = "mapping"
        else:
            kinds[key] = "scalar"
    return kinds


KINDS: dict[str, Kind] = _kinds(RunConfig)


def kind_of(key: str) -> Kind | None:
    """The kind of a dotted key (``workload.transfer_size``), None if unknown."""
    return KINDS.get(key)


def suggest(key: str) -> str:
    """`` (did you mean 'x.y'?)`` for a misspelt key, or an empty string."""
    parent = key.rpartition(".")[0]
    siblings = [k for k in KINDS if k.rpartition(".")[0] == parent]
    close = difflib.get_close_matches(key, siblings, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _field(key: str) -> FieldInfo | None:
    model: Any = RunConfig
    field = None
    for part in key.split("."):
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = model.model_fields.get(part)
        if field is None:
            return None
        model = field.annotation
    return field


def allowed_range(key: str) -> str | None:
    """``between 512 and 1g, a multiple of 512`` for a bounded number key, else None."""
    field = _field(key)
    if field is None:
        return None
    is_size = any(isinstance(m, BeforeValidator) and m.func is parse_size for m in field.metadata)

    def shown(value: Any) -> str:
        if is_size and isinstance(value, int) and value >= 1024:
            return format_size(value)
        return f"{value:g}" if isinstance(value, float) else str(value)

    low: Any = None
    high: Any = None
    step: Any = None
    low_open = False
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            low, low_open = item.ge, False
        elif isinstance(item, annotated_types.Gt) and low is None:
            low, low_open = item.gt, True
        elif isinstance(item, annotated_types.Le):
            high = item.le
        elif isinstance(item, annotated_types.MultipleOf):
            step = item.multiple_of
    if low is None and high is None:
        return None
    if high is None:
        text = f"{'above' if low_open else 'at least'} {shown(low)}"
    elif low is None:
        text = f"at most {shown(high)}"
    elif low_open:
        text = f"above {shown(low)} and at most {shown(high)}"
    else:
        text = f"between {shown(low)} and {shown(high)}"
    return text + (f", a multiple of {shown(step)}" if step else "")


def is_daemon_key(key: str) -> bool:
    """Keys whose change needs the daemons restarted: cluster and launcher
    settings, except the deadlines that only the orchestrator uses."""
    return key.startswith(("cluster.", "launcher.")) and not key.startswith("cluster.deadlines")
