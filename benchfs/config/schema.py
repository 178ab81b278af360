"""What kind of value each dotted key of the run config holds.

Loading, overrides and sweeps need to know whether a list in the input is a
sweep (a list given for a single value) or the value itself (``phases``).
"""

from __future__ import annotations

import difflib
from typing import Literal, get_origin

from pydantic import BaseModel

from benchfs.config.model import RunConfig

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


def is_daemon_key(key: str) -> bool:
    """Keys whose change needs the daemons restarted: cluster and launcher
    settings, except the deadlines that only the orchestrator uses."""
    return key.startswith(("cluster.", "launcher.")) and not key.startswith("cluster.deadlines")
