//! The limit store for app frameworks (`tinystore.limit_store`): glue over
//! the core's `LimitStore`, whose rules (hashing, versions, the bound, the
//! deadline) stay in the core.
//!
//! An update's `apply` is the caller's Python function, so an update is a
//! [`LimitUpdate`]: `begin` reads the entries, Python calls `apply`, and
//! `commit_then` (asyncio) or `commit` (threads) hands the changes to the
//! writer; the answer says whether they were written or `apply` must run
//! again on the entries the core read meanwhile (kept in this object).
//! Events to log wait beside the answer, so they are logged whether the
//! commit succeeded or raised.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use tinystore::{Change, Commit, LimitEntry, LimitEvent, Store as CoreStore};

use crate::completions::{Completions, Resolve, Ticket};
use crate::errors::{invalid, py_err, to_py};
use crate::store::Store;

/// An entry as Python gets it before `json.loads`: `(json_text, expires_ms)`.
type PyEntry = Option<(String, i64)>;
/// A commit's answer: `(written, entries, now)`.
type CommitAnswer = (bool, Vec<PyEntry>, i64);

fn py_entries(entries: &[Option<LimitEntry>]) -> Vec<PyEntry> {
    entries
        .iter()
        .map(|e| e.as_ref().map(|e| (e.value.clone(), e.expires_at)))
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A limit store over an open store.
#[pyclass(frozen, module = "tinystore._native")]
pub struct LimitStore {
    ls: tinystore::LimitStore,
    store: CoreStore,
}

#[pymethods]
impl LimitStore {
    /// Opens the limit store of `store`, bounded to `max_entries`.
    #[new]
    #[pyo3(signature = (store, max_entries=None, name=None))]
    fn new(py: Python<'_>, store: &Store, max_entries: Option<usize>, name: Option<String>) -> PyResult<LimitStore> {
        let core = store.store.clone();
        let ls = py
            .detach(|| {
                let mut b = tinystore::LimitStore::builder(&core);
                if let Some(n) = max_entries {
                    b = b.max_entries(n);
                }
                if let Some(name) = &name {
                    b = b.name(name);
                }
                b.open()
            })
            .map_err(py_err(py))?;
        Ok(LimitStore { ls, store: core })
    }

    /// The bound on entries.
    #[getter]
    fn max_entries(&self) -> usize {
        self.ls.max_entries()
    }

    /// The live entries of `keys`, in their order (`None`: absent).
    fn read(&self, py: Python<'_>, keys: Vec<String>) -> PyResult<Vec<PyEntry>> {
        let entries = py.detach(|| self.ls.read(&keys)).map_err(py_err(py))?;
        Ok(py_entries(&entries))
    }

    /// Starts an update of `keys`: reads their entries for `apply`.
    fn begin(&self, py: Python<'_>, keys: Vec<String>) -> PyResult<LimitUpdate> {
        let u = py.detach(|| self.ls.begin(&keys)).map_err(py_err(py))?;
        Ok(LimitUpdate {
            update: Arc::new(Mutex::new(Some(u))),
            events: Arc::new(Mutex::new(Vec::new())),
            store: self.store.clone(),
        })
    }

    /// Removes expired entries, blocking; returns how many went.
    fn sweep(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| self.ls.sweep()).map_err(py_err(py))
    }

    /// The completion form of `sweep`: resolves `future` with how many went.
    #[pyo3(signature = (completions, future: "asyncio.Future[Any]"))]
    fn sweep_then(&self, completions: &Bound<'_, Completions>, future: Py<PyAny>) -> PyResult<Ticket> {
        let (q, store, ls) = (completions.get().queue.clone(), self.store.clone(), self.ls.clone());
        Completions::defer(completions, future, &self.store, move |future| {
            ls.sweep_then(move |r| {
                let resolve: Resolve =
                    Box::new(move |py| r.map_err(|e| to_py(py, e)).and_then(|s| s.removed.into_py_any(py)));
                q.push(&store, future, resolve)
            })
        })
    }

    /// Entries held, as the count in the file says.
    fn entries(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| self.ls.entries()).map_err(py_err(py))
    }
}

/// One update in progress.
#[pyclass(frozen, module = "tinystore._native")]
pub struct LimitUpdate {
    update: Arc<Mutex<Option<tinystore::LimitUpdate>>>,
    events: Arc<Mutex<Vec<LimitEvent>>>,
    store: CoreStore,
}

/// The changes from `(kind, json_text, expires_ms)` triples: kind 0 keeps
/// the key, 1 deletes it, 2 writes the entry.
fn changes(raw: Vec<(u8, String, i64)>) -> tinystore::Result<Vec<Change>> {
    raw.into_iter()
        .map(|(kind, value, expires_at)| match kind {
            0 => Ok(Change::Keep),
            1 => Ok(Change::Delete),
            2 => Ok(Change::Put(LimitEntry { value, expires_at })),
            k => Err(invalid(format!("no change of kind {k}"))),
        })
        .collect()
}

impl LimitUpdate {
    fn take(&self) -> tinystore::Result<tinystore::LimitUpdate> {
        lock(&self.update)
            .take()
            .ok_or_else(|| invalid("this update was already committed or given up"))
    }

    /// Submits the changes; `answer` gets the outcome (events are kept aside).
    fn submit(
        &self,
        u: tinystore::LimitUpdate,
        changes: Vec<Change>,
        answer: impl FnOnce(tinystore::Result<CommitAnswer>) + Send + 'static,
    ) -> tinystore::Result<tinystore::Ticket> {
        let (held, events) = (self.update.clone(), self.events.clone());
        u.commit_then(changes, move |c| match c {
            Commit::Done(d) => {
                lock(&events).extend(d.events);
                answer(Ok((true, py_entries(&d.entries), 0)));
            }
            Commit::Retry(next) => {
                let a = (false, py_entries(next.entries()), next.now());
                *lock(&held) = Some(next);
                answer(Ok(a));
            }
            Commit::Failed(e, ev) => {
                lock(&events).extend(ev);
                answer(Err(e));
            }
        })
    }
}

#[pymethods]
impl LimitUpdate {
    /// The entries `apply` gets, in the keys' order.
    fn entries(&self) -> Vec<PyEntry> {
        lock(&self.update)
            .as_ref()
            .map(|u| py_entries(u.entries()))
            .unwrap_or_default()
    }

    /// The store's clock for `apply`, in ms.
    fn now(&self) -> i64 {
        lock(&self.update).as_ref().map_or(0, |u| u.now())
    }

    /// Gives the update up (apply raised): nothing is written.
    fn cancel(&self) {
        lock(&self.update).take();
    }

    /// The events to log since the last call: `(kind, message, is_error)`.
    fn take_events(&self) -> Vec<(String, String, bool)> {
        std::mem::take(&mut *lock(&self.events))
            .into_iter()
            .map(|e| (e.kind().to_owned(), e.to_string(), e.is_error()))
            .collect()
    }

    /// Writes the changes, blocking with the GIL released: `(True, entries, 0)`
    /// when written, `(False, entries, now)` when `apply` must run again.
    fn commit(&self, py: Python<'_>, changes: Vec<(u8, String, i64)>) -> PyResult<CommitAnswer> {
        let changes = self::changes(changes).map_err(py_err(py))?;
        let u = self.take().map_err(py_err(py))?;
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(u, changes, move |r| {
            let _ = tx.send(r);
        })
        .map_err(py_err(py))?;
        py.detach(move || {
            rx.recv()
                .unwrap_or_else(|_| Err(tinystore::Error::new(tinystore::ErrorKind::Closed, "the store closed")))
        })
        .map_err(py_err(py))
    }

    /// The completion form of `commit`: resolves `future` with its answer.
    #[pyo3(signature = (completions, future: "asyncio.Future[Any]", changes))]
    fn commit_then(
        &self,
        py: Python<'_>,
        completions: &Bound<'_, Completions>,
        future: Py<PyAny>,
        changes: Vec<(u8, String, i64)>,
    ) -> PyResult<Ticket> {
        let changes = self::changes(changes).map_err(py_err(py))?;
        let u = self.take().map_err(py_err(py))?;
        let q = completions.get().queue.clone();
        let store = self.store.clone();
        let this = LimitUpdate {
            update: self.update.clone(),
            events: self.events.clone(),
            store: self.store.clone(),
        };
        Completions::defer(completions, future, &self.store, move |future| {
            this.submit(u, changes, move |r| {
                let resolve: Resolve = Box::new(move |py| r.map_err(|e| to_py(py, e)).and_then(|a| a.into_py_any(py)));
                q.push(&store, future, resolve)
            })
        })
    }
}
