//! The limit store for app frameworks (`tinystore/limit-store`): glue over
//! the core's `LimitStore`. The rules (hashing, versions, the bound, the
//! deadline) are the core's; this converts entries and settles Promises.
//!
//! An update's `apply` must run on the JS thread, so an update is the
//! core's [`UpdateSteps`]: `begin` reads the entries, the package calls
//! `apply`, `commit` hands what it returned to the core, which checks it,
//! writes it, and resolves whether `apply` must run again on the entries
//! read meanwhile. Events to log wait in the core until the package takes
//! them, so they are logged whether the commit resolved or rejected.

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi_derive::napi;
use tinystore::{LimitEntry, LimitStore, ReturnedEntry, UpdateSteps};

use crate::completions::{self, sync};
use crate::napi_values;
use crate::store::NativeStore;

/// An entry as JS sees it before `JSON.parse`: `{ value, expiresAt }`.
#[napi(object)]
pub struct NativeLimitEntry {
    /// The value as JSON text.
    pub value: String,
    /// Expiry in ms on the store's clock.
    pub expires_at: f64,
}

/// A log line the package writes with its logger.
#[napi(object)]
pub struct NativeLimitEvent {
    /// `limit-store-filling` or `limit-store-full`.
    pub kind: String,
    /// What happened, in words.
    pub message: String,
    /// Whether it is an error (else a warning).
    pub error: bool,
}

fn entry_js(e: Option<LimitEntry>) -> Option<NativeLimitEntry> {
    e.map(|e| NativeLimitEntry {
        value: e.value,
        expires_at: e.expires_at as f64,
    })
}

/// A limit store over an open store (the package's `limitStore` wraps it).
#[napi]
pub struct NativeLimitStore {
    ls: LimitStore,
}

#[napi]
impl NativeLimitStore {
    /// Opens the limit store of `store` with a bound of `max_entries`.
    #[napi(factory)]
    pub fn open(env: Env, store: &NativeStore, max_entries: Option<f64>, name: Option<String>) -> napi::Result<Self> {
        let name = name.as_deref().unwrap_or(tinystore::LIMIT_STORE_NAME);
        let mut b = LimitStore::builder(&store.store).name(name);
        if let Some(n) = max_entries {
            b = b.max_entries_given(n);
        }
        let r = b.open();
        Ok(NativeLimitStore { ls: sync(&env, r)? })
    }

    /// The name a limit store's rows live under unless it is given one.
    #[napi]
    pub fn default_name() -> &'static str {
        tinystore::LIMIT_STORE_NAME
    }

    /// The name its rows live under, which its errors name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.ls.name().to_owned()
    }

    /// The bound on entries.
    #[napi(getter)]
    pub fn max_entries(&self) -> f64 {
        self.ls.max_entries() as f64
    }

    /// The live entries of `keys`, in their order (`null`: absent).
    #[napi(ts_return_type = "Array<{ value: string, expiresAt: number } | null>")]
    pub fn read(&self, env: Env, keys: Vec<String>) -> napi::Result<Vec<Option<NativeLimitEntry>>> {
        let entries = sync(&env, self.ls.read(&keys))?;
        Ok(entries.into_iter().map(entry_js).collect())
    }

    /// Starts an update of `keys`: reads their entries for `apply`.
    #[napi]
    pub fn begin(&self, env: Env, keys: Vec<String>) -> napi::Result<NativeLimitUpdate> {
        Ok(NativeLimitUpdate {
            steps: sync(&env, self.ls.steps(keys))?,
        })
    }

    /// Removes expired entries; resolves with how many went.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn sweep<'e>(&self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        let ls = self.ls.clone();
        completions::write(
            env,
            move |done| ls.sweep_then(done),
            |env, s: tinystore::Swept| napi_values::number(env, s.removed as f64),
        )
    }

    /// Entries held, as the count in the file says.
    #[napi]
    pub fn entries(&self, env: Env) -> napi::Result<f64> {
        Ok(sync(&env, self.ls.entries())? as f64)
    }
}

/// What `apply` returned for one key, converted by the package.
#[napi(object)]
pub struct NativeReturned {
    /// The key.
    pub key: String,
    /// Absent: delete the key; else the entry's expiry in ms.
    pub expires_at: Option<f64>,
    /// The value as JSON text, absent when `JSON.stringify` refused it.
    pub value: Option<String>,
    /// Why `JSON.stringify` refused the value.
    pub not_json: Option<String>,
}

/// One update in progress.
#[napi]
pub struct NativeLimitUpdate {
    steps: UpdateSteps,
}

#[napi]
impl NativeLimitUpdate {
    /// The entries `apply` gets, in the keys' order; once written, the
    /// entries written.
    #[napi(ts_return_type = "Array<{ value: string, expiresAt: number } | null>")]
    pub fn entries(&self) -> Vec<Option<NativeLimitEntry>> {
        self.steps.entries().into_iter().map(entry_js).collect()
    }

    /// The store's clock for `apply`, in ms.
    #[napi]
    pub fn now(&self) -> f64 {
        self.steps.now() as f64
    }

    /// Gives the update up (apply threw): nothing is written.
    #[napi]
    pub fn cancel(&self) {
        self.steps.give_up();
    }

    /// The events to log since the last call.
    #[napi]
    pub fn take_events(&self) -> Vec<NativeLimitEvent> {
        self.steps
            .take_events()
            .into_iter()
            .map(|e| NativeLimitEvent {
                kind: e.kind().to_owned(),
                message: e.to_string(),
                error: e.is_error(),
            })
            .collect()
    }

    /// Writes what `apply` returned. Resolves `true` when written, `false`
    /// when `apply` must run again on `entries()`.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn commit<'e>(&self, env: &'e Env, changes: Vec<NativeReturned>) -> napi::Result<Unknown<'e>> {
        let returned = changes
            .into_iter()
            .map(|r| {
                let entry = r.expires_at.map(|expires_at| ReturnedEntry {
                    json: r.value.ok_or_else(|| r.not_json.unwrap_or_default()),
                    expires_at,
                });
                (r.key, entry)
            })
            .collect();
        let steps = self.steps.clone();
        completions::write(env, move |done| steps.commit_then(returned, done), napi_values::boolean)
    }
}
