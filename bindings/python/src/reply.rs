//! The asyncio form of a call, written once: every `*_then` method converts
//! its arguments, then hands the core's `*_then` a [`Reply`], which carries
//! the answer back to the loop's queue and turns it into Python there
//! (`completions.rs`). The completion stays a plain closure over the reply,
//! with no box of its own on the writer's side.

use std::sync::{Arc, mpsc};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use tinystore::{Store, Ticket as CoreTicket};

use crate::completions::{Completions, Queue, Ticket};
use crate::errors::{py_err, to_py};
use crate::pending::Pending;

/// Turns a call's value into Python, on the loop's thread.
pub(crate) type Convert<T> = fn(Python<'_>, T) -> PyResult<Py<PyAny>>;

/// The answer of a call that answers a plain value.
pub(crate) fn value<T: for<'py> IntoPyObject<'py>>(py: Python<'_>, v: T) -> PyResult<Py<PyAny>> {
    v.into_py_any(py)
}

/// The answer of a call that answers nothing.
pub(crate) fn none(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

/// Where one call's answer goes: the loop's queue and the future (or
/// `Pending`) it resolves.
pub(crate) struct Reply<T> {
    queue: Arc<Queue>,
    store: Store,
    future: Py<PyAny>,
    convert: Convert<T>,
}

impl<T: Send + 'static> Reply<T> {
    /// Hands the outcome to the loop, which resolves the future with it.
    pub(crate) fn send(self, out: tinystore::Result<T>) {
        let convert = self.convert;
        self.queue.push(
            &self.store,
            self.future,
            Box::new(move |py| match out {
                Ok(v) => convert(py, v),
                Err(e) => Err(to_py(py, e)),
            }),
        )
    }
}

/// Queues a call for the end of the loop's iteration (see
/// [`Completions::defer`]); `submit` hands it to the core with its reply.
pub(crate) fn later<T: Send + 'static>(
    completions: &Bound<'_, Completions>,
    future: Py<PyAny>,
    store: &Store,
    convert: Convert<T>,
    submit: impl FnOnce(Reply<T>) -> tinystore::Result<CoreTicket> + Send + 'static,
) -> PyResult<Ticket> {
    let (queue, st) = (completions.get().queue.clone(), store.clone());
    Completions::defer(completions, future, store, move |future| {
        submit(Reply {
            queue,
            store: st,
            future,
            convert,
        })
    })
}

/// A bucket's call answered through a [`Pending`] (see
/// [`Completions::defer_pending`]): `stream` hands it to the core at once.
pub(crate) fn pending<'py, T: Send + 'static>(
    running: &Bound<'py, PyAny>,
    store: &Store,
    stream: bool,
    convert: Convert<T>,
    submit: impl FnOnce(Reply<T>) -> tinystore::Result<CoreTicket> + Send + 'static,
) -> PyResult<Bound<'py, Pending>> {
    let completions = &Completions::of_loop(running)?;
    let (queue, st) = (completions.get().queue.clone(), store.clone());
    Completions::defer_pending(completions, store, stream, move |future| {
        submit(Reply {
            queue,
            store: st,
            future,
            convert,
        })
    })
}

/// The blocking form of a core `*_then` call: `submit` makes it with the
/// completion given, and this waits for the answer with the GIL released.
pub(crate) fn wait<T: Send + 'static, R>(
    py: Python<'_>,
    submit: impl FnOnce(Box<dyn FnOnce(tinystore::Result<T>) + Send>) -> tinystore::Result<R>,
) -> PyResult<T> {
    wait_core(py, submit).map_err(py_err(py))
}

/// [`wait`] answering the core's result, for a caller that converts it.
pub(crate) fn wait_core<T: Send + 'static, R>(
    py: Python<'_>,
    submit: impl FnOnce(Box<dyn FnOnce(tinystore::Result<T>) + Send>) -> tinystore::Result<R>,
) -> tinystore::Result<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    submit(Box::new(move |r| {
        let _ = tx.send(r);
    }))?;
    py.detach(move || {
        rx.recv()
            .unwrap_or_else(|_| Err(tinystore::Error::new(tinystore::ErrorKind::Closed, "the store closed")))
    })
}
