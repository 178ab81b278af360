//! Python arguments to engine values: ranges checked here, each error
//! naming the argument as the caller spelled it.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use super::error::{BoundaryError, BoundaryResult};
use crate::membership::Expected;
use crate::trace::TraceConfig;

/// A Python int in `0..=max`, else `ValueError` (`TypeError` for what is
/// no int) naming the argument.
pub(crate) fn int_arg(obj: &Bound<'_, PyAny>, name: &str, max: u64) -> BoundaryResult<u64> {
    let out_of_range =
        || BoundaryError::argument(format!("{name} must be between 0 and {max}, got {obj}"));
    match obj.extract::<i64>() {
        Ok(v) => u64::try_from(v)
            .ok()
            .filter(|&v| v <= max)
            .ok_or_else(out_of_range),
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => Err(out_of_range()),
        Err(e) if e.is_instance_of::<PyTypeError>(obj.py()) => {
            Err(PyTypeError::new_err(format!("{name} must be an int, got {}", obj.repr()?)).into())
        }
        Err(e) => Err(e.into()),
    }
}

/// `v` as an unsigned number, else `ValueError` naming the argument.
pub(crate) fn positive(v: i64, name: &str) -> BoundaryResult<u64> {
    u64::try_from(v)
        .map_err(|_| BoundaryError::argument(format!("{name} must not be negative, got {v}")))
}

/// `v` as a `usize` (saturating), else `ValueError` naming the argument.
pub(crate) fn positive_usize(v: i64, name: &str) -> BoundaryResult<usize> {
    Ok(usize::try_from(positive(v, name)?).unwrap_or(usize::MAX))
}

/// `v` as a `u32`, else `ValueError` naming the argument.
pub(crate) fn u32_arg(v: i64, name: &str) -> BoundaryResult<u32> {
    u32::try_from(v).map_err(|_| {
        BoundaryError::argument(format!(
            "{name} must be between 0 and {}, got {v}",
            u32::MAX
        ))
    })
}

/// Longest deadline or duration accepted (one week): a longer one is a
/// mistake, and the engine's deadlines stay far from `Instant` overflow.
pub(crate) const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// A number of seconds in `0..=MAX_SECONDS` (`allow_zero`) or
/// `(0, MAX_SECONDS]`, else `ValueError` naming the argument.
fn bounded_seconds(v: f64, name: &str, allow_zero: bool) -> BoundaryResult<Duration> {
    let low_ok = if allow_zero { v >= 0.0 } else { v > 0.0 };
    if !(low_ok && v <= MAX_SECONDS) {
        let low = if allow_zero { "between 0" } else { "above 0" };
        return Err(BoundaryError::argument(format!(
            "{name} must be {low} and at most {MAX_SECONDS} seconds (one week), got {v}"
        )));
    }
    Duration::try_from_secs_f64(v)
        .map_err(|_| BoundaryError::argument(format!("{name} is not a number of seconds: {v}")))
}

/// A positive number of seconds, at most [`MAX_SECONDS`].
pub(crate) fn seconds(v: f64, name: &str) -> BoundaryResult<Duration> {
    bounded_seconds(v, name, false)
}

/// A number of seconds, 0 allowed, at most [`MAX_SECONDS`].
pub(crate) fn seconds_or_zero(v: f64, name: &str) -> BoundaryResult<Duration> {
    bounded_seconds(v, name, true)
}

/// A daemon count, `1..=MAX_NODES`.
pub(crate) fn node_count(nodes: i64) -> BoundaryResult<u32> {
    let max = crate::placement::MAX_NODES;
    u32::try_from(nodes)
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            BoundaryError::argument(format!("nodes must be between 1 and {max}, got {nodes}"))
        })
}

/// The trace settings of `trace_dir`, `node` and `node_id` (no trace
/// without a directory; the node name and id are checked anyway).
pub(crate) fn trace_config(
    trace_dir: Option<PathBuf>,
    node: &str,
    node_id: i64,
) -> BoundaryResult<Option<TraceConfig>> {
    let node_id = u16::try_from(node_id).map_err(|_| {
        BoundaryError::argument(format!(
            "node_id must be between 0 and 65535, got {node_id}"
        ))
    })?;
    crate::trace::writer::validate_node(node)?;
    Ok(trace_dir.map(|dir| TraceConfig {
        dir,
        node: node.to_owned(),
        node_id,
    }))
}

/// `expected_nodes`: a count, or a non-empty list of node names.
pub(crate) fn expected_nodes(obj: &Bound<'_, PyAny>) -> BoundaryResult<Expected> {
    if obj.is_instance_of::<PyBool>() {
        return Err(BoundaryError::argument(
            "expected_nodes must be a count or a list of node names",
        ));
    }
    if let Ok(n) = obj.extract::<i64>() {
        let n = usize::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| {
            BoundaryError::argument(format!("expected_nodes must be at least 1, got {n}"))
        })?;
        return Ok(Expected::Count(n));
    }
    if obj.is_instance_of::<PyString>() {
        return Err(BoundaryError::argument(
            "expected_nodes must be a count or a list of node names, not a string",
        ));
    }
    let names: Vec<String> = obj.extract()?;
    if names.is_empty() {
        return Err(BoundaryError::argument("expected_nodes is an empty list"));
    }
    Ok(Expected::Names(names))
}
