//! The scope of a native call: every read and write of a bucket, counters,
//! a quota or a once takes an optional last argument, `scope`, which is
//! None (the store itself), a `Tx` or a `View`, and runs the core's one
//! operation for it ([`tinystore::Scope`]).
//!
//! A call on the store or in a view releases the GIL while it runs, as
//! every blocking call does. A call inside a transaction runs on this
//! thread holding the GIL: it takes microseconds and crosses no thread, and
//! releasing the GIL would cost more than the call. A thread that holds the
//! session's lock never needs the GIL, so waiting for it with the GIL held
//! cannot deadlock. A clear or a page, which may take longer, releases it.

use pyo3::prelude::*;
use tinystore::Scope;

use crate::errors::{invalid, py_err, to_py};
use crate::tx::{Tx, View};

/// The core's scope for a call's `scope` argument.
pub(crate) fn scope_of<'a>(py: Python<'_>, scope: Option<&'a Bound<'_, PyAny>>) -> PyResult<Scope<'a>> {
    let Some(s) = scope.filter(|s| !s.is_none()) else {
        return Ok(Scope::Direct);
    };
    if let Ok(tx) = s.cast::<Tx>() {
        return Ok(Scope::Tx(&tx.get().session));
    }
    if let Ok(view) = s.cast::<View>() {
        return Ok(Scope::View(&view.get().snap));
    }
    Err(to_py(py, invalid("scope must be None, a Tx or a View")))
}

/// How long a call may take: a `Long` one releases the GIL in every scope.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Takes {
    Short,
    Long,
}

/// Runs `f`, a call in `scope`, releasing the GIL unless it is a short
/// call inside a transaction.
pub(crate) fn run_in<T: Send>(
    py: Python<'_>,
    scope: Scope<'_>,
    takes: Takes,
    f: impl FnOnce() -> tinystore::Result<T> + Send,
) -> PyResult<T> {
    let out = match scope {
        Scope::Tx(_) if takes == Takes::Short => f(),
        _ => py.detach(f),
    };
    out.map_err(py_err(py))
}

/// Runs `f`, a short call, in the scope of a call's `scope` argument.
pub(crate) fn in_scope<T: Send>(
    py: Python<'_>,
    scope: Option<&Bound<'_, PyAny>>,
    f: impl FnOnce(Scope<'_>) -> tinystore::Result<T> + Send,
) -> PyResult<T> {
    let scope = scope_of(py, scope)?;
    run_in(py, scope, Takes::Short, || f(scope))
}
