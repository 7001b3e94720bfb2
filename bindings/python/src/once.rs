//! `once`: run a function once per key and keep its answer. Waiting for a
//! run elsewhere is by completion (`RawOnce::begin`), so one event loop can
//! hold the first run and a second one waiting for it at the same time.

use std::sync::{Arc, Mutex};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tinystore::{Begun, OnceDelete, Raw, RawOnce, Store as CoreStore};

use crate::completions::lock;
use crate::convert::{Answered, Arg, Codec, branch, key_in, opt_span};
use crate::errors::{py_err, to_py};
use crate::reply::{self, Answer};
use crate::scope::{Call, in_scope, on_store};
use crate::store::Store;

/// One once (or a branch of it), with the codec of its answers.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Once {
    pub(crate) raw: RawOnce,
    pub(crate) codec: Arc<Codec>,
}

/// The run of one key, held until `keep` or `abandon` (dropping it abandons).
#[pyclass(frozen, module = "tinystore._native")]
pub struct Claim {
    held: Mutex<Option<tinystore::Claim>>,
    codec: Arc<Codec>,
    name: String,
    path: String,
    store: CoreStore,
}

impl Once {
    pub(crate) fn key(&self, py: Python<'_>, key: &Arg<'_>) -> PyResult<Vec<u8>> {
        key_in(py, self.raw.name(), key)
    }

    fn path(&self, key: &[u8]) -> String {
        tinystore::show_path(self.raw.owners(), Some(key))
    }

    /// The answer of a begin: (True, answer) or (False, Claim).
    fn begun(&self, key: &[u8]) -> impl Answer<Begun> + use<> {
        let (codec, name, path, store) = (
            self.codec.clone(),
            self.raw.name().to_owned(),
            self.path(key),
            self.raw.store().clone(),
        );
        move |py: Python<'_>, b: Begun| match b {
            Begun::Kept(raw) => {
                let v = codec.to_py(py, &raw).map_err(|e| to_py(py, e.at(&name, path)))?;
                (true, v).into_py_any(py)
            }
            Begun::Run(claim) => {
                let claim = Claim {
                    held: Mutex::new(Some(claim)),
                    codec,
                    name,
                    path,
                    store,
                };
                (false, Bound::new(py, claim)?).into_py_any(py)
            }
        }
    }
}

#[pymethods]
impl Once {
    /// Opens the once `name`, keeping answers converted by `codec` for
    /// `keep` (a day when None).
    #[new]
    #[pyo3(signature = (store, name, codec: "_Codec", keep: "_Span | None" = None))]
    fn new(py: Python<'_>, store: &Store, name: &str, codec: &Arg<'_>, keep: Option<&Arg<'_>>) -> PyResult<Once> {
        let codec = Codec::of(py, name, "once", codec)?;
        let keep = opt_span(keep, "keep").map_err(|e| to_py(py, e.in_bucket(name)))?;
        let raw = py
            .detach(|| RawOnce::open(&store.store, name, keep))
            .map_err(py_err(py))?;
        Ok(Once { raw, codec })
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.raw.name()
    }

    /// The branch of `owners`.
    #[pyo3(signature = (*owners: "_Key"))]
    fn under(&self, py: Python<'_>, owners: &Bound<'_, PyTuple>) -> PyResult<Once> {
        let raw = branch(py, &self.raw, owners)?;
        Ok(Once {
            raw,
            codec: self.codec.clone(),
        })
    }

    /// The answer kept for the key, or None.
    #[pyo3(signature = (key: "_Key", scope: "Tx | View | None" = None))]
    fn get(&self, py: Python<'_>, key: &Arg<'_>, scope: Option<&Arg<'_>>) -> Answered {
        let k = self.key(py, key)?;
        match in_scope(py, scope, |s| s.once_get(&self.raw, &k))? {
            Some(raw) => self
                .codec
                .to_py(py, &raw)
                .map(Bound::unbind)
                .map_err(|e| to_py(py, e.at(self.raw.name(), self.path(&k)))),
            None => Ok(py.None()),
        }
    }

    /// Forgets the answer kept for the key; says whether one was kept.
    #[pyo3(signature = (key: "_Key", scope: "_Scope" = None))]
    fn delete(&self, py: Python<'_>, key: &Arg<'_>, scope: Option<&Arg<'_>>) -> Answered {
        let k = self.key(py, key)?;
        Call::of(&self.raw, self.raw.store()).write(py, scope, OnceDelete(k), reply::written)
    }

    /// Begins a run, waiting for any run of the key elsewhere: (True,
    /// answer) when one is kept, (False, Claim) when the key is the
    /// caller's to run. With `running`, the asyncio loop that awaits it,
    /// this answers a `Pending`; without, it blocks with the GIL released.
    #[pyo3(signature = (key: "_Key", running: "asyncio.AbstractEventLoop | None" = None))]
    fn begin(&self, py: Python<'_>, key: &Arg<'_>, running: Option<&Arg<'_>>) -> Answered {
        let k = self.key(py, key)?;
        let (caller, answer) = (crate::caller::caller(py), self.begun(&k));
        let running = on_store(py, running, tinystore::once_run_refused)?;
        reply::at_once(py, running, self.raw.store(), answer, |done| {
            self.raw.begin(&k, &caller, done)
        })
    }
}

impl Claim {
    /// `outer` inside this run, while it is held.
    pub(crate) fn inside(&self, outer: &tinystore::CallerContext) -> tinystore::CallerContext {
        match &*lock(&self.held) {
            Some(c) => outer.inside_run(c),
            None => outer.clone(),
        }
    }

    fn take(&self, py: Python<'_>) -> PyResult<tinystore::Claim> {
        lock(&self.held)
            .take()
            .ok_or_else(|| to_py(py, tinystore::claim_ended().at(&self.name, self.path.clone())))
    }

    /// The answer as a row; a value that does not fit lets the run go.
    fn encode(&self, py: Python<'_>, claim: tinystore::Claim, value: &Arg<'_>) -> PyResult<(tinystore::Claim, Raw)> {
        match self.codec.to_raw(py, value) {
            Ok(raw) => Ok((claim, raw)),
            Err(e) => {
                claim.abandon();
                Err(to_py(py, e.at(&self.name, self.path.clone())))
            }
        }
    }
}

#[pymethods]
impl Claim {
    /// Keeps `value` as the key's answer, durably, and lets go; waiters
    /// get it. With `running`, the asyncio loop that awaits it, this
    /// answers a `Pending`, and the answer is kept even if nobody awaits it.
    #[pyo3(signature = (value, running: "asyncio.AbstractEventLoop | None" = None))]
    fn keep(&self, py: Python<'_>, value: &Arg<'_>, running: Option<&Arg<'_>>) -> Answered {
        let running = on_store(py, running, tinystore::once_run_refused)?;
        let claim = self.take(py)?;
        let (claim, raw) = self.encode(py, claim, value)?;
        reply::at_once(py, running, &self.store, reply::none, |done| {
            claim.keep(raw, done);
            Ok(())
        })
    }

    /// Lets go keeping nothing (the work failed): the next run runs again.
    fn abandon(&self) {
        if let Some(c) = lock(&self.held).take() {
            c.abandon();
        }
    }
}
