//! Config (KV-20): the core's `RawConfig` on JSON text. The Python package
//! (`tinystore/config.py`) describes a dataclass or pydantic model as the
//! core's fields and converts values; every rule stays in the core.

use std::sync::Arc;

use pyo3::prelude::*;
use tinystore::RawConfig;
use tinystore::config::{Layers, Schema, Validator, Value, WatchStep};

use crate::errors::py_err;
use crate::store::Store;

/// One config: its value, sources and changes as JSON text.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Config {
    raw: Arc<RawConfig>,
}

#[pymethods]
impl Config {
    /// Opens config `name`: `fields` and `layers` are the core's JSON
    /// descriptions; `validate(json_text)` raises to refuse a whole config.
    #[new]
    #[pyo3(signature = (store, name, fields, layers, validate: "Callable[[str], object] | None" = None))]
    fn new(
        py: Python<'_>,
        store: &Store,
        name: String,
        fields: String,
        layers: String,
        validate: Option<Py<PyAny>>,
    ) -> PyResult<Config> {
        let validator: Option<Validator> = validate.map(|f| {
            let f = Arc::new(f);
            let v: Validator = Arc::new(move |value: &Value| {
                let text = value.to_string();
                Python::attach(|py| match f.bind(py).call1((text,)) {
                    Ok(_) => Ok(()),
                    Err(e) => Err(e.value(py).str().map(|s| s.to_string()).unwrap_or_default()),
                })
            });
            v
        });
        let store = store.store.clone();
        let raw = py
            .detach(|| {
                let schema = Schema::from_json(&fields)?;
                let layers = Layers::from_json(&layers)?;
                RawConfig::open(&store, &name, schema, layers, validator)
            })
            .map_err(py_err(py))?;
        Ok(Config { raw: Arc::new(raw) })
    }

    /// The whole config as JSON, from memory.
    fn get(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| self.raw.get_json()).map_err(py_err(py))
    }

    /// Each field's source as a JSON list.
    fn sources(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| self.raw.sources_json()).map_err(py_err(py))
    }

    /// Checks and keeps the fields of `patch` (JSON) that change, blocking.
    fn update(&self, py: Python<'_>, patch: String) -> PyResult<()> {
        py.detach(|| self.raw.update_json(&patch)).map_err(py_err(py))
    }

    /// Gives the field, or struct of fields, at `path` back to the layers, blocking.
    fn reset(&self, py: Python<'_>, path: String) -> PyResult<()> {
        py.detach(|| self.raw.reset(&path)).map_err(py_err(py))
    }

    /// The generation: it grows with every change seen.
    fn generation(&self) -> u64 {
        self.raw.generation()
    }

    /// The config's changes from now on, ending after `timeout_ms` without one.
    #[pyo3(signature = (timeout_ms=None))]
    fn watch(&self, py: Python<'_>, timeout_ms: Option<f64>) -> PyResult<ConfigWatch> {
        let timeout = timeout_ms.map(|ms| tinystore::duration_from_millis(ms, "a watch's timeout"));
        Ok(ConfigWatch(self.raw.watch(timeout.transpose().map_err(py_err(py))?)))
    }
}

/// A watch of one config: each step is the core's (`tinystore::config::ConfigWatch`).
#[pyclass(frozen, module = "tinystore._native")]
pub struct ConfigWatch(tinystore::config::ConfigWatch);

#[pymethods]
impl ConfigWatch {
    /// Waits one step, blocking: True for a change, False for none yet,
    /// None when the watch is over.
    fn next(&self, py: Python<'_>) -> Option<bool> {
        match py.detach(|| self.0.next()) {
            WatchStep::Changed => Some(true),
            WatchStep::Quiet => Some(false),
            WatchStep::Ended => None,
        }
    }
}
