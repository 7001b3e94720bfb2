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

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit, ffi, intern};
use tinystore::TicketCell;

use crate::bucket::Bucket;

static CANCELLED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static INVALID_STATE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

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

/// The write of a `set(key, value)` not yet awaited (see `Pending::unstarted`).
struct Start {
    bucket: Py<Bucket>,
    key: Py<PyAny>,
    value: Py<PyAny>,
}

struct State {
    outcome: Outcome,
    callbacks: Callbacks,
    /// The write to make at the first step: a coroutine's body not yet run.
    start: Option<Start>,
    /// Awaited as a coroutine (`Pending::unstarted`): once it has given its
    /// answer, awaiting it again is an error.
    coroutine: bool,
    /// A coroutine that gave its answer, raised, or was closed.
    consumed: bool,
}

/// The answer of one write; awaitable once, from a task of the loop it
/// was made on.
///
/// The one of a bucket's `set(key, value)` without options is also that
/// call's coroutine (`Pending::unstarted`): it holds the key and the value
/// and writes them when first awaited or stepped by a task, as the body of
/// an `async def` would run, and it has a coroutine's `send`, `throw` and
/// `close` (so `asyncio.create_task` takes it). Until then it is no
/// future (`_asyncio_future_blocking` is None), so `ensure_future` and
/// `gather` wrap it in a task as they do a coroutine. One object instead of
/// an `async def` around the write's answer: a Python frame, a second
/// object and a level of `send` less on each write of the loop's thread.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Pending {
    state: Mutex<State>,
    blocking: AtomicBool,
    /// Where the write's cancellation goes (see `TicketCell`).
    pub(crate) ticket: Arc<TicketCell>,
    /// A weak reference to the loop (shared with `Completions`), set when
    /// the write is made.
    loop_ref: OnceLock<Py<PyAny>>,
}

impl Pending {
    fn with(start: Option<Start>, loop_ref: OnceLock<Py<PyAny>>) -> Pending {
        Pending {
            state: Mutex::new(State {
                outcome: Outcome::Waiting,
                callbacks: Callbacks::default(),
                coroutine: start.is_some(),
                start,
                consumed: false,
            }),
            blocking: AtomicBool::new(false),
            ticket: Arc::new(TicketCell::default()),
            loop_ref,
        }
    }

    /// The answer of a write made now, on the loop of `loop_ref`.
    pub(crate) fn new(py: Python<'_>, loop_ref: &Py<PyAny>) -> Pending {
        Pending::with(None, OnceLock::from(loop_ref.clone_ref(py)))
    }

    /// The coroutine of `bucket.set(key, value)`: nothing is converted or
    /// written until its first step.
    pub(crate) fn unstarted(bucket: Py<Bucket>, key: Py<PyAny>, value: Py<PyAny>) -> Pending {
        Pending::with(Some(Start { bucket, key, value }), OnceLock::new())
    }

    /// Records the loop the write is made on (once).
    pub(crate) fn made_on(&self, py: Python<'_>, loop_ref: &Py<PyAny>) {
        if self.loop_ref.get().is_none() {
            let _ = self.loop_ref.set(loop_ref.clone_ref(py));
        }
    }

    /// The loop, or None when it is gone (or the write was never made).
    fn the_loop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.loop_ref.get() {
            Some(r) => r.bind(py).call0(),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// A `Pending` of the running loop that has its answer already.
    fn given(py: Python<'_>, answer: PyResult<Py<PyAny>>) -> PyResult<Pending> {
        let running = crate::completions::running_loop(py)?;
        let completions = crate::completions::Completions::of_loop(&running)?;
        let made = Pending::with(None, OnceLock::from(completions.get().loop_ref.clone_ref(py)));
        made.lock().outcome = match answer {
            Ok(v) => Outcome::Value(v),
            Err(e) => Outcome::Error(e),
        };
        Ok(made)
    }

    /// Makes the write of an unstarted `set` on the running loop.
    fn start(slf: &Bound<'_, Pending>, start: Start) -> PyResult<()> {
        let py = slf.py();
        let running = crate::completions::running_loop(py)?;
        let Start { bucket, key, value } = start;
        bucket.get().set_start(py, &running, key.bind(py), value.bind(py), slf)
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
            let lp = self.the_loop(py)?;
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
        let lp = slf.get().the_loop(py)?;
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

    /// One step of awaiting it: makes the write of an unstarted `set`;
    /// yields the `Pending` itself (Some) while it waits; then ends the
    /// iteration with the answer (None, StopIteration set) or raises it.
    pub(crate) fn step(slf: &Bound<'_, Pending>) -> PyResult<Option<Py<PyAny>>> {
        let py = slf.py();
        let this = slf.get();
        let start = this.lock().start.take();
        if let Some(start) = start
            && let Err(e) = Pending::start(slf, start)
        {
            let mut st = this.lock();
            st.consumed = true;
            st.outcome = Outcome::Error(e.clone_ref(py));
            return Err(e);
        }
        let mut st = this.lock();
        if st.consumed {
            return Err(PyRuntimeError::new_err("cannot reuse already awaited coroutine"));
        }
        if !matches!(st.outcome, Outcome::Waiting) {
            st.consumed = st.coroutine;
        }
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
        match CANCELLED.import(py, "asyncio", "CancelledError") {
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
    /// An answer given already, for a call answered inline (a rate limit's
    /// `allow`, from memory): awaiting it gives `value` at once, without an
    /// `asyncio.Future` or a pass through the loop. Made on the running
    /// loop, as a future would be.
    #[staticmethod]
    #[pyo3(signature = (value) -> "Any")]
    fn answered(py: Python<'_>, value: Py<PyAny>) -> PyResult<Pending> {
        Pending::given(py, Ok(value))
    }

    /// An answer given already that raises `error` when awaited.
    #[staticmethod]
    #[pyo3(signature = (error: "BaseException") -> "Any")]
    fn failed(py: Python<'_>, error: &Bound<'_, PyAny>) -> PyResult<Pending> {
        Pending::given(py, Err(PyErr::from_value(error.clone())))
    }

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

    /// True while a task waits on it (asyncio's mark of a future-like
    /// object); None while it is a coroutine not yet started, which is no
    /// future yet.
    #[getter(_asyncio_future_blocking)]
    fn get_blocking(&self) -> Option<bool> {
        if self.lock().start.is_some() {
            return None;
        }
        Some(self.blocking.load(Ordering::Relaxed))
    }

    #[setter(_asyncio_future_blocking)]
    fn set_blocking(&self, value: bool) {
        self.blocking.store(value, Ordering::Relaxed);
    }

    /// The loop the write was made on.
    #[pyo3(signature = () -> "asyncio.AbstractEventLoop")]
    fn get_loop(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let lp = self.the_loop(py)?;
        if lp.is_none() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("the event loop is gone"));
        }
        Ok(lp.unbind())
    }

    /// Runs `fn(self)` when answered (at once, through `call_soon`, when
    /// it already is).
    #[pyo3(signature = (r#fn: "Callable[[Pending], object]", *, context = None))]
    fn add_done_callback(slf: &Bound<'_, Self>, r#fn: Py<PyAny>, context: Option<Py<PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let context = match context {
            Some(c) if !c.is_none(py) => Some(c),
            _ => Some(
                COPY_CONTEXT
                    .import(py, "contextvars", "copy_context")?
                    .call0()?
                    .unbind(),
            ),
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
    #[pyo3(signature = (r#fn: "Callable[[Pending], object]"))]
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
                INVALID_STATE
                    .import(py, "asyncio", "InvalidStateError")?
                    .call1(("Result is not set.",))?,
            )),
            Outcome::Value(v) => Ok(v.clone_ref(py)),
            Outcome::Error(e) => Err(e.clone_ref(py)),
            Outcome::Cancelled(msg) => Err(Pending::cancelled_error(py, msg)),
        }
    }

    /// The write's error, None when it succeeded; raises as `result` does
    /// when cancelled or not answered yet.
    #[pyo3(signature = () -> "BaseException | None")]
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
        let (callbacks, unstarted) = {
            let mut st = this.lock();
            if !matches!(st.outcome, Outcome::Waiting) {
                return Ok(false);
            }
            st.outcome = Outcome::Cancelled(msg.unwrap_or_else(|| py.None()));
            (st.callbacks.take(), st.start.take())
        };
        drop(unstarted); // outside the lock: nothing is written
        this.ticket.cancel();
        Pending::schedule(slf, callbacks)?;
        Ok(true)
    }

    /// A coroutine's `send`: a task sends None; any value is taken as None.
    fn send(slf: &Bound<'_, Self>, _value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match Pending::step(slf)? {
            Some(waiting) => Ok(waiting),
            // The answer is in the StopIteration `step` set.
            None => Err(PyErr::take(slf.py()).unwrap_or_else(|| PyStopIteration::new_err(()))),
        }
    }

    /// A coroutine's `throw`: raises `typ` (an exception, or its class and
    /// `val`) where the write is awaited. An unstarted write is never made;
    /// a cancellation gives up on a made one if its group has not started;
    /// any other exception leaves it to finish unheard.
    #[pyo3(signature = (typ, val=None, _tb=None))]
    fn throw(
        slf: &Bound<'_, Self>,
        typ: &Bound<'_, PyAny>,
        val: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        let err = match (typ.cast::<PyType>(), val.filter(|v| !v.is_none())) {
            (Ok(cls), Some(v)) if v.is_instance(cls)? => PyErr::from_value(v.clone()),
            (Ok(cls), Some(v)) => PyErr::from_value(cls.call1((v,))?),
            _ => PyErr::from_value(typ.clone()),
        };
        let unstarted = {
            let mut st = slf.get().lock();
            st.consumed = st.coroutine;
            st.start.take()
        };
        if unstarted.is_none() && err.is_instance(py, CANCELLED.import(py, "asyncio", "CancelledError")?) {
            Pending::cancel(slf, None)?;
        }
        drop(unstarted);
        Err(err)
    }

    /// A coroutine's `close`: an unstarted write is never made; a made one
    /// finishes unheard.
    fn close(&self) {
        let unstarted = {
            let mut st = self.lock();
            st.consumed = st.coroutine;
            st.start.take()
        };
        drop(unstarted); // outside the lock
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(lp) = self.loop_ref.get() {
            visit.call(lp)?;
        }
        if let Ok(st) = self.state.try_lock() {
            if let Some(start) = &st.start {
                visit.call(&start.bucket)?;
                visit.call(&start.key)?;
                visit.call(&start.value)?;
            }
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
        let (callbacks, start) = {
            let mut st = self.lock();
            (std::mem::take(&mut st.callbacks), st.start.take())
        };
        drop((callbacks, start)); // outside the lock: a last reference may run Python code
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

/// Calls `cb(arg)` inside `ctx` (a `contextvars.Context`): `ctx.run(cb,
/// arg)`, through the method `Context.run` found once. The limited API has
/// no call to enter a context; `Context.run` enters it and leaves it
/// whether or not the call raised, as the interpreter's own handles do.
fn call_in(py: Python<'_>, ctx: Option<&Py<PyAny>>, cb: &Bound<'_, PyAny>, arg: &Bound<'_, PyAny>) -> PyResult<()> {
    let out = match ctx {
        // SAFETY: with the GIL; every argument is a live object held by the
        // caller, and the NULL ends the list. The call takes its arguments
        // from the C stack, without a tuple.
        Some(ctx) => unsafe {
            let run = CONTEXT_RUN.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
                Ok(py.import("contextvars")?.getattr("Context")?.getattr("run")?.unbind())
            })?;
            ffi::PyObject_CallFunctionObjArgs(
                run.as_ptr(),
                ctx.as_ptr(),
                cb.as_ptr(),
                arg.as_ptr(),
                std::ptr::null_mut::<ffi::PyObject>(),
            )
        },
        // SAFETY: as above.
        None => unsafe {
            ffi::PyObject_CallFunctionObjArgs(cb.as_ptr(), arg.as_ptr(), std::ptr::null_mut::<ffi::PyObject>())
        },
    };
    // SAFETY: with the GIL; a new reference, or NULL with an error set.
    unsafe { Bound::from_owned_ptr_or_err(py, out) }.map(drop)
}

static COPY_CONTEXT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CONTEXT_RUN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

static TASK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The C function of the wake-up a C `asyncio.Task` adds to the future
/// it waits on, once one was seen (0 until then).
static TASK_WAKEUP: AtomicUsize = AtomicUsize::new(0);

/// Whether `cb` is the wake-up a C `asyncio.Task` (or a subclass) adds to
/// the future it waits on: the built-in `task_wakeup` bound to the task.
/// The limited API keeps a built-in's method definition out of reach, so
/// the first wake-up is known by its `__name__` and its C function is kept;
/// every later one is that function, bound to a task.
fn is_task_wakeup(py: Python<'_>, cb: &Bound<'_, PyAny>) -> bool {
    let Ok(task) = TASK.import(py, "asyncio", "Task") else {
        return false;
    };
    // SAFETY: with the GIL; `cb` is a live object, and a built-in's
    // `__self__` is borrowed from it.
    let function = unsafe {
        let f = cb.as_ptr();
        if ffi::PyCFunction_Check(f) == 0 {
            return false;
        }
        let function = ffi::PyCFunction_GetFunction(f).map_or(0, |f| f as usize);
        let owner = ffi::PyCFunction_GetSelf(f);
        if function == 0 || owner.is_null() || ffi::PyObject_TypeCheck(owner, task.as_ptr().cast()) == 0 {
            return false;
        }
        function
    };
    let known = TASK_WAKEUP.load(Ordering::Relaxed);
    if known != 0 {
        return function == known;
    }
    let named = cb
        .getattr(intern!(py, "__name__"))
        .is_ok_and(|n| n.extract::<&str>().is_ok_and(|n| n == "task_wakeup"));
    if named {
        TASK_WAKEUP.store(function, Ordering::Relaxed);
    }
    named
}
