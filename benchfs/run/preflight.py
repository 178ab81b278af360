"""Step 2-3 of the flow (DESIGN.md, "The flow"): check the nodes before the
daemons start and leave out the slow ones, with the evidence recorded.

``preflight_step`` is the one place `benchfs run` calls for this. Today it
keeps every host and records that no preflight ran, so the manifest never
suggests the nodes were checked when they were not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchfs.cluster.hostfile import Host
from benchfs.config.model import RunConfig
from benchfs.launchers.base import Launcher
from benchfs.results.manifest import ExcludedHost


@dataclass(frozen=True)
class PreflightOutcome:
    """The hosts to run on, those left out and why, and the manifest record."""

    hosts: list[Host]
    excluded: list[ExcludedHost] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)


def preflight_step(
    config: RunConfig, hosts: Sequence[Host], launcher: Launcher, run_dir: Path
) -> PreflightOutcome:
    """Decide which hosts the run uses; raw output belongs in ``run_dir/preflight``."""
    if not config.preflight.enabled:
        record = {"status": "not run", "reason": "preflight.enabled is false"}
    else:
        record = {
            "status": "not run",
            "reason": "no node measurement in benchfs run: every host is used; "
            "`benchfs diagnose --nodes ...` measures them",
        }
    return PreflightOutcome(hosts=list(hosts), record=record)
