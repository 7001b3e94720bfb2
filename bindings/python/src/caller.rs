//! The caller's context (KV-16, KV-11): the transactions and runs of once
//! the running task or thread is inside, which the package keeps in the
//! `tinystore._tx_marks.caller` context variable (so it follows a block
//! across its awaits and into the tasks it starts) and this module hands to
//! the core with every call that may wait for the writer. The core decides
//! whether the call would wait for its own caller, and says so.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::once::Claim;
use crate::tx::Tx;

/// The transactions and runs of once a task is inside: a value of the
/// `tinystore._tx_marks.caller` context variable.
#[pyclass(frozen, module = "tinystore._native")]
pub struct CallerContext(pub(crate) tinystore::CallerContext);

#[pymethods]
impl CallerContext {
    /// A context inside nothing.
    #[new]
    fn new() -> CallerContext {
        CallerContext(tinystore::CallerContext::new())
    }

    /// This context inside `tx`, opened by the task whose id is `by`.
    fn inside_tx(&self, tx: &Tx, by: u64) -> CallerContext {
        CallerContext(self.0.inside_tx(&tx.binding, by))
    }

    /// This context inside the run `claim` holds.
    fn inside_run(&self, claim: &Claim) -> CallerContext {
        CallerContext(claim.inside(&self.0))
    }
}

/// The running task's context: the value of `tinystore._tx_marks.caller`,
/// or a context inside nothing.
pub(crate) fn caller(py: Python<'_>) -> tinystore::CallerContext {
    static VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let Ok(var) = VAR.import(py, "tinystore._tx_marks", "caller") else {
        return tinystore::CallerContext::new();
    };
    var.call_method0(pyo3::intern!(py, "get"))
        .ok()
        .and_then(|c| c.cast::<CallerContext>().ok().map(|c| c.get().0.clone()))
        .unwrap_or_default()
}
