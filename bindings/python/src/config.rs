//! Config (KV-20): the core's `RawConfig` on JSON text. The Python package
//! (`tinystore/config.py`) describes a dataclass or pydantic model as the
//! core's fields and converts values; every rule stays in the core.

use std::sync::Arc;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use tinystore::RawConfig;
use tinystore::config::{Layers, Schema, Validator, Value, WatchStep};

use crate::completions::{Answer, Completions, Resolve};
use crate::errors::py_err;
use crate::pending::Pending;
use crate::store::Store;

/// One config: its value, sources and changes as JSON text.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Config {
    raw: Arc<RawConfig>,
    /// The store, which a watch's answers hold until the loop took them.
    store: tinystore::Store,
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
        Ok(Config {
            raw: Arc::new(raw),
            store,
        })
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
        Ok(ConfigWatch {
            steps: Arc::new(self.raw.watch(timeout.transpose().map_err(py_err(py))?)),
            store: self.store.clone(),
        })
    }
}

/// A watch of one config: each step is the core's (`tinystore::config::ConfigWatch`).
#[pyclass(frozen, module = "tinystore._native")]
pub struct ConfigWatch {
    steps: Arc<tinystore::config::ConfigWatch>,
    store: tinystore::Store,
}

/// A step as Python has it: True for a change, False for none yet, None
/// when the watch is over.
fn step_py(step: WatchStep) -> Option<bool> {
    match step {
        WatchStep::Changed => Some(true),
        WatchStep::Quiet => Some(false),
        WatchStep::Ended => None,
    }
}

#[pymethods]
impl ConfigWatch {
    /// Waits one step, blocking: True for a change, False for none yet,
    /// None when the watch is over.
    fn next(&self, py: Python<'_>) -> Option<bool> {
        step_py(py.detach(|| self.steps.next()))
    }

    /// The step as a `Pending` of the loop `running`, no thread waiting:
    /// the config's watcher thread answers it through the loop's queue.
    fn next_then<'py>(&self, running: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Pending>> {
        let completions = &Completions::of_loop(running)?;
        let pending = Completions::new_pending(completions)?;
        let (queue, store) = (completions.get().queue.clone(), self.store.clone());
        let future = pending.clone().into_any().unbind();
        self.steps.next_then(move |step| {
            let resolve: Resolve = Box::new(move |py| step_py(step).into_py_any(py));
            queue.push(Answer::new(&store, future, resolve))
        });
        Ok(pending)
    }
}
