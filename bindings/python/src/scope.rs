//! The scope of a native call: every call of a bucket, counters, a quota,
//! a once or the limit store takes an optional last argument, `scope`: None
//! (the store itself, blocking), a `Tx` or a `View`, where it runs the
//! core's one operation for that scope ([`tinystore::Scope`]), or the
//! running asyncio loop, where it hands the core's completion form the
//! call and answers a [`Pending`]. Each operation is one native method, and
//! [`Call::run`] is where it runs: its arguments are converted once.
//!
//! A call on the store or in a view releases the GIL while it runs, as
//! every blocking call does. A call inside a transaction runs on this
//! thread holding the GIL: it takes microseconds and crosses no thread, and
//! releasing the GIL would cost more than the call. A thread that holds the
//! transaction's lock never needs the GIL, so waiting for it with the GIL held
//! cannot deadlock. A clear or a page, which may take longer, releases it.

use pyo3::prelude::*;
use tinystore::{HandleWrite, Scope, Store, Ticket, Written};

use crate::convert::{Answered, Arg};
use crate::errors::{invalid, py_err, to_py};
use crate::pending::Pending;
use crate::reply::{self, Answer, Reply};
use crate::tx::{Tx, View};

/// Where a call runs, from its `scope` argument.
enum Where<'a, 'py> {
    /// In the core's scope, on this thread.
    Here(Scope<'a>),
    /// On the store, answered through a `Pending` of this running loop.
    Loop(&'a Bound<'py, PyAny>),
}

fn where_of<'a, 'py>(scope: Option<&'a Bound<'py, PyAny>>) -> Where<'a, 'py> {
    let Some(s) = scope.filter(|s| !s.is_none()) else {
        return Where::Here(Scope::Direct);
    };
    if let Ok(tx) = s.cast::<Tx>() {
        return Where::Here(Scope::Tx(&tx.get().binding));
    }
    if let Ok(view) = s.cast::<View>() {
        return Where::Here(Scope::View(&view.get().snap));
    }
    Where::Loop(s)
}

/// The core's scope of a read's `scope` argument (a read has no asyncio
/// form: it runs inline).
pub(crate) fn scope_of<'a>(py: Python<'_>, scope: Option<&'a Bound<'_, PyAny>>) -> PyResult<Scope<'a>> {
    match where_of(scope) {
        Where::Here(s) => Ok(s),
        Where::Loop(_) => Err(to_py(py, invalid("scope must be None, a Tx or a View"))),
    }
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

/// Runs `f`, a short read, in the scope of a call's `scope` argument.
pub(crate) fn in_scope<T: Send>(
    py: Python<'_>,
    scope: Option<&Arg<'_>>,
    f: impl FnOnce(Scope<'_>) -> tinystore::Result<T> + Send,
) -> PyResult<T> {
    let scope = scope_of(py, scope)?;
    run_in(py, scope, Takes::Short, || f(scope))
}

/// The handle a call is of: the core's handle, its store, and whether its
/// asyncio calls go to the core as they are made (see
/// `Completions::defer_into`).
pub(crate) struct Call<'a, H> {
    pub(crate) handle: &'a H,
    pub(crate) store: &'a Store,
    pub(crate) streams: bool,
    pub(crate) takes: Takes,
}

impl<'a, H: Clone + Send + Sync + 'static> Call<'a, H> {
    /// A short call of `handle` of `store` whose asyncio form waits for the
    /// end of the loop's iteration.
    pub(crate) fn of(handle: &'a H, store: &'a Store) -> Self {
        Call {
            handle,
            store,
            streams: false,
            takes: Takes::Short,
        }
    }

    /// This call releasing the GIL in every scope.
    pub(crate) fn long(self) -> Self {
        Call {
            takes: Takes::Long,
            ..self
        }
    }

    /// Runs one operation where its `scope` says, with `args` converted
    /// once: `here` in the core's scope on this thread, or `then` handed to
    /// the core for the running loop, answering the `Pending` returned.
    /// `answer` turns the value into Python on whichever thread answers.
    pub(crate) fn run<A: Send + 'static, T: Send + 'static, C: Answer<T>>(
        self,
        py: Python<'_>,
        scope: Option<&Arg<'_>>,
        args: A,
        answer: C,
        here: impl FnOnce(Scope<'_>, &H, A) -> tinystore::Result<T> + Send,
        then: impl FnOnce(&H, A, Reply<T, C>) -> tinystore::Result<Ticket> + Send + 'static,
    ) -> Answered {
        match where_of(scope) {
            Where::Here(s) => {
                let v = run_in(py, s, self.takes, || here(s, self.handle, args))?;
                answer(py, v)
            }
            Where::Loop(running) => {
                let handle = self.handle.clone();
                let submit = move |r| then(&handle, args, r);
                let p: Bound<'_, Pending> = reply::pending(running, self.store, self.streams, answer, submit)?;
                Ok(p.into_any().unbind())
            }
        }
    }
}

impl<H: Clone + Send + Sync + 'static> Call<'_, H> {
    /// [`Call::run`] of the core's write `w` of this handle: in the core's
    /// scope on this thread, or handed to the writer for the running loop.
    pub(crate) fn write<W: HandleWrite<On = H>, C: Answer<Written>>(
        self,
        py: Python<'_>,
        scope: Option<&Arg<'_>>,
        w: W,
        answer: C,
    ) -> Answered {
        self.run(
            py,
            scope,
            w,
            answer,
            |s, h, w| w.in_scope(s, h),
            |h, w, r| w.to_writer(h, r.done()),
        )
    }
}

/// The `scope` of a call that runs on the store only, `running` (None to
/// block, or the asyncio loop that awaits it): a `Tx` or a `View` is
/// refused with the core's `refused` text for that call.
pub(crate) fn on_store<'a, 'py>(
    py: Python<'_>,
    running: Option<&'a Bound<'py, PyAny>>,
    refused: impl FnOnce() -> tinystore::Error,
) -> PyResult<Option<&'a Bound<'py, PyAny>>> {
    match where_of(running) {
        Where::Here(Scope::Direct) | Where::Loop(_) => Ok(running),
        Where::Here(_) => Err(to_py(py, refused())),
    }
}
