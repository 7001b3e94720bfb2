//! `once`: run a function once per key and keep its answer. Waiting for a
//! run elsewhere is by completion (`RawOnce::begin`), so one event loop can
//! hold the first run and a second one waiting for it at the same time.

use std::sync::{Arc, Mutex};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tinystore::{Begun, Error, Raw, RawOnce, Store as CoreStore};

use crate::completions::{Completions, Resolve};
use crate::convert::{Codec, ValueKind, key_bytes, opt_span, show_path};
use crate::errors::{invalid, py_err, to_py};
use crate::reply;
use crate::scope::{Call, in_scope};
use crate::store::Store;

/// One once (or a branch of it), with the codec of its answers.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Once {
    pub(crate) raw: RawOnce,
    pub(crate) codec: Arc<Codec>,
    owners: Vec<Vec<u8>>,
    store: CoreStore,
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
    pub(crate) fn key(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        key_bytes(key)
            .map(|k| k.into_owned())
            .map_err(|e| to_py(py, e.in_bucket(self.raw.name())))
    }

    pub(crate) fn named(&self, key: &[u8], e: Error) -> Error {
        if e.bucket().is_some() {
            e
        } else {
            e.at(self.raw.name(), show_path(&self.owners, Some(key)))
        }
    }

    fn begun(&self, key: &[u8], r: tinystore::Result<Begun>) -> Resolve {
        let (codec, name, path, store) = (
            self.codec.clone(),
            self.raw.name().to_owned(),
            show_path(&self.owners, Some(key)),
            self.store.clone(),
        );
        Box::new(move |py| match r {
            Ok(Begun::Kept(raw)) => {
                let v = codec.to_py(py, &raw).map_err(|e| to_py(py, e.at(&name, path)))?;
                (true, v).into_py_any(py)
            }
            Ok(Begun::Run(claim)) => {
                let claim = Claim {
                    held: Mutex::new(Some(claim)),
                    codec,
                    name,
                    path,
                    store,
                };
                (false, Bound::new(py, claim)?).into_py_any(py)
            }
            Err(e) => Err(to_py(py, e)),
        })
    }
}

#[pymethods]
impl Once {
    /// Opens the once `name`, keeping answers of `kind` for `keep` (a day when None).
    #[new]
    #[pyo3(signature = (store, name, kind, type_name, encode: "Callable[[Any], bytes] | None" = None, decode: "Callable[[bytes], Any] | None" = None, keep: "_Span | None" = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        store: &Store,
        name: &str,
        kind: &str,
        type_name: String,
        encode: Option<Py<PyAny>>,
        decode: Option<Py<PyAny>>,
        keep: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Once> {
        let named = |e: Error| to_py(py, e.in_bucket(name));
        let kind = ValueKind::parse(kind).map_err(named)?;
        if kind == ValueKind::Json && (encode.is_none() || decode.is_none()) {
            return Err(named(invalid("a JSON once needs an encoder and a decoder")));
        }
        let keep = opt_span(keep, "keep").map_err(named)?;
        let core = store.store.clone();
        let raw = py.detach(|| RawOnce::open(&core, name, keep)).map_err(py_err(py))?;
        Ok(Once {
            raw,
            codec: Arc::new(Codec {
                kind,
                type_name,
                encode,
                decode,
            }),
            owners: Vec::new(),
            store: core,
        })
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.raw.name()
    }

    /// The branch of `owners`.
    #[pyo3(signature = (*owners: "_Key"))]
    fn under(&self, py: Python<'_>, owners: &Bound<'_, PyTuple>) -> PyResult<Once> {
        let (mut raw, mut list) = (self.raw.clone(), self.owners.clone());
        for o in owners.iter() {
            let k = self.key(py, &o)?;
            raw = raw.under(k.clone());
            list.push(k);
        }
        Ok(Once {
            raw,
            codec: self.codec.clone(),
            owners: list,
            store: self.store.clone(),
        })
    }

    /// The answer kept for the key, or None.
    #[pyo3(signature = (key: "_Key", scope: "Tx | View | None" = None))]
    fn get(&self, py: Python<'_>, key: &Bound<'_, PyAny>, scope: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let k = self.key(py, key)?;
        match in_scope(py, scope, |s| s.once_get(&self.raw, &k))? {
            Some(raw) => self
                .codec
                .to_py(py, &raw)
                .map(Bound::unbind)
                .map_err(|e| to_py(py, self.named(&k, e))),
            None => Ok(py.None()),
        }
    }

    /// Forgets the answer kept for the key; says whether one was kept.
    #[pyo3(signature = (key: "_Key", scope: "_Scope" = None))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, scope: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let k = self.key(py, key)?;
        Call::of(&self.raw, &self.store).run(
            py,
            scope,
            k,
            reply::value,
            |s, o, k| s.once_delete(o, &k),
            |o, k, r| o.delete_then(&k, move |out| r.send(out)),
        )
    }

    /// Begins a run, waiting (without the GIL) for any run of the key
    /// elsewhere: (True, answer) when one is kept, (False, Claim) when the
    /// key is the caller's to run.
    #[pyo3(signature = (key: "_Key") -> "tuple[bool, Any]")]
    fn begin(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let k = self.key(py, key)?;
        let caller = crate::caller::caller(py);
        let r = reply::wait_core(py, |done| self.raw.begin(&k, &caller, done));
        self.begun(&k, r)(py)
    }

    /// The completion form of `begin`: resolves `future` with the same pair.
    #[pyo3(signature = (completions, future: "asyncio.Future[Any]", key: "_Key"))]
    fn begin_then(
        &self,
        py: Python<'_>,
        completions: &Completions,
        future: Py<PyAny>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let k = self.key(py, key)?;
        let (q, store) = (completions.queue.clone(), self.store.clone());
        let this = Once {
            raw: self.raw.clone(),
            codec: self.codec.clone(),
            owners: self.owners.clone(),
            store: self.store.clone(),
        };
        let key = k.clone();
        self.raw
            .begin(&k, &crate::caller::caller(py), move |r| {
                q.push(&store, future, this.begun(&key, r))
            })
            .map_err(py_err(py))
    }
}

impl Claim {
    /// `outer` inside this run, while it is held.
    pub(crate) fn inside(&self, outer: &tinystore::CallerContext) -> tinystore::CallerContext {
        match &*self.held.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(c) => outer.inside_run(c),
            None => outer.clone(),
        }
    }

    fn take(&self, py: Python<'_>) -> PyResult<tinystore::Claim> {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| {
                to_py(
                    py,
                    invalid("this run already kept an answer or let go").at(&self.name, self.path.clone()),
                )
            })
    }

    /// The answer as a row; a value that does not fit lets the run go.
    fn encode(
        &self,
        py: Python<'_>,
        claim: tinystore::Claim,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<(tinystore::Claim, Raw)> {
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
    /// Keeps `value` as the key's answer, durably, and lets go; waiters get it.
    fn keep(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let claim = self.take(py)?;
        let (claim, raw) = self.encode(py, claim, value)?;
        reply::wait(py, |done| {
            claim.keep(raw, done);
            Ok(())
        })
    }

    /// The completion form of `keep`. The answer is kept even if nobody awaits it.
    #[pyo3(signature = (completions, future: "asyncio.Future[Any]", value))]
    fn keep_then(
        &self,
        py: Python<'_>,
        completions: &Completions,
        future: Py<PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let claim = self.take(py)?;
        let (claim, raw) = self.encode(py, claim, value)?;
        let (q, store) = (completions.queue.clone(), self.store.clone());
        claim.keep(raw, move |r| {
            q.push(
                &store,
                future,
                Box::new(move |py| r.map(|()| py.None()).map_err(|e| to_py(py, e))),
            )
        });
        Ok(())
    }

    /// Lets go keeping nothing (the work failed): the next run runs again.
    fn abandon(&self) {
        if let Some(c) = self.held.lock().unwrap_or_else(|p| p.into_inner()).take() {
            c.abandon();
        }
    }
}
