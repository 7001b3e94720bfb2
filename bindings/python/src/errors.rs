//! Core errors as Python exceptions.
//!
//! The exception classes live in Python (`tinystore/errors.py`), because
//! `InvalidError` is also a `ValueError`, which a class made in Rust cannot
//! be. This module only hands the core's kind, message, bucket and path to
//! the factory there.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tinystore::{Error, ErrorKind};

static FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python exception for a core error: the subclass of its kind, with
/// `.code`, `.bucket` and `.path` set.
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let factory = match FACTORY.import(py, "tinystore.errors", "_from_native") {
        Ok(f) => f,
        Err(err) => return err,
    };
    match factory.call1((e.kind().code(), e.to_string(), e.message(), e.bucket(), e.path())) {
        Ok(exc) => PyErr::from_value(exc),
        Err(err) => err,
    }
}

/// A closure mapping a core error for `map_err`.
pub fn py_err(py: Python<'_>) -> impl Fn(Error) -> PyErr + '_ {
    move |e| to_py(py, e)
}

/// Bad input found by the glue (a wrong Python type): `Invalid`.
pub fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Invalid, message)
}

/// A stored value that does not read as the bucket's type: `Corrupt`.
pub fn corrupt(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Corrupt, message)
}

/// Names a Python exception raised by a codec as a core error of `kind`,
/// keeping its text, so that it gets the bucket and path like every other.
pub fn from_codec(py: Python<'_>, kind: ErrorKind, err: PyErr) -> Error {
    let text = err.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    Error::new(kind, text)
}
