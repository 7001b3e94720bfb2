//! Config (KV-20): the core's `RawConfig` on JSON text. The package's
//! `config.ts` describes a schema object as the core's fields and converts
//! values; every rule stays in the core, and the package's `validate` is
//! called back where the core checks a whole config. Updates' writes and
//! resets run on a thread of their own (they are rare), never on the event
//! loop; a watch's step is answered from the config's watcher thread.
//!
//! Invariant: `validate` is JS, so the core may call it only on the env's
//! thread. It calls it at open, in `get` and `sources`, and in an update's
//! checks, which this file makes on that thread; an update's write, a
//! reset and a watch's step, the calls made elsewhere, never run it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::{self, napi_env};
use napi_derive::napi;
use tinystore::RawConfig;
use tinystore::config::{ConfigWatch, Layers, Schema, Validator, Value, WatchStep};

use crate::completions::{self, Pending, nothing, sync};
use crate::napi_values as js;
use crate::store::NativeStore;

/// One config: its value, sources and changes as JSON text.
#[napi]
pub struct NativeConfig {
    raw: Arc<RawConfig>,
    _validate: Option<KeptValidate>,
}

/// The package's `validate`, kept alive while its config is.
struct KeptValidate {
    env: napi_env,
    func: sys::napi_ref,
    /// Cleared when the config is collected, before the function may go.
    alive: Arc<AtomicBool>,
}

impl Drop for KeptValidate {
    fn drop(&mut self) {
        self.alive.store(false, Ordering::Release);
        unsafe { sys::napi_delete_reference(self.env, self.func) };
    }
}

/// What the core calls: the kept function, on its env's thread only.
struct JsValidate {
    env: napi_env,
    func: sys::napi_ref,
    thread: ThreadId,
    alive: Arc<AtomicBool>,
}

// SAFETY: the env and reference are used only on the thread that made them
// (`check` refuses any other), and only while `alive`.
unsafe impl Send for JsValidate {}
unsafe impl Sync for JsValidate {}

impl JsValidate {
    /// `validate(json)` answers a string to refuse the config, for that reason.
    fn check(&self, value: &Value) -> Result<(), String> {
        if !self.alive.load(Ordering::Acquire) || std::thread::current().id() != self.thread {
            return Err("validate runs only on its config's own JS thread".to_owned());
        }
        let answer = (|| {
            let out = js::call_kept(self.env, self.func, &[js::string(self.env, &value.to_string())?])?;
            match js::type_name(self.env, out) {
                "string" => js::read_string(self.env, out).map(|b| Some(String::from_utf8_lossy(&b).into_owned())),
                _ => Ok(None),
            }
        })();
        match answer {
            Ok(None) => Ok(()),
            Ok(Some(why)) => Err(why),
            Err(e) => {
                // The package's wrapper never throws; a throw left pending
                // would surface in an unrelated call.
                let mut thrown = std::ptr::null_mut();
                unsafe { sys::napi_get_and_clear_last_exception(self.env, &mut thrown) };
                Err(e.message().to_owned())
            }
        }
    }
}

/// Keeps `f` and makes the core's validator of it.
fn validator(env: napi_env, f: &Unknown<'_>) -> tinystore::Result<(KeptValidate, Validator)> {
    let func = js::keep(env, js::raw(f))?;
    let alive = Arc::new(AtomicBool::new(true));
    let js = JsValidate {
        env,
        func,
        thread: std::thread::current().id(),
        alive: alive.clone(),
    };
    Ok((
        KeptValidate { env, func, alive },
        Arc::new(move |v: &Value| js.check(v)),
    ))
}

#[napi]
impl NativeConfig {
    /// Opens config `name` on `store`: `fields` and `layers` are the core's
    /// JSON descriptions.
    #[napi(factory)]
    pub fn open(
        env: Env,
        store: &NativeStore,
        name: String,
        fields: String,
        layers: String,
        #[napi(ts_arg_type = "((json: string) => string | undefined) | undefined")] validate: Option<Unknown<'_>>,
    ) -> napi::Result<NativeConfig> {
        let (kept, check) = match validate {
            Some(f) => sync(&env, validator(env.raw(), &f)).map(|(k, v)| (Some(k), Some(v)))?,
            None => (None, None),
        };
        let r = (|| {
            let schema = Schema::from_json(&fields)?;
            let layers = Layers::from_json(&layers)?;
            RawConfig::open(&store.store, &name, schema, layers, check)
        })();
        Ok(NativeConfig {
            raw: Arc::new(sync(&env, r)?),
            _validate: kept,
        })
    }

    /// The whole config as JSON, from memory.
    #[napi]
    pub fn get(&self, env: Env) -> napi::Result<String> {
        sync(&env, self.raw.get_json())
    }

    /// Each field's source, as a JSON list.
    #[napi]
    pub fn sources(&self, env: Env) -> napi::Result<String> {
        sync(&env, self.raw.sources_json())
    }

    /// The generation: it grows with every change seen.
    #[napi]
    pub fn generation(&self) -> f64 {
        self.raw.generation() as f64
    }

    /// Checks the fields of `patch` (JSON) that change, here, `validate`
    /// among the checks; writes them on a thread of its own.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn update<'e>(&self, env: &'e Env, patch: String) -> napi::Result<Unknown<'e>> {
        let checked = self.raw.check_update_json(&patch);
        completions::off_thread(env, move || checked?.map_or(Ok(()), |u| u.write()), nothing)
    }

    /// Gives the field, or struct of fields, at `path` back to the layers.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn reset<'e>(&self, env: &'e Env, path: String) -> napi::Result<Unknown<'e>> {
        let raw = self.raw.clone();
        completions::off_thread(env, move || raw.reset(&path), nothing)
    }

    /// The config's changes from now on.
    #[napi]
    pub fn watch(&self) -> NativeConfigWatch {
        NativeConfigWatch {
            steps: Arc::new(self.raw.watch(None)),
        }
    }
}

/// A watch of one config: each step is the core's (`tinystore::config::ConfigWatch`).
#[napi]
pub struct NativeConfigWatch {
    steps: Arc<ConfigWatch>,
}

#[napi]
impl NativeConfigWatch {
    /// Waits one step, no thread waiting: true for a change, false for none
    /// yet, null when the watch is over.
    #[napi(ts_return_type = "Promise<boolean | null>")]
    pub fn next<'e>(&self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        let (pending, completion, promise) = sync(env, Pending::new(env.raw()))?;
        self.steps.next_then(move |step| {
            completion.send(Ok(Box::new(move |env| match step {
                WatchStep::Changed => js::boolean(env, true),
                WatchStep::Quiet => js::boolean(env, false),
                WatchStep::Ended => js::null(env),
            })))
        });
        sync(env, pending.queued(Ok(())))?;
        Ok(js::unknown(env.raw(), promise))
    }
}
