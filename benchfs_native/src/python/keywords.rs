//! Keyword arguments that cross the boundary as one value: a function
//! declared with `**arguments` gets them as one dict, read into a struct
//! declared with [`keyword_struct!`], where each name, type and default is
//! written once.

use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::error::BoundaryResult;

/// A struct read from a dict of keyword arguments, and the names it takes.
pub(crate) trait Keywords {
    const NAMES: &'static [&'static str];
}

/// Declares a `#[derive(FromPyObject)]` struct read from a dict's items
/// (`#[pyo3(default = ...)]` on a field for a key Python may omit) and its
/// [`Keywords::NAMES`], the field names.
macro_rules! keyword_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident $(<$lt:lifetime>)? {
            $($(#[$field_meta:meta])* $field_vis:vis $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(pyo3::FromPyObject)]
        #[pyo3(from_item_all)]
        $vis struct $name $(<$lt>)? {
            $($(#[$field_meta])* $field_vis $field: $ty,)*
        }

        impl $(<$lt>)? $crate::python::keywords::Keywords for $name $(<$lt>)? {
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];
        }
    };
}
pub(crate) use keyword_struct;

/// `T` from the keyword arguments `function` got: as Python would for a
/// signature that lists them, an unknown or missing name is a `TypeError`
/// naming it, and a value of the wrong type an error naming its key.
pub(crate) fn keyword_arguments<'py, T>(
    py: Python<'py>,
    function: &str,
    given: Option<&Bound<'py, PyDict>>,
) -> BoundaryResult<T>
where
    T: Keywords + for<'a> FromPyObject<'a, 'py>,
{
    let given = given.cloned().unwrap_or_else(|| PyDict::new(py));
    for key in given.keys() {
        let known = key.extract::<&str>().is_ok_and(|k| T::NAMES.contains(&k));
        if !known {
            return Err(PyTypeError::new_err(format!(
                "{function}() got an unexpected keyword argument {}",
                key.repr()?
            ))
            .into());
        }
    }
    given
        .as_any()
        .extract::<T>()
        .map_err(|e| name_the_key(py, function, e.into()).into())
}

/// The derived extraction's error, said as the function's: a missing key
/// (its `KeyError`) as Python says a missing argument, a failed field
/// ("failed to extract field Struct.key", the cause beside it) as the
/// cause's type with both messages in one.
fn name_the_key(py: Python<'_>, function: &str, e: PyErr) -> PyErr {
    if e.is_instance_of::<PyKeyError>(py) {
        return PyTypeError::new_err(format!(
            "{function}() missing required keyword argument: {}",
            e.value(py)
        ));
    }
    let Some(cause) = e.cause(py) else {
        return e;
    };
    let message = format!("{function}(): {}: {}", e.value(py), cause.value(py));
    cause
        .get_type(py)
        .call1((message,))
        .map(PyErr::from_value)
        .unwrap_or(e)
}
