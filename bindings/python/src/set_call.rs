//! `await bucket.set(key, value)` of the asyncio API, without options, as
//! one native object instead of an `async def` coroutine around the write's
//! [`Pending`].
//!
//! The coroutine of an `async def set` cost the loop's thread a Python frame,
//! its argument handling and one more level of `send` on each step, for a
//! body that only hands its arguments to the native write: about a fifth of
//! a write's instructions at 64 in flight. A `SetCall` keeps what callers
//! rely on from a coroutine: nothing is converted or written until it is
//! first awaited (or stepped by a task), bad input raises where it is
//! awaited, `asyncio.create_task` and `ensure_future` take it (it has
//! `send`, `throw` and `close`, so it is a `collections.abc.Coroutine`), and
//! a cancellation thrown in gives up on the write as the `async def` did.

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use pyo3::{PyTraverseError, PyVisit};

use crate::bucket::Bucket;
use crate::pending::Pending;

static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CANCELLED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

enum Step {
    /// Made and not yet awaited: as the body of an `async def`, the write
    /// starts at the first step.
    Unstarted {
        bucket: Py<Bucket>,
        key: Py<PyAny>,
        value: Py<PyAny>,
    },
    /// Written; awaiting its answer.
    Waiting(Py<Pending>),
    /// Answered, raised, or closed.
    Finished,
}

/// The coroutine of a bucket's `set(key, value)`: awaited once, it writes
/// the value and gives its version.
#[pyclass(frozen, module = "tinystore._native")]
pub struct SetCall {
    step: Mutex<Step>,
}

impl SetCall {
    pub(crate) fn new(bucket: Py<Bucket>, key: Py<PyAny>, value: Py<PyAny>) -> SetCall {
        SetCall {
            step: Mutex::new(Step::Unstarted { bucket, key, value }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Step> {
        self.step.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the write on the running loop: its `Pending`.
    fn start(py: Python<'_>, bucket: Py<Bucket>, key: Py<PyAny>, value: Py<PyAny>) -> PyResult<Py<Pending>> {
        let get_loop = GET_RUNNING_LOOP.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.import("asyncio")?.getattr("get_running_loop")?.unbind())
        })?;
        let running = get_loop.bind(py).call0()?;
        let pending = bucket
            .get()
            .set_then(py, &running, key.bind(py), value.bind(py), None, None, None)?;
        Ok(pending.unbind())
    }

    /// A step: starts the write at the first, then waits on its `Pending`.
    fn advance(slf: &Bound<'_, SetCall>) -> PyResult<Option<Py<PyAny>>> {
        let py = slf.py();
        let this = slf.get();
        // Nothing runs Python code with the lock held: a codec could step
        // this same object again, which then finds it Finished.
        let pending = {
            let mut step = this.lock();
            match std::mem::replace(&mut *step, Step::Finished) {
                Step::Waiting(p) => {
                    *step = Step::Waiting(p.clone_ref(py));
                    p
                }
                Step::Unstarted { bucket, key, value } => {
                    drop(step);
                    let p = SetCall::start(py, bucket, key, value)?;
                    *this.lock() = Step::Waiting(p.clone_ref(py));
                    p
                }
                Step::Finished => {
                    return Err(PyRuntimeError::new_err("cannot reuse already awaited coroutine"));
                }
            }
        };
        let out = Pending::step(pending.bind(py));
        if !matches!(out, Ok(Some(_))) {
            *this.lock() = Step::Finished;
        }
        out
    }
}

#[pymethods]
impl SetCall {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The awaiting frame's step (or a task's, through `send(None)`).
    fn __next__(slf: &Bound<'_, Self>) -> PyResult<Option<Py<PyAny>>> {
        SetCall::advance(slf)
    }

    /// A coroutine's `send`: a task sends None; any value is taken as None.
    fn send(slf: &Bound<'_, Self>, _value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        match SetCall::advance(slf)? {
            Some(yielded) => Ok(yielded),
            // The answer is in the StopIteration `Pending::step` set.
            None => Err(PyErr::take(py).unwrap_or_else(|| PyStopIteration::new_err(()))),
        }
    }

    /// Raises `typ` (an exception, or its class and `val`) where the
    /// coroutine waits. A cancellation gives up on the write if its group has
    /// not started; any other exception leaves the write to finish unheard.
    #[pyo3(signature = (typ, val=None, _tb=None))]
    fn throw(
        &self,
        py: Python<'_>,
        typ: &Bound<'_, PyAny>,
        val: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let err = match (typ.cast::<PyType>(), val.filter(|v| !v.is_none())) {
            (Ok(cls), Some(v)) if v.is_instance(cls)? => PyErr::from_value(v.clone()),
            (Ok(cls), Some(v)) => PyErr::from_value(cls.call1((v,))?),
            _ => PyErr::from_value(typ.clone()),
        };
        let step = std::mem::replace(&mut *self.lock(), Step::Finished);
        if let Step::Waiting(p) = step {
            let cancelled = CANCELLED.get_or_try_init(py, || -> PyResult<Py<PyType>> {
                Ok(py
                    .import("asyncio")?
                    .getattr("CancelledError")?
                    .cast_into::<PyType>()?
                    .unbind())
            })?;
            if err.is_instance(py, cancelled.bind(py)) {
                Pending::cancel(p.bind(py), None)?;
            }
        }
        Err(err)
    }

    /// Closes the coroutine: an unstarted write never runs; a started one
    /// finishes unheard.
    fn close(&self) {
        let step = std::mem::replace(&mut *self.lock(), Step::Finished);
        drop(step);
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(step) = self.step.try_lock() {
            match &*step {
                Step::Unstarted { bucket, key, value } => {
                    visit.call(bucket)?;
                    visit.call(key)?;
                    visit.call(value)?;
                }
                Step::Waiting(p) => visit.call(p)?,
                Step::Finished => {}
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        let step = std::mem::replace(&mut *self.lock(), Step::Finished);
        drop(step); // outside the lock
    }
}
