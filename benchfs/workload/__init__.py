"""The IOR-style workload: MPI ranks that drive the engine, and its summary."""

from benchfs.workload.spec import WorkloadSpec, workload_spec
from benchfs.workload.summary import RankRow, WorkloadParameters, summarize

__all__ = ["RankRow", "WorkloadParameters", "WorkloadSpec", "summarize", "workload_spec"]
