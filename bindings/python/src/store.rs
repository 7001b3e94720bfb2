//! The store: open, close, clock, maintenance.

use std::path::PathBuf;

use pyo3::prelude::*;
use tinystore::{Options, Store as CoreStore, from_millis, to_millis};

use crate::convert::{Answered, Arg, int_of, span};
use crate::errors::{py_err, to_py};
use crate::pending::Pending;

/// An open store (a directory holding kv.db).
#[pyclass(frozen, module = "tinystore._native")]
pub struct Store {
    pub store: CoreStore,
    /// Opened with a memory budget: a write's submit may wait for memory,
    /// so its async writes are not handed over from inside Python code.
    pub budgeted: bool,
}

#[pymethods]
impl Store {
    /// Opens the store in `dir`; `clock_ms` gives it a manual test clock,
    /// `memory` a memory budget in bytes (`Options::memory`), `mmap_size`
    /// the bytes of kv.db each reader maps (`Options::mmap_size`),
    /// `keep_read_locks` whether readers keep their read-mark lock between
    /// reads (`Options::keep_read_locks`), `share_with_group` whether the
    /// files it creates are its group's too (`Options::share_with_group`).
    #[new]
    #[pyo3(signature = (dir, clock_ms=None, memory: "int | None" = None, mmap_size: "int | None" = None, keep_read_locks=None, share_with_group=None))]
    fn new(
        py: Python<'_>,
        dir: PathBuf,
        clock_ms: Option<i64>,
        memory: Option<&Arg<'_>>,
        mmap_size: Option<&Arg<'_>>,
        keep_read_locks: Option<bool>,
        share_with_group: Option<bool>,
    ) -> PyResult<Store> {
        let mut opts = Options::new();
        if let Some(ms) = clock_ms {
            opts = opts.test_clock(from_millis(ms));
        }
        let size = |obj: &Arg<'_>, option| int_of(obj, option).and_then(|n| tinystore::store_size(option, n));
        if let Some(n) = memory {
            let bytes = size(n, "memory").map_err(|e| to_py(py, e))?;
            opts = opts.memory(usize::try_from(bytes).unwrap_or(usize::MAX));
        }
        if let Some(n) = mmap_size {
            opts = opts.mmap_size(size(n, "mmap_size").map_err(|e| to_py(py, e))?);
        }
        if let Some(on) = keep_read_locks {
            opts = opts.keep_read_locks(on);
        }
        if let Some(on) = share_with_group {
            opts = opts.share_with_group(on);
        }
        let store = py.detach(|| CoreStore::open_with(&dir, opts)).map_err(py_err(py))?;
        Ok(Store {
            store,
            budgeted: memory.is_some(),
        })
    }

    /// Writes what memory holds and closes the file.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.store.close()).map_err(py_err(py))
    }

    /// Whether the store is closed.
    fn is_closed(&self) -> bool {
        self.store.is_closed()
    }

    /// Runs maintenance now: (flushed, renewed, cleared, expired, more).
    fn maintain(&self, py: Python<'_>) -> PyResult<(usize, usize, usize, usize, bool)> {
        let m = py.detach(|| self.store.maintain()).map_err(py_err(py))?;
        Ok((m.flushed, m.renewed, m.cleared, m.expired, m.more))
    }

    /// Every name in the file with its kind.
    fn names(&self, py: Python<'_>) -> PyResult<Vec<(String, String)>> {
        py.detach(|| self.store.names()).map_err(py_err(py))
    }

    /// The directory.
    fn dir(&self) -> PathBuf {
        self.store.dir().to_path_buf()
    }

    /// Whether the store has a test clock (and runs nothing in the background).
    fn is_manual(&self) -> bool {
        self.store.is_manual()
    }

    /// (groups committed, writes in them) since the store opened.
    fn group_stats(&self) -> (u64, u64) {
        self.store.group_stats()
    }

    /// Refuses a transaction that the task whose id is `by` would open
    /// inside one of its own of this store (the core's refusal).
    fn refuse_tx(&self, py: Python<'_>, by: u64) -> PyResult<()> {
        self.store
            .refuse_tx(&crate::caller::caller(py), by)
            .map_err(crate::errors::py_err(py))
    }

    /// Starts a transaction without blocking the loop `running`: a
    /// `Pending` of the `Tx` when the writer's turn comes (cancelling it
    /// gives the turn up), and one of its commit once durable.
    #[pyo3(signature = (running: "asyncio.AbstractEventLoop"))]
    fn tx_then<'py>(&self, running: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, Pending>, Bound<'py, Pending>)> {
        crate::tx::start_then(&self.store, running)
    }

    /// Starts a transaction, blocking this thread (not the GIL) until the writer's turn.
    #[pyo3(signature = () -> "Tx")]
    fn tx(&self, py: Python<'_>) -> Answered {
        crate::tx::start(py, &self.store)
    }

    /// Opens a read snapshot.
    fn view(&self, py: Python<'_>) -> PyResult<crate::tx::View> {
        crate::tx::view(py, &self.store)
    }

    /// Makes the next group's commit fail, as a failed fsync would. For tests.
    fn fail_next_commit_for_tests(&self) {
        self.store.fail_next_commit_for_tests();
    }

    /// The store's time, in ms since the epoch.
    fn clock_now(&self) -> i64 {
        self.store.clock().now_millis()
    }

    /// Moves the test clock forward by a duration; returns the new time in ms.
    #[pyo3(signature = (by: "_Span"))]
    fn clock_advance(&self, py: Python<'_>, by: &Arg<'_>) -> PyResult<i64> {
        let d = span(by, "the clock's step").map_err(py_err(py))?;
        let t = self.store.clock().advance(d).map_err(py_err(py))?;
        Ok(to_millis(t))
    }

    /// Sets the test clock to a time in ms (never back).
    fn clock_set(&self, py: Python<'_>, ms: i64) -> PyResult<()> {
        self.store.clock().set(from_millis(ms)).map_err(|e| to_py(py, e))
    }
}
