//! Writes between an asyncio loop and the store's writer thread.
//!
//! Going out: a coroutine's write is converted at once (so bad input raises
//! in the call). A bucket's write on a store without a memory budget is
//! handed to the core there and then, inside the burst the loop's thread
//! holds open ([`tinystore::open_thread_burst`]) until the iteration's
//! writes are made (the end of `drain`, or the `flush` the first write
//! scheduled): the writer runs each write while the loop makes the next, and
//! commits them as one group when the burst ends. The loop's Python work and
//! the writer's inserts overlap instead of taking turns. Every other write
//! (limits, transactions, a store with a budget, whose submit may wait for
//! memory) waits for the end of the iteration ([`tinystore::TurnWrites`])
//! and is handed over with the rest in one tight loop without the GIL.
//!
//! Coming back: the core calls a write's completion on its writer thread
//! once the group is durable. That thread must never wait for the GIL (it
//! would stall every other write of the store), so a completion only pushes
//! the result onto the loop's [`tinystore::AnswerQueue`], which wakes the
//! loop once per group by writing one byte to a socket pair. The loop
//! watches the other end with `add_reader` and `drain`s the queue: it
//! converts each result to Python and resolves its future, on the loop's own
//! thread. One wake-up serves every answer queued meanwhile. A bucket's
//! write answers through a [`Pending`] instead of a future: `drain` wakes
//! the task waiting on it there and then, and hands the writes those tasks
//! make next to the core before it returns.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::{PyTraverseError, PyVisit};
use tinystore::{Store, TicketCell, TurnWrites};

use crate::errors::to_py;
use crate::pending::Pending;

/// Turns a result into the Python value (or exception) of its future.
pub type Resolve = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

pub(crate) struct Answer {
    future: Py<PyAny>,
    resolve: Resolve,
    /// The store, held until the loop resolved the answer: the writer thread
    /// must never drop the last reference to its own store (closing it
    /// would join the writer from itself).
    store: Store,
}

impl Answer {
    /// The answer of `future`, which `resolve` makes on the loop's thread.
    pub(crate) fn new(store: &Store, future: Py<PyAny>, resolve: Resolve) -> Answer {
        Answer {
            future,
            resolve,
            store: store.clone(),
        }
    }
}

/// The loop's answers (pushed on any thread, never with the GIL) and the
/// socket pair's end that wakes it.
pub(crate) type Queue = tinystore::AnswerQueue<Answer, Socket>;

/// The end of the socket pair the writer writes a byte to.
pub(crate) struct Socket(UnixStream);

impl tinystore::Wake for Socket {
    fn wake(&self) {
        // A full socket buffer means a wake-up is already pending.
        let _ = (&self.0).write(&[1]);
    }
}

/// The guard of `m`, a poisoned one too: a panic elsewhere leaves each
/// guarded value whole, so the next call may go on with it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The running event loop of this thread, as `asyncio.get_running_loop()`
/// gives it (and raising as it does when none runs).
///
/// That call costs a `getpid` system call each time (CPython checks the
/// loop was not inherited across a fork), about 0.65 us here: a twentieth
/// of a durable set at 64 in flight. The last loop found is kept with its
/// thread instead, and taken again while its `_thread_id` (set by
/// `BaseEventLoop.run_forever` while it runs, None after) names this
/// thread: a thread runs one loop at a time, so that loop is the running
/// one. A loop without `_thread_id` (uvloop) is asked for every time.
pub fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    static LAST: Mutex<Option<(std::ffi::c_ulong, Py<PyAny>)>> = Mutex::new(None);
    static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    // SAFETY: with the GIL; no arguments, no failure.
    let me = unsafe { pyo3::ffi::PyThread_get_thread_ident() };
    let cached = lock(&LAST)
        .as_ref()
        .filter(|(thread, _)| *thread == me)
        .map(|(_, lp)| lp.clone_ref(py));
    if let Some(lp) = cached {
        let lp = lp.into_bound(py);
        let runs_here = lp
            .getattr(intern!(py, "_thread_id"))
            .and_then(|t| t.extract::<std::ffi::c_ulong>())
            .is_ok_and(|t| t == me);
        if runs_here {
            return Ok(lp);
        }
    }
    let lp = GET_RUNNING_LOOP.import(py, "asyncio", "get_running_loop")?.call0()?;
    let old = lock(&LAST).replace((me, lp.clone().unbind()));
    drop(old); // with the GIL, outside the lock
    Ok(lp)
}

/// Hands a converted write to the core; gets the future to resolve.
type Submit = Box<dyn FnOnce(Py<PyAny>) -> tinystore::Result<tinystore::Ticket> + Send>;

/// A write waiting for the end of the loop's iteration.
struct Deferred {
    submit: Submit,
    future: Py<PyAny>,
    /// A second reference to the future, to answer it if the core refuses
    /// the write (the store closed meanwhile).
    spare: Py<PyAny>,
    ticket: Arc<TicketCell>,
    store: Store,
}

/// The write queue and the answer queue of one event loop.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Completions {
    pub(crate) queue: Arc<Queue>,
    watched: UnixStream,
    pending: Mutex<TurnWrites<Deferred>>,
    /// The answer buffer the last `drain` emptied, traded for the queue's
    /// next time (see `tinystore::AnswerQueue::swap`).
    answered: Mutex<Vec<Answer>>,
    /// A weak reference to the loop, to schedule `flush` without keeping it alive.
    pub(crate) loop_ref: Py<PyAny>,
    /// An `asyncio.Future` of the loop, done with None, made at the first
    /// `drain`: what a waiting task's wake-up gets for a write that succeeded
    /// (see `Pending::finish`).
    succeeded: Mutex<Option<Py<PyAny>>>,
}

impl Completions {
    /// The queues of the running loop `lp`: the last loop's, kept here (a
    /// write pays no Python call to find them), else the package's
    /// registry's, `tinystore._loop.completions`, which makes and registers
    /// a new loop's. Like that registry's own cache, this keeps the last
    /// loop it served alive.
    pub fn of_loop<'py>(lp: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Completions>> {
        static LAST: Mutex<Option<(Py<PyAny>, Py<Completions>)>> = Mutex::new(None);
        static REGISTRY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let py = lp.py();
        if let Some((l, c)) = lock(&LAST).as_ref()
            && l.is(lp)
        {
            return Ok(c.bind(py).clone());
        }
        let registry = REGISTRY.import(py, "tinystore._loop", "completions")?;
        let found = registry.call1((lp,))?.cast_into::<Completions>()?;
        let old = lock(&LAST).replace((lp.clone().unbind(), found.clone().unbind()));
        drop(old); // with the GIL, outside the lock
        Ok(found)
    }

    /// A `Pending` of this loop, for a call made now.
    pub fn new_pending<'py>(slf: &Bound<'py, Completions>) -> PyResult<Bound<'py, Pending>> {
        let py = slf.py();
        Bound::new(py, Pending::new(py, &slf.get().loop_ref))
    }

    /// Queues a write for the end of this iteration of the loop, answered
    /// through `pending`; `submit` hands it to the core with the future its
    /// completion resolves.
    /// `stream`: hand it to the core at once, into this iteration's burst
    /// (only where `submit` never waits: a store without a memory budget).
    pub fn defer_into(
        slf: &Bound<'_, Completions>,
        store: &Store,
        stream: bool,
        pending: &Bound<'_, Pending>,
        submit: impl FnOnce(Py<PyAny>) -> tinystore::Result<tinystore::Ticket> + Send + 'static,
    ) -> PyResult<()> {
        let py = slf.py();
        pending.get().made_on(py, &slf.get().loop_ref);
        let ticket = pending.get().ticket.clone();
        let (future, spare) = (pending.clone().into_any().unbind(), pending.clone().into_any().unbind());
        Completions::queue(slf, future, spare, ticket, store, stream, Box::new(submit))
    }

    #[allow(clippy::too_many_arguments)]
    fn queue(
        slf: &Bound<'_, Completions>,
        future: Py<PyAny>,
        spare: Py<PyAny>,
        ticket: Arc<TicketCell>,
        store: &Store,
        stream: bool,
        submit: Submit,
    ) -> PyResult<()> {
        let py = slf.py();
        if store.is_closed() {
            return Err(to_py(py, tinystore::Error::closed()));
        }
        store
            .refuse_write(|| crate::caller::caller(py))
            .map_err(|e| to_py(py, e))?;
        let this = slf.get();
        // A write waiting for the flush goes before any made after it:
        // while one waits, the later ones wait too.
        if stream && lock(&this.pending).is_empty() {
            // Outside `drain` (which closes its own burst): end this one
            // with the iteration.
            if tinystore::open_thread_burst()
                && let Err(e) = Completions::schedule_flush(slf)
            {
                tinystore::close_thread_burst();
                return Err(e);
            }
            match submit(future) {
                Ok(t) => ticket.handed_over(t),
                Err(e) => this
                    .queue
                    .push(Answer::new(store, spare, Box::new(move |py| Err(to_py(py, e))))),
            }
            return Ok(());
        }
        let deferred = Deferred {
            submit,
            future,
            spare,
            ticket,
            store: store.clone(),
        };
        if lock(&this.pending).hold(deferred) {
            Completions::schedule_flush(slf)?;
        }
        Ok(())
    }

    /// The loop's done Future for a task's wake-up (see `Pending::finish`);
    /// None when the loop is gone or makes no Future, and the tasks are
    /// woken with the `Pending` itself.
    fn succeeded<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        if let Some(f) = lock(&self.succeeded).as_ref() {
            return Some(f.bind(py).clone());
        }
        let made = (|| -> PyResult<Option<Bound<'py, PyAny>>> {
            let lp = self.loop_ref.bind(py).call0()?;
            if lp.is_none() {
                return Ok(None);
            }
            let kw = pyo3::types::PyDict::new(py);
            kw.set_item(intern!(py, "loop"), lp)?;
            let f = py.import("asyncio")?.getattr("Future")?.call((), Some(&kw))?;
            f.call_method1(intern!(py, "set_result"), (py.None(),))?;
            Ok(Some(f))
        })();
        let f = made.ok().flatten()?;
        *lock(&self.succeeded) = Some(f.clone().unbind());
        Some(f)
    }

    /// Runs `flush` at the loop's next iteration.
    fn schedule_flush(slf: &Bound<'_, Completions>) -> PyResult<()> {
        let py = slf.py();
        let lp = slf.get().loop_ref.bind(py).call0()?;
        if !lp.is_none() {
            lp.call_method1(intern!(py, "call_soon"), (slf.getattr(intern!(py, "flush"))?,))?;
        }
        Ok(())
    }
}

#[pymethods]
impl Completions {
    /// The queues of the loop `loop_ref()`; the package registers `fileno()`
    /// with the loop's `add_reader`.
    #[new]
    #[pyo3(signature = (loop_ref: "Callable[[], asyncio.AbstractEventLoop | None]"))]
    fn new(loop_ref: Py<PyAny>) -> PyResult<Completions> {
        let (watched, wake) = UnixStream::pair()?;
        watched.set_nonblocking(true)?;
        wake.set_nonblocking(true)?;
        Ok(Completions {
            queue: Arc::new(Queue::new(Socket(wake))),
            watched,
            pending: Mutex::new(TurnWrites::new()),
            answered: Mutex::new(Vec::new()),
            loop_ref,
            succeeded: Mutex::new(None),
        })
    }

    /// The done Future refers to the loop, which refers to `drain` (its
    /// reader): the collector must see that cycle.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.loop_ref)?;
        if let Ok(f) = self.succeeded.try_lock() {
            visit.call(&*f)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        let f = lock(&self.succeeded).take();
        drop(f); // outside the lock
    }

    /// The file descriptor the loop watches.
    fn fileno(&self) -> i32 {
        self.watched.as_raw_fd()
    }

    /// Hands the writes of this iteration to the core, back to back and
    /// without the GIL, and ends the burst the streamed ones joined. A
    /// write cancelled meanwhile is never handed over.
    fn flush(&self, py: Python<'_>) {
        let mut writes = {
            let mut p = lock(&self.pending);
            if p.is_empty() {
                drop(p);
                tinystore::close_thread_burst();
                return;
            }
            p.take()
        };
        let queue = self.queue.clone();
        let (spares, emptied) = py.detach(move || {
            let mut spares = Vec::with_capacity(writes.len());
            tinystore::hand_over_turn(&mut writes, |w| {
                if w.ticket.cancelled() {
                    spares.push(w.future);
                    spares.push(w.spare);
                    return;
                }
                match (w.submit)(w.future) {
                    Ok(t) => {
                        w.ticket.handed_over(t);
                        spares.push(w.spare);
                    }
                    Err(e) => queue.push(Answer::new(&w.store, w.spare, Box::new(move |py| Err(to_py(py, e))))),
                }
            });
            (spares, writes)
        });
        drop(spares); // with the GIL: these are the last references of some futures
        lock(&self.pending).give_back(emptied);
    }

    /// Resolves every queued future, on the loop's thread. A future that was
    /// cancelled meanwhile is skipped: its caller went away. The task
    /// waiting on a [`Pending`] steps here, in this one callback of the loop.
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        let mut buf = [0u8; 256];
        while let Ok(n) = (&self.watched).read(&mut buf) {
            if n < buf.len() {
                break;
            }
        }
        // The writer answers a group one write at a time, and the first
        // answer wakes the loop: take again until the queue stays empty, so
        // that a group's answers resolve in one pass and their coroutines
        // write again together (as one group, not three).
        let mut stores = Vec::new();
        let mut fatal = None;
        // The tasks woken here write again: their writes stream into one
        // burst, which the flush at the end closes.
        tinystore::open_thread_burst();
        let _end = tinystore::ThreadBurstEnd;
        let mut answers = std::mem::take(&mut *lock(&self.answered));
        let succeeded = self.succeeded(py);
        loop {
            self.queue.swap(&mut answers);
            if answers.is_empty() {
                break;
            }
            stores.reserve(answers.len());
            for a in answers.drain(..) {
                stores.push(a.store);
                let future = a.future.bind(py);
                if let Ok(pending) = future.cast::<Pending>() {
                    if pending.get().is_done() {
                        continue;
                    }
                    if let Some(e) = Pending::finish(pending, (a.resolve)(py), succeeded.as_ref()) {
                        fatal.get_or_insert(e);
                    }
                    continue;
                }
                if future.call_method0(intern!(py, "done"))?.is_truthy()? {
                    continue;
                }
                let set = match (a.resolve)(py) {
                    Ok(v) => future.call_method1(intern!(py, "set_result"), (v,)),
                    Err(e) => future.call_method1(intern!(py, "set_exception"), (e.value(py),)),
                };
                if let Err(e) = set {
                    e.print(py); // the loop is closing: nothing waits for this answer
                }
            }
        }
        *lock(&self.answered) = answers;
        // The tasks woken here wrote again: hand their writes over now, not
        // an iteration of the loop later (the flush they scheduled finds
        // nothing left).
        self.flush(py);
        // The last reference to a store closes it, which waits for its writer:
        // never with the GIL held.
        py.detach(move || drop(stores));
        fatal.map_or(Ok(()), Err)
    }
}
