//! Config (KV-20): the core's `RawConfig` on JSON text. The package's
//! `config.ts` describes a schema object as the core's fields and converts
//! values; every rule stays in the core. Updates, resets and waits for a
//! change run on a thread of their own (they are rare), never on the event
//! loop.

use std::sync::Arc;
use std::time::Duration;

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi_derive::napi;
use tinystore::RawConfig;
use tinystore::config::{Layers, Schema};

use crate::completions::{self, nothing, sync};
use crate::napi_values as js;
use crate::store::NativeStore;

/// One config: its value, sources and changes as JSON text.
#[napi]
pub struct NativeConfig {
    raw: Arc<RawConfig>,
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
    ) -> napi::Result<NativeConfig> {
        let r = (|| {
            let schema = Schema::from_json(&fields)?;
            let layers = Layers::from_json(&layers)?;
            RawConfig::open(&store.store, &name, schema, layers, None)
        })();
        Ok(NativeConfig {
            raw: Arc::new(sync(&env, r)?),
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

    /// Leaves out every kept value of generation `generation`: the
    /// package's `validate` refuses the config built with them, for `why`.
    #[napi]
    pub fn refuse_kept(&self, generation: f64, why: String) {
        self.raw.refuse_kept(generation as u64, &why);
    }

    /// Checks and keeps the fields of `patch` (JSON) that change.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn update<'e>(&self, env: &'e Env, patch: String) -> napi::Result<Unknown<'e>> {
        let raw = self.raw.clone();
        completions::off_thread(env, move || raw.update_json(&patch), nothing)
    }

    /// Gives the field, or struct of fields, at `path` back to the layers.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn reset<'e>(&self, env: &'e Env, path: String) -> napi::Result<Unknown<'e>> {
        let raw = self.raw.clone();
        completions::off_thread(env, move || raw.reset(&path), nothing)
    }

    /// Resolves with the generation once it passes `after`, or after `timeoutMs`.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn wait<'e>(&self, env: &'e Env, after: f64, timeout_ms: f64) -> napi::Result<Unknown<'e>> {
        let raw = self.raw.clone();
        let timeout = Duration::from_millis(timeout_ms.clamp(0.0, 60_000.0) as u64);
        completions::off_thread(
            env,
            move || Ok(raw.wait(after as u64, timeout)),
            |env, g| js::number(env, g as f64),
        )
    }
}
