//! JSON documents of the engine (the daemon's statistics and summary) as
//! Python objects.

use pyo3::prelude::*;

use super::error::BoundaryResult;

/// `json.loads(text)`.
pub(crate) fn json_loads<'py>(py: Python<'py>, text: &str) -> BoundaryResult<Bound<'py, PyAny>> {
    Ok(py.import("json")?.call_method1("loads", (text,))?)
}
