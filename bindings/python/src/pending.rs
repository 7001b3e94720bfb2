//! The awaitable answer of one write of a bucket: what `await bucket.set(...)`
//! waits on.
//!
//! An `asyncio.Future` would cost each write a Python-level `loop.call_soon`
//! (a `Handle` object, a pass through the ready queue) when it is resolved,
//! which was a quarter of a write's whole cost at 64 in flight. A `Pending`
//! speaks asyncio's protocol for future-like objects instead (the one a
//! `Task` uses for any object with `_asyncio_future_blocking`: `get_loop`,
//! `add_done_callback`, `result`, `cancel`), and the loop's `drain`, itself
//! one callback of the loop for the whole group, wakes each waiting task at
//! once. Everything else keeps asyncio's rules: a callback added after the
//! answer, and the callbacks of a cancelled write, go through `call_soon`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{PyTraverseError, PyVisit, ffi, intern};

use crate::completions::TicketCell;

static CANCELLED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static INVALID_STATE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn asyncio_class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    cell.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("asyncio")?.getattr(name)?.unbind())
    })
    .map(|c| c.bind(py).clone())
}

enum Outcome {
    Waiting,
    Value(Py<PyAny>),
    Error(PyErr),
    /// Cancelled, with the message given to `cancel` (None when none was).
    Cancelled(Py<PyAny>),
}

/// A done callback and the context it runs in (`None`: a copy of the
/// context current when it was added, as asyncio's futures do).
type Callback = (Py<PyAny>, Option<Py<PyAny>>);

/// The done callbacks: nearly always one (the waiting task's wake-up),
/// kept without a heap allocation.
#[derive(Default)]
struct Callbacks {
    first: Option<Callback>,
    rest: Vec<Callback>,
}

impl Callbacks {
    fn push(&mut self, c: Callback) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(c);
        } else {
            self.rest.push(c);
        }
    }

    fn take(&mut self) -> impl Iterator<Item = Callback> + use<> {
        let all = std::mem::take(self);
        all.first.into_iter().chain(all.rest)
    }

    fn iter(&self) -> impl Iterator<Item = &Callback> {
        self.first.iter().chain(self.rest.iter())
    }
}

struct State {
    outcome: Outcome,
    callbacks: Callbacks,
}

/// The answer of one write; awaitable once, from a task of the loop it
/// was made on.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Pending {
    state: Mutex<State>,
    blocking: AtomicBool,
    /// Where the write's cancellation goes (see `TicketCell`).
    pub(crate) ticket: Arc<TicketCell>,
    /// A weak reference to the loop (shared with `Completions`).
    loop_ref: Py<PyAny>,
}

impl Pending {
    pub(crate) fn new(py: Python<'_>, loop_ref: &Py<PyAny>) -> Pending {
        Pending {
            state: Mutex::new(State {
                outcome: Outcome::Waiting,
                callbacks: Callbacks::default(),
            }),
            blocking: AtomicBool::new(false),
            ticket: Arc::new(TicketCell::default()),
            loop_ref: loop_ref.clone_ref(py),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the write was answered or cancelled.
    pub(crate) fn is_done(&self) -> bool {
        !matches!(self.lock().outcome, Outcome::Waiting)
    }

    /// Sets the answer and runs the done callbacks now, each in its
    /// context: called by `drain`, itself a callback of the loop, so a
    /// waiting task steps here as it would one iteration later after a
    /// `call_soon`. An answer to a write already cancelled is dropped.
    ///
    /// `succeeded`, when given, is an `asyncio.Future` done with None: the
    /// wake-up of a task (asyncio's C `Task`) gets it in place of this
    /// `Pending` when the write succeeded. That wake-up only asks its
    /// argument whether it raised, and then steps the task, whose `await`
    /// takes the answer from the `Pending` itself; a Future is asked in C,
    /// a `Pending` through a Python method call (a tenth of a write's
    /// instructions on the loop's thread). Every other callback gets the
    /// `Pending`.
    ///
    /// A callback's `Exception` goes to the loop's exception handler, as
    /// from a handle; a `BaseException` (KeyboardInterrupt, SystemExit) is
    /// returned, after the callbacks have run, for `drain` to raise.
    pub(crate) fn finish(
        slf: &Bound<'_, Pending>,
        answer: PyResult<Py<PyAny>>,
        succeeded: Option<&Bound<'_, PyAny>>,
    ) -> Option<PyErr> {
        let py = slf.py();
        let succeeded = if answer.is_ok() { succeeded } else { None };
        let callbacks = {
            let mut st = slf.get().lock();
            if !matches!(st.outcome, Outcome::Waiting) {
                return None;
            }
            st.outcome = match answer {
                Ok(v) => Outcome::Value(v),
                Err(e) => Outcome::Error(e),
            };
            st.callbacks.take()
        };
        let mut fatal = None;
        for (cb, ctx) in callbacks {
            let cb = cb.bind(py);
            let arg = match succeeded {
                Some(done) if is_task_wakeup(py, cb) => done.as_any(),
                _ => slf.as_any(),
            };
            if let Err(e) = call_in(py, ctx.as_ref(), cb, arg) {
                if e.is_instance_of::<pyo3::exceptions::PyException>(py) {
                    slf.get().report(py, cb.as_unbound(), e);
                } else if fatal.is_none() {
                    fatal = Some(e);
                }
            }
        }
        fatal
    }

    /// Hands a callback's exception to the loop's handler, as asyncio does
    /// for a callback that raised.
    fn report(&self, py: Python<'_>, cb: &Py<PyAny>, e: PyErr) {
        let handled = (|| -> PyResult<()> {
            let lp = self.loop_ref.bind(py).call0()?;
            if lp.is_none() {
                return Err(e.clone_ref(py));
            }
            let ctx = PyDict::new(py);
            ctx.set_item("message", format!("Exception in callback {}", cb.bind(py).repr()?))?;
            ctx.set_item("exception", e.value(py))?;
            lp.call_method1(intern!(py, "call_exception_handler"), (ctx,))?;
            Ok(())
        })();
        if let Err(err) = handled {
            err.print(py);
        }
    }

    /// Schedules callbacks with the loop's `call_soon`, as an asyncio
    /// future does (for a cancellation, or a callback added when done).
    fn schedule(slf: &Bound<'_, Pending>, callbacks: impl Iterator<Item = Callback>) -> PyResult<()> {
        let mut callbacks = callbacks.peekable();
        if callbacks.peek().is_none() {
            return Ok(());
        }
        let py = slf.py();
        let lp = slf.get().loop_ref.bind(py).call0()?;
        if lp.is_none() {
            return Ok(()); // the loop is gone: nothing runs any more
        }
        for (cb, ctx) in callbacks {
            let kw = PyDict::new(py);
            if let Some(ctx) = ctx {
                kw.set_item(intern!(py, "context"), ctx)?;
            }
            lp.call_method(intern!(py, "call_soon"), (cb, slf), Some(&kw))?;
        }
        Ok(())
    }

    /// One step of awaiting it: yields the `Pending` itself (Some) while it
    /// waits; then ends the iteration with the answer (None, StopIteration
    /// set) or raises it. The `__next__` of a `Pending` and of a `SetCall`.
    pub(crate) fn step(slf: &Bound<'_, Pending>) -> PyResult<Option<Py<PyAny>>> {
        let py = slf.py();
        let this = slf.get();
        let st = this.lock();
        match &st.outcome {
            Outcome::Waiting => {
                this.blocking.store(true, Ordering::Relaxed);
                Ok(Some(slf.clone().into_any().unbind()))
            }
            Outcome::Value(v) => {
                let v = v.clone_ref(py);
                drop(st);
                stop_with(py, v);
                Ok(None)
            }
            Outcome::Error(e) => Err(e.clone_ref(py)),
            Outcome::Cancelled(msg) => Err(Pending::cancelled_error(py, msg)),
        }
    }

    fn cancelled_error(py: Python<'_>, msg: &Py<PyAny>) -> PyErr {
        match asyncio_class(py, &CANCELLED, "CancelledError") {
            Ok(cls) => {
                let args = if msg.is_none(py) {
                    PyTuple::empty(py)
                } else {
                    PyTuple::new(py, [msg.bind(py)]).unwrap_or_else(|_| PyTuple::empty(py))
                };
                match cls.call1(args) {
                    Ok(exc) => PyErr::from_value(exc),
                    Err(e) => e,
                }
            }
            Err(e) => e,
        }
    }
}

#[pymethods]
impl Pending {
    /// Awaiting a `Pending` yields it once to the task, which waits for its
    /// answer; then gives the answer.
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The task's step: yields the `Pending` itself while it waits, then
    /// ends with the answer (or raises it).
    fn __next__(slf: &Bound<'_, Self>) -> PyResult<Option<Py<PyAny>>> {
        Pending::step(slf)
    }

    /// True while a task waits on it (asyncio's mark of a future-like object).
    #[getter(_asyncio_future_blocking)]
    fn get_blocking(&self) -> bool {
        self.blocking.load(Ordering::Relaxed)
    }

    #[setter(_asyncio_future_blocking)]
    fn set_blocking(&self, value: bool) {
        self.blocking.store(value, Ordering::Relaxed);
    }

    /// The loop the write was made on.
    fn get_loop(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let lp = self.loop_ref.bind(py).call0()?;
        if lp.is_none() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("the event loop is gone"));
        }
        Ok(lp.unbind())
    }

    /// Runs `fn(self)` when answered (at once, through `call_soon`, when
    /// it already is).
    #[pyo3(signature = (r#fn, *, context=None))]
    fn add_done_callback(slf: &Bound<'_, Self>, r#fn: Py<PyAny>, context: Option<Py<PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let context = match context {
            Some(c) if !c.is_none(py) => Some(c),
            // SAFETY: called with the GIL; returns a new reference or NULL with an error set.
            _ => Some(unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyContext_CopyCurrent())? }.unbind()),
        };
        let done = {
            let mut st = slf.get().lock();
            if matches!(st.outcome, Outcome::Waiting) {
                st.callbacks.push((r#fn, context));
                return Ok(());
            }
            std::iter::once((r#fn, context))
        };
        Pending::schedule(slf, done)
    }

    /// Removes every registration of `fn`; says how many there were.
    fn remove_done_callback(&self, py: Python<'_>, r#fn: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut st = self.lock();
        let (mut kept, mut removed) = (Callbacks::default(), 0);
        for (cb, ctx) in st.callbacks.take() {
            if cb.bind(py).eq(r#fn)? {
                removed += 1;
            } else {
                kept.push((cb, ctx));
            }
        }
        st.callbacks = kept;
        Ok(removed)
    }

    /// The answer; raises the write's error, `CancelledError`, or
    /// `InvalidStateError` while it has none.
    fn result(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.lock().outcome {
            Outcome::Waiting => Err(PyErr::from_value(
                asyncio_class(py, &INVALID_STATE, "InvalidStateError")?.call1(("Result is not set.",))?,
            )),
            Outcome::Value(v) => Ok(v.clone_ref(py)),
            Outcome::Error(e) => Err(e.clone_ref(py)),
            Outcome::Cancelled(msg) => Err(Pending::cancelled_error(py, msg)),
        }
    }

    /// The write's error, None when it succeeded; raises as `result` does
    /// when cancelled or not answered yet.
    fn exception(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &self.lock().outcome {
            Outcome::Error(e) => Ok(Some(e.value(py).clone().into_any().unbind())),
            Outcome::Value(_) => Ok(None),
            _ => self.result(py).map(|_| None),
        }
    }

    /// Whether it has its answer (or was cancelled).
    fn done(&self) -> bool {
        self.is_done()
    }

    /// Whether it was cancelled.
    fn cancelled(&self) -> bool {
        matches!(self.lock().outcome, Outcome::Cancelled(_))
    }

    /// Gives up on the write: a write whose group has not started is never
    /// written. False when it was already answered.
    #[pyo3(signature = (msg=None))]
    pub(crate) fn cancel(slf: &Bound<'_, Self>, msg: Option<Py<PyAny>>) -> PyResult<bool> {
        let py = slf.py();
        let this = slf.get();
        let callbacks = {
            let mut st = this.lock();
            if !matches!(st.outcome, Outcome::Waiting) {
                return Ok(false);
            }
            st.outcome = Outcome::Cancelled(msg.unwrap_or_else(|| py.None()));
            st.callbacks.take()
        };
        this.ticket.cancel();
        Pending::schedule(slf, callbacks)?;
        Ok(true)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.loop_ref)?;
        if let Ok(st) = self.state.try_lock() {
            for (cb, ctx) in st.callbacks.iter() {
                visit.call(cb)?;
                if let Some(ctx) = ctx {
                    visit.call(ctx)?;
                }
            }
            match &st.outcome {
                Outcome::Value(v) | Outcome::Cancelled(v) => visit.call(v)?,
                Outcome::Waiting | Outcome::Error(_) => {}
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        let callbacks = std::mem::take(&mut self.lock().callbacks);
        drop(callbacks); // outside the lock: a callback's last reference may run Python code
    }
}

/// Ends an iteration with `value`, as a generator's `return value` does:
/// a value that is not a tuple is handed over as it is (no exception object
/// is made for it); a tuple is wrapped, or Python would unpack it.
fn stop_with(py: Python<'_>, value: Py<PyAny>) {
    let v = value.bind(py);
    if v.is_instance_of::<PyTuple>() || v.is_instance_of::<pyo3::exceptions::PyBaseException>() {
        PyStopIteration::new_err((value,)).restore(py);
    } else {
        // SAFETY: with the GIL; PyErr_SetObject takes its own references.
        unsafe { ffi::PyErr_SetObject(ffi::PyExc_StopIteration, v.as_ptr()) };
    }
}

/// Calls `cb(arg)` inside `ctx` (a `contextvars.Context`), as
/// `ctx.run(cb, arg)` does, without looking up and calling `run`.
fn call_in(py: Python<'_>, ctx: Option<&Py<PyAny>>, cb: &Bound<'_, PyAny>, arg: &Bound<'_, PyAny>) -> PyResult<()> {
    // SAFETY: with the GIL; every pointer is a live object held by the
    // caller; Enter and Exit pair as in the interpreter's own `Context.run`
    // (Exit runs whether or not the call raised).
    unsafe {
        if let Some(ctx) = ctx
            && ffi::PyContext_Enter(ctx.as_ptr()) != 0
        {
            return Err(PyErr::fetch(py));
        }
        let out = ffi::PyObject_CallOneArg(cb.as_ptr(), arg.as_ptr());
        let called = Bound::from_owned_ptr_or_err(py, out).map(drop);
        if let Some(ctx) = ctx
            && ffi::PyContext_Exit(ctx.as_ptr()) != 0
        {
            return Err(PyErr::fetch(py));
        }
        called
    }
}

static TASK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Whether `cb` is the wake-up a C `asyncio.Task` (or a subclass) adds to
/// the future it waits on: the function `task_wakeup` bound to the task.
fn is_task_wakeup(py: Python<'_>, cb: &Bound<'_, PyAny>) -> bool {
    let Ok(task) = asyncio_class(py, &TASK, "Task") else {
        return false;
    };
    // SAFETY: with the GIL; a PyCFunction's method definition and name are
    // static C data of the module that made it, alive while it is.
    unsafe {
        let f = cb.as_ptr();
        if ffi::PyCFunction_Check(f) == 0 {
            return false;
        }
        let f = f.cast::<ffi::PyCFunctionObject>();
        let (def, owner) = ((*f).m_ml, (*f).m_self);
        if def.is_null() || owner.is_null() || (*def).ml_name.is_null() {
            return false;
        }
        std::ffi::CStr::from_ptr((*def).ml_name) == c"task_wakeup"
            && ffi::PyObject_TypeCheck(owner, task.as_ptr().cast()) != 0
    }
}
