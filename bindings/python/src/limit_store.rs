//! The limit store for app frameworks (`tinystore.limit_store`): glue over
//! the core's `LimitStore`, whose rules (hashing, versions, the bound, the
//! deadline) stay in the core.
//!
//! An update's `apply` is the caller's Python function, so an update is
//! the core's [`UpdateSteps`]: `begin` reads the entries, Python calls
//! `apply`, and `commit_then` (asyncio) or `commit` (threads) hands what it
//! returned to the core, which checks it, writes it and answers whether
//! `apply` must run again on the entries read meanwhile.

use pyo3::prelude::*;
use tinystore::{LimitEntry, ReturnedEntry, Store as CoreStore, Swept, UpdateSteps};

use crate::convert::{Answered, Arg, int_of};
use crate::errors::py_err;
use crate::reply;
use crate::scope::{Call, on_store};
use crate::store::Store;

/// An entry as Python gets it before `json.loads`: `(json_text, expires_ms)`.
type PyEntry = Option<(String, i64)>;
/// What `apply` returned for one key, converted: `(key, None)` deletes,
/// `(key, (json_text, None, expires_ms))` writes, and `(key, (None, why,
/// expires_ms))` is a value `json.dumps` refused, with its reason.
type PyReturned = (String, Option<(Option<String>, Option<String>, f64)>);

fn py_entries(entries: &[Option<LimitEntry>]) -> Vec<PyEntry> {
    entries
        .iter()
        .map(|e| e.as_ref().map(|e| (e.value.clone(), e.expires_at)))
        .collect()
}

/// A limit store over an open store.
#[pyclass(frozen, module = "tinystore._native")]
pub struct LimitStore {
    ls: tinystore::LimitStore,
    store: CoreStore,
}

#[pymethods]
impl LimitStore {
    /// Opens the limit store of `store`, bounded to `max_entries` (an int
    /// the core checks).
    #[new]
    #[pyo3(signature = (store, max_entries: "int | None" = None, name=None))]
    fn new(py: Python<'_>, store: &Store, max_entries: Option<&Arg<'_>>, name: Option<String>) -> PyResult<LimitStore> {
        let core = store.store.clone();
        let mut b = tinystore::LimitStore::builder(&core);
        if let Some(name) = &name {
            b = b.name(name);
        }
        if let Some(n) = max_entries.filter(|n| !n.is_none()) {
            let named = |e: tinystore::Error| e.in_bucket(name.as_deref().unwrap_or(tinystore::LIMIT_STORE_NAME));
            b = b.max_entries_given(int_of(n, "max_entries").map_err(named).map_err(py_err(py))?);
        }
        let ls = py.detach(|| b.open()).map_err(py_err(py))?;
        Ok(LimitStore { ls, store: core })
    }

    /// The name a limit store's rows live under unless it is given one.
    #[staticmethod]
    fn default_name() -> &'static str {
        tinystore::LIMIT_STORE_NAME
    }

    /// The name its rows live under, which its errors name.
    #[getter]
    fn name(&self) -> &str {
        self.ls.name()
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
        let steps = py.detach(|| self.ls.steps(keys)).map_err(py_err(py))?;
        Ok(LimitUpdate {
            steps,
            store: self.store.clone(),
            name: self.ls.name().to_owned(),
        })
    }

    /// Removes expired entries; returns how many went (`running`: None to
    /// block, or the asyncio loop that awaits it).
    #[pyo3(signature = (running: "asyncio.AbstractEventLoop | None" = None))]
    fn sweep(&self, py: Python<'_>, running: Option<&Arg<'_>>) -> Answered {
        let running = on_store(py, running, || tinystore::store_only_refused("sweep", self.ls.name()))?;
        Call::of(&self.ls, &self.store).run(
            py,
            running,
            (),
            reply::value,
            |_, ls, ()| ls.sweep(),
            |ls, (), r| ls.sweep_then(move |out: tinystore::Result<Swept>| r.send(out.map(|s| s.removed))),
        )
    }

    /// Entries held, as the count in the file says.
    fn entries(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| self.ls.entries()).map_err(py_err(py))
    }
}

/// One update in progress.
#[pyclass(frozen, module = "tinystore._native")]
pub struct LimitUpdate {
    steps: UpdateSteps,
    store: CoreStore,
    /// The limit store's name, for the errors of its calls.
    name: String,
}

fn returned(raw: Vec<PyReturned>) -> Vec<(String, tinystore::Returned)> {
    raw.into_iter()
        .map(|(key, r)| {
            let entry = r.map(|(text, why, expires_at)| ReturnedEntry {
                json: text.ok_or_else(|| why.unwrap_or_default()),
                expires_at,
            });
            (key, entry)
        })
        .collect()
}

#[pymethods]
impl LimitUpdate {
    /// The entries `apply` gets, in the keys' order; once written, the
    /// entries written.
    fn entries(&self) -> Vec<PyEntry> {
        py_entries(&self.steps.entries())
    }

    /// The store's clock for `apply`, in ms.
    fn now(&self) -> i64 {
        self.steps.now()
    }

    /// Gives the update up (apply raised): nothing is written.
    fn cancel(&self) {
        self.steps.give_up();
    }

    /// The events to log since the last call: `(kind, message, is_error)`.
    fn take_events(&self) -> Vec<(String, String, bool)> {
        self.steps
            .take_events()
            .into_iter()
            .map(|e| (e.kind().to_owned(), e.to_string(), e.is_error()))
            .collect()
    }

    /// Writes what `apply` returned: True when written, False when `apply`
    /// must run again on `entries()` (`running`: None to block with the GIL
    /// released, or the asyncio loop that awaits it).
    #[pyo3(signature = (changes, running: "asyncio.AbstractEventLoop | None" = None))]
    fn commit(&self, py: Python<'_>, changes: Vec<PyReturned>, running: Option<&Arg<'_>>) -> Answered {
        let running = on_store(py, running, || tinystore::store_only_refused("commit", &self.name))?;
        Call::of(&self.steps, &self.store).run(
            py,
            running,
            returned(changes),
            reply::value,
            |_, steps, changes| reply::blocking(|done| steps.commit_then(changes, done)),
            |steps, changes, r| steps.commit_then(changes, r.done()),
        )
    }
}
