"""The workload modes of a point, one registered class each
(``benchfs.run.workloads.base``): BenchFS's own ranks (``ranks``, and
IO500's phases by them, ``suite``), a tool with the user's arguments
(``tool``), IO500 by IOR and mdtest (``suite-ior``) or by the io500 binary
(``suite-io500``). Importing the package registers them."""

from benchfs.run.workloads import io500_binary, ranks, suite_tools, tool
from benchfs.run.workloads.base import (
    Point,
    RunFailed,
    Summary,
    Workload,
    register_workload,
    workload_class,
    workload_for,
    workload_names,
)

__all__ = [
    "Point",
    "RunFailed",
    "Summary",
    "Workload",
    "io500_binary",
    "ranks",
    "register_workload",
    "suite_tools",
    "tool",
    "workload_class",
    "workload_for",
    "workload_names",
]
