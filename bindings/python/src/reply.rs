//! The asyncio form of a call, written once: a call given the running loop
//! as its scope converts its arguments, then hands the core's `*_then` a
//! [`Reply`], which carries the answer back to the loop's queue and turns
//! it into Python there (`completions.rs`). The completion stays a plain
//! closure over the reply, with no box of its own on the writer's side.

use std::marker::PhantomData;
use std::sync::{Arc, mpsc};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use tinystore::{Store, Ticket as CoreTicket, Written};

use crate::completions::{self, Completions, Queue};
use crate::convert::Answered;
use crate::errors::{py_err, to_py};
use crate::pending::Pending;

/// Turns a call's value into Python, on the thread that answers it.
pub(crate) trait Answer<T>: for<'py> FnOnce(Python<'py>, T) -> PyResult<Py<PyAny>> + Send + 'static {}

impl<T, F: for<'py> FnOnce(Python<'py>, T) -> PyResult<Py<PyAny>> + Send + 'static> Answer<T> for F {}

/// The answer of a call that answers a plain value.
pub(crate) fn value<T: for<'py> IntoPyObject<'py>>(py: Python<'_>, v: T) -> PyResult<Py<PyAny>> {
    v.into_py_any(py)
}

/// The answer of a write that needs nothing of its handle: a version as
/// its text, whether a create wrote, a counter, a quota's allowance. A
/// take's value needs its bucket's codec: `Bucket::take` converts it.
pub(crate) fn written(py: Python<'_>, w: Written) -> PyResult<Py<PyAny>> {
    match w {
        Written::Version(v) => Ok(crate::bucket::py_version(py, v)),
        Written::Created(c) => value(py, c.written()),
        Written::Found(found) => value(py, found),
        Written::Count(n) => value(py, n),
        Written::Allowance(a) => value(py, crate::limits::allowance(a)),
        Written::Taken(_) | Written::Nothing => Ok(py.None()),
    }
}

/// The answer of a call that answers nothing.
pub(crate) fn none(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

/// Where one call's answer goes: the loop's queue and the `Pending` it resolves.
pub(crate) struct Reply<T, A> {
    queue: Arc<Queue>,
    store: Store,
    future: Py<PyAny>,
    answer: A,
    value: PhantomData<fn(T)>,
}

impl<T: Send + 'static, A: Answer<T>> Reply<T, A> {
    /// The core's completion for this reply.
    pub(crate) fn done(self) -> impl FnOnce(tinystore::Result<T>) + Send + 'static {
        move |out| self.send(out)
    }

    /// Hands the outcome to the loop, which resolves the `Pending` with it.
    pub(crate) fn send(self, out: tinystore::Result<T>) {
        let answer = self.answer;
        self.queue.push(completions::Answer::new(
            &self.store,
            self.future,
            Box::new(move |py| match out {
                Ok(v) => answer(py, v),
                Err(e) => Err(to_py(py, e)),
            }),
        ))
    }
}

/// A call answered through a new [`Pending`] of the loop `running` (see
/// [`Completions::defer_into`]): `stream` hands it to the core at once.
pub(crate) fn pending<'py, T: Send + 'static, A: Answer<T>>(
    running: &Bound<'py, PyAny>,
    store: &Store,
    stream: bool,
    answer: A,
    submit: impl FnOnce(Reply<T, A>) -> tinystore::Result<CoreTicket> + Send + 'static,
) -> PyResult<Bound<'py, Pending>> {
    let completions = &Completions::of_loop(running)?;
    let pending = Completions::new_pending(completions)?;
    answer_into(completions, store, stream, &pending, answer, submit)?;
    Ok(pending)
}

/// [`pending`] answering `into`, a `Pending` made before the call (the
/// coroutine of a `set`, at its first step).
pub(crate) fn answer_into<T: Send + 'static, A: Answer<T>>(
    completions: &Bound<'_, Completions>,
    store: &Store,
    stream: bool,
    into: &Bound<'_, Pending>,
    answer: A,
    submit: impl FnOnce(Reply<T, A>) -> tinystore::Result<CoreTicket> + Send + 'static,
) -> PyResult<()> {
    let (queue, st) = (completions.get().queue.clone(), store.clone());
    Completions::defer_into(completions, store, stream, into, move |future| {
        submit(Reply {
            queue,
            store: st,
            future,
            answer,
            value: PhantomData,
        })
    })
}

/// A call handed to the core at once, not at the end of the loop's
/// iteration: one that is no write of its own (a run's begin and keep).
/// `submit` makes it with the completion given; without `running` this
/// waits for the answer with the GIL released, else it answers a `Pending`
/// of that loop. One body for both, so the two forms cannot drift.
pub(crate) fn at_once<T: Send + 'static, A: Answer<T>, R>(
    py: Python<'_>,
    running: Option<&Bound<'_, PyAny>>,
    store: &Store,
    answer: A,
    submit: impl FnOnce(Done<T>) -> tinystore::Result<R>,
) -> Answered {
    let Some(running) = running else {
        let (done, answered) = channel();
        submit(done).map_err(py_err(py))?;
        let v = py.detach(answered).map_err(py_err(py))?;
        return answer(py, v);
    };
    let completions = Completions::of_loop(running)?;
    let pending = Completions::new_pending(&completions)?;
    let reply = Reply {
        queue: completions.get().queue.clone(),
        store: store.clone(),
        future: pending.clone().into_any().unbind(),
        answer,
        value: PhantomData,
    };
    submit(Box::new(move |out| reply.send(out))).map_err(py_err(py))?;
    Ok(pending.into_any().unbind())
}

/// The blocking form of a core `*_then` call, on a thread that does not
/// hold the GIL: `submit` makes it with the completion given.
pub(crate) fn blocking<T: Send + 'static, R>(
    submit: impl FnOnce(Done<T>) -> tinystore::Result<R>,
) -> tinystore::Result<T> {
    let (done, answer) = channel();
    submit(done)?;
    answer()
}

/// A completion handed to the core, and the wait for what it gets.
type Done<T> = Box<dyn FnOnce(tinystore::Result<T>) + Send>;

fn channel<T: Send + 'static>() -> (Done<T>, impl FnOnce() -> tinystore::Result<T> + Send) {
    let (tx, rx) = mpsc::sync_channel(1);
    let done: Done<T> = Box::new(move |r| {
        let _ = tx.send(r);
    });
    let answer = move || rx.recv().unwrap_or_else(|_| Err(tinystore::Error::closed()));
    (done, answer)
}
