//! Transactions and snapshots (KV-16) over the core's `BindingTx` and
//! `Snapshot`.
//!
//! Starting a transaction waits for the writer's turn, which the asyncio
//! API must not do on the loop: `Store.tx_then` answers a `Pending`
//! through [`Completions`] when the writer hands out the transaction, and
//! another once the commit is durable. The sync API blocks its thread instead
//! (`Store.tx`). The calls on an open transaction are the handles' own
//! calls with the transaction as their `scope` (see `scope.rs`): they run
//! on the caller's thread inside the transaction.

use std::sync::mpsc::Receiver;

use pyo3::prelude::*;
use tinystore::{BindingTx, BlockingTx, Joining, Scope, Snapshot};

use crate::bucket::Bucket;
use crate::completions::{Answer, Completions, Resolve};
use crate::convert::{Answered, Arg};
use crate::errors::{py_err, to_py};
use crate::limits::{Counters, Quota, RateLimit};
use crate::once::Once;
use crate::pending::Pending;

/// An open transaction: every call given it as its `scope` runs inside it
/// and sees its own writes.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Tx {
    /// The sync API waits for the end's answer here; the async API gets it
    /// in a `Pending` (see `start_then`).
    pub(crate) binding: BlockingTx,
}

#[pymethods]
impl Tx {
    /// Refuses at once, in the core's words, what cannot join the
    /// transaction (`tx.with`): a rate limit, `flush_every` counters, a
    /// handle of another store.
    #[pyo3(signature = (handle: "Bucket | Counters | Quota | Once | RateLimit"))]
    fn check_joins(&self, py: Python<'_>, handle: &Arg<'_>) -> PyResult<()> {
        let joining = if let Ok(b) = handle.cast::<Bucket>() {
            Joining::Bucket(&b.get().raw)
        } else if let Ok(c) = handle.cast::<Counters>() {
            Joining::Counters(&c.get().inner)
        } else if let Ok(q) = handle.cast::<Quota>() {
            Joining::Quota(&q.get().inner)
        } else if let Ok(o) = handle.cast::<Once>() {
            Joining::Once(&o.get().raw)
        } else if let Ok(r) = handle.cast::<RateLimit>() {
            Joining::RateLimit(&r.get().inner)
        } else {
            return Ok(());
        };
        Scope::Tx(&self.binding).join(joining).map_err(py_err(py))
    }

    /// Ends the transaction and commits it, without waiting: the future of
    /// `Store.tx_then` says when it is durable.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        self.binding.commit().map_err(py_err(py))
    }

    /// Ends the transaction, commits it and waits until it is durable (sync API).
    fn commit_wait(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.binding.commit_wait()).map_err(py_err(py))
    }

    /// Ends the transaction and writes nothing of it. Ending it twice is fine.
    fn rollback(&self) {
        let _ = self.binding.rollback();
    }
}

/// A read snapshot: every read given it as its `scope` sees the file as it
/// was at the first read.
#[pyclass(frozen, module = "tinystore._native")]
pub struct View {
    pub(crate) snap: Snapshot,
}

#[pymethods]
impl View {
    /// Ends the snapshot; later reads are `Closed`.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.snap.close());
    }
}

fn tx_object(py: Python<'_>, binding: BindingTx, done: Option<Receiver<tinystore::Result<()>>>) -> Answered {
    let binding = BlockingTx::new(binding, done);
    Ok(Py::new(py, Tx { binding })?.into_any())
}

/// `Store.tx_then`: starts a transaction without blocking the loop
/// `running`. The first `Pending` answers the `Tx` when the writer's turn
/// comes (cancelling it gives the turn up), the second once its commit is
/// durable (or the error; nothing written).
pub fn start_then<'py>(
    store: &tinystore::Store,
    running: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, Pending>, Bound<'py, Pending>)> {
    let completions = &Completions::of_loop(running)?;
    let (ready, done) = (
        Completions::new_pending(completions)?,
        Completions::new_pending(completions)?,
    );
    let (queue, store) = (completions.get().queue.clone(), store.clone());
    let done_answer = done.clone().into_any().unbind();
    Completions::defer_into(completions, &store.clone(), false, &ready, move |ready| {
        let (q2, s2, s1) = (queue.clone(), store.clone(), store.clone());
        store.transaction_then(
            move |r| {
                let resolve: Resolve = Box::new(move |py| match r {
                    Ok(binding) => tx_object(py, binding, None),
                    Err(e) => Err(to_py(py, e)),
                });
                queue.push_now(Answer::new(&s1, ready, resolve))
            },
            move |r| {
                let resolve: Resolve = Box::new(move |py| r.map(|()| py.None()).map_err(|e| to_py(py, e)));
                q2.push(Answer::new(&s2, done_answer, resolve))
            },
        )
    })?;
    Ok((ready, done))
}

/// `Store.tx`: starts a transaction, blocking this thread (not the GIL)
/// until the writer's turn comes.
pub fn start(py: Python<'_>, store: &tinystore::Store) -> Answered {
    // A transaction of this thread's own store, or of the running task's.
    store.refuse_tx(&crate::caller::caller(py), 0).map_err(py_err(py))?;
    let (binding, done) = py.detach(|| store.transaction()).map_err(py_err(py))?;
    // The sync API's block runs on this thread: a blocking write of the same
    // store from it outside the transaction is refused, not a wait.
    binding.hold_thread();
    tx_object(py, binding, Some(done))
}

/// `Store.view`: opens a read snapshot.
pub fn view(py: Python<'_>, store: &tinystore::Store) -> PyResult<View> {
    let snap = py.detach(|| store.snapshot()).map_err(py_err(py))?;
    Ok(View { snap })
}
