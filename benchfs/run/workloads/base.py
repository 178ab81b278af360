"""What a workload mode is, what it works with, and the registry that
finds the one a point's config selects.

A mode is one registered class (``@register_workload``). ``run_point``
(``benchfs.run.orchestrate``) calls it in the flow's order: ``plan``
before anything starts (a missing tool is the first thing heard of),
``fit`` to the free space, ``prepare`` once the target serves, ``run``
with the point's watches polled, ``summarise`` into
``workload/summary.json``, and ``record`` and ``clean_up`` on every exit.
What a mode needs of the point is in one ``Point``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

from analysis.layout import RunLayout
from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.config.model import RunConfig
from benchfs.errors import BenchfsError
from benchfs.launchers.base import Launcher
from benchfs.registry import Registry
from benchfs.results.manifest import ExcludedHost, ManifestRecorder
from benchfs.run.cluster import Cluster
from benchfs.run.observer import RunObserver
from benchfs.run.target import Target
from benchfs.run.watch import Watches
from benchfs.tools.iostat import IostatWatches

Summary = dict[str, Any]
# A config fitted to the free space, and the note that says what was lowered.
Fitted = tuple[RunConfig, str | None]


class RunFailed(BenchfsError):
    """A run ended without results; names the cause and the results directory."""


@dataclass
class Point:
    """One sweep point as its workload sees it, once its target serves."""

    index: int
    config: RunConfig  # fitted to the free space
    life: Lifecycle
    cluster: Cluster
    hosts: list[Host]
    launcher: Launcher
    layout: RunLayout
    record: ManifestRecorder
    observer: RunObserver
    env: Mapping[str, str]
    target: Target
    # The point's private state: the ranks' spec and progress, a tool's step logs.
    state_dir: Path
    # Started before the workload's processes, polled by its wait loop, stopped on every exit.
    watches: Watches = field(default_factory=Watches)
    # iostat on every host (one of ``watches``): the live view reads its reports.
    iostat: IostatWatches | None = None
    notes: list[str] = field(default_factory=list)
    # A straggler the live view leaves out of the sweep's next points (live.straggler = exclude).
    on_exclude: Callable[[ExcludedHost], None] | None = None


class Workload(ABC):
    """One mode of a point's workload."""

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def selects(cls, config: RunConfig) -> bool:
        """Whether ``config`` asks for this mode (exactly one mode does)."""

    @classmethod
    @abstractmethod
    def plan(cls, config: RunConfig, seed: int) -> Self:
        """The mode for ``config``, its tools found: before anything starts.
        ``seed`` is the point's own (``benchfs.workload.spec.run_seed``)."""

    def record_plan(self, record: ManifestRecorder, config: RunConfig) -> None:
        """What will run, into the manifest at the start and after ``fit``."""
        return None  # most modes: nothing before they run

    def fit(self, config: RunConfig, ranks: int, launcher: Launcher) -> Fitted:
        """The config with its sizes lowered to the free space, and a note saying so."""
        return config, None

    @abstractmethod
    def prepare(self, point: Point) -> None:
        """The workload's directories and files; its watches added to ``point.watches``."""

    @abstractmethod
    def run(self, point: Point) -> None:
        """Start its processes and wait until they end, polling ``point.watches``."""

    @abstractmethod
    def summarise(self, point: Point) -> Summary:
        """Write and return ``workload/summary.json``."""

    def check(self, summary: Summary) -> None:
        """Raise ``RunFailed`` when the summary shows the workload failed."""
        return None  # most modes: a summary is a success

    def partial_summary(self, point: Point) -> tuple[Summary | None, list[str]]:
        """After a failure: the summary of what finished, and notes saying so."""
        return None, []

    @abstractmethod
    def record(self, point: Point) -> None:
        """What ran and where, into the manifest (on every exit, after ``run``)."""

    def clean_up(self, point: Point) -> list[str]:
        """Remove the workload's files (unless ``workload.keep_files``); notes
        for what could not be removed. On every exit, before the mounts stop."""
        return []


_WORKLOADS: Registry[type[Workload]] = Registry("workload mode")
W = TypeVar("W", bound=type[Workload])


def register_workload(cls: W) -> W:
    """Class decorator: make ``cls`` a mode ``workload_for`` may select."""
    _WORKLOADS.register(cls)
    return cls


def workload_names() -> list[str]:
    """Names of every registered mode, sorted."""
    return _WORKLOADS.names()


def workload_class(config: RunConfig) -> type[Workload]:
    """The one registered mode ``config`` selects."""
    chosen = [cls for cls in _WORKLOADS if cls.selects(config)]
    if len(chosen) != 1:
        names = ", ".join(cls.name for cls in chosen) or "none"
        raise RuntimeError(f"the config selects {len(chosen)} workload modes ({names}), not one")
    return chosen[0]


def workload_for(config: RunConfig, seed: int) -> Workload:
    """The mode ``config`` selects, planned (its tools found)."""
    return workload_class(config).plan(config, seed)
