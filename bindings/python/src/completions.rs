//! Answers of writes, carried from the writer thread to an asyncio loop.
//!
//! The core calls a write's completion on its writer thread once the group
//! is durable. That thread must never wait for the GIL (it would stall
//! every other write of the store), so a completion only pushes the result
//! onto a queue and, when the queue was empty, writes one byte to a socket
//! pair. The loop watches the other end with `add_reader` and `drain`s the
//! queue: it converts each result to Python and resolves its future, on the
//! loop's own thread. One wake-up serves every answer queued meanwhile,
//! which is what lets 64 answers of one group resolve in one pass.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use pyo3::intern;
use pyo3::prelude::*;
use tinystore::Store;

/// Turns a result into the Python value (or exception) of its future.
pub type Resolve = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

struct Answer {
    future: Py<PyAny>,
    resolve: Resolve,
    /// The store, held until the loop resolved the answer: the writer thread
    /// must never drop the last reference to its own store (closing it
    /// would join the writer from itself).
    store: Store,
}

pub struct Queue {
    answers: Mutex<Vec<Answer>>,
    wake: UnixStream,
}

impl Queue {
    /// Queues the answer of `future`; called on any thread, never takes the GIL.
    pub fn push(&self, store: &Store, future: Py<PyAny>, resolve: Resolve) {
        let was_empty = {
            let mut q = self.answers.lock().unwrap_or_else(|p| p.into_inner());
            let was_empty = q.is_empty();
            q.push(Answer {
                future,
                resolve,
                store: store.clone(),
            });
            was_empty
        };
        if was_empty {
            // A full socket buffer means a wake-up is already pending.
            let _ = (&self.wake).write(&[1]);
        }
    }
}

/// The queue of answers of one event loop, and the socket that wakes it.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Completions {
    pub queue: Arc<Queue>,
    watched: UnixStream,
}

#[pymethods]
impl Completions {
    /// A new queue; the package registers `fileno()` with the loop's `add_reader`.
    #[new]
    fn new() -> PyResult<Completions> {
        let (watched, wake) = UnixStream::pair()?;
        watched.set_nonblocking(true)?;
        wake.set_nonblocking(true)?;
        Ok(Completions {
            queue: Arc::new(Queue {
                answers: Mutex::new(Vec::new()),
                wake,
            }),
            watched,
        })
    }

    /// The file descriptor the loop watches.
    fn fileno(&self) -> i32 {
        self.watched.as_raw_fd()
    }

    /// Resolves every queued future, on the loop's thread. A future that was
    /// cancelled meanwhile is skipped: its caller went away.
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        let mut buf = [0u8; 256];
        while let Ok(n) = (&self.watched).read(&mut buf) {
            if n < buf.len() {
                break;
            }
        }
        let answers = std::mem::take(&mut *self.queue.answers.lock().unwrap_or_else(|p| p.into_inner()));
        let mut stores = Vec::with_capacity(answers.len());
        for a in answers {
            stores.push(a.store);
            let future = a.future.bind(py);
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
        // The last reference to a store closes it, which waits for its writer:
        // never with the GIL held.
        py.detach(move || drop(stores));
        Ok(())
    }
}
