"""The validated run configuration, overrides and sweeps (see docs/CONFIG.md)."""

from benchfs.config.metadata import MetadataConfig
from benchfs.config.model import (
    ClusterConfig,
    Deadlines,
    LauncherConfig,
    MountConfig,
    OutputConfig,
    PreflightConfig,
    PreflightThresholds,
    RunConfig,
    WorkloadConfig,
)
from benchfs.config.plan import (
    Axis,
    RunPlan,
    SweepPoint,
    apply_overrides,
    daemon_settings,
    effective_config,
    expand_sweep,
    load_config,
    needs_daemon_restart,
    parse_config,
    plan_from_dict,
)
from benchfs.config.sizes import format_size, parse_size
from benchfs.config.suite import SuiteConfig, SuiteSizes

__all__ = [
    "Axis",
    "ClusterConfig",
    "Deadlines",
    "LauncherConfig",
    "MetadataConfig",
    "MountConfig",
    "OutputConfig",
    "PreflightConfig",
    "PreflightThresholds",
    "RunConfig",
    "RunPlan",
    "SuiteConfig",
    "SuiteSizes",
    "SweepPoint",
    "WorkloadConfig",
    "apply_overrides",
    "daemon_settings",
    "effective_config",
    "expand_sweep",
    "format_size",
    "load_config",
    "needs_daemon_restart",
    "parse_config",
    "parse_size",
    "plan_from_dict",
]
