//! `benchfs_native.placement_owner`, `metadata_owner`, `chunk_loads`: the
//! engine's placement, for analyses that need to know where data went.

use pyo3::prelude::*;

use super::args::node_count;
use super::error::BoundaryResult;
use crate::placement::Placement;

/// The node that holds chunk ``chunk`` of ``path`` among ``nodes`` daemons.
#[pyfunction]
pub(crate) fn placement_owner(path: &str, chunk: u64, nodes: i64) -> BoundaryResult<u32> {
    Ok(Placement::new(node_count(nodes)?)?.chunk_owner(path, chunk))
}

/// The node that holds the metadata of ``path`` among ``nodes`` daemons.
#[pyfunction]
pub(crate) fn metadata_owner(path: &str, nodes: i64) -> BoundaryResult<u32> {
    Ok(Placement::new(node_count(nodes)?)?.metadata_owner(path))
}

/// Chunks per node of ``files`` (``(path, chunk count)`` pairs).
#[pyfunction]
pub(crate) fn chunk_loads(
    py: Python<'_>,
    files: Vec<(String, u64)>,
    nodes: i64,
) -> BoundaryResult<Vec<u64>> {
    let p = Placement::new(node_count(nodes)?)?;
    Ok(py.detach(|| p.chunk_loads(files.iter().map(|(f, n)| (f.as_str(), *n)))))
}
