//! The limit store for app frameworks (`tinystore/limit-store`): glue over
//! the core's `LimitStore`. The rules (hashing, versions, the bound, the
//! deadline) are the core's; this converts entries and settles Promises.
//!
//! An update's `apply` must run on the JS thread, so an update is a
//! [`NativeLimitUpdate`]: `begin` reads the entries, the package calls
//! `apply`, `commit` hands the changes to the writer and its Promise says
//! whether they were written or must go through `apply` again (the core
//! keeps the retried update in this object). Events to log travel beside
//! the answer, so they are logged whether the commit resolved or rejected.

use std::sync::{Arc, Mutex};

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::{napi_env, napi_value};
use napi_derive::napi;
use tinystore::{Change, Commit, LimitEntry, LimitEvent, LimitStore, LimitUpdate};

use crate::convert::napi_err;
use crate::js;
use crate::settle::{self, sync};
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

fn entries_value(env: napi_env, entries: Vec<Option<LimitEntry>>) -> napi::Result<napi_value> {
    let mut items = Vec::with_capacity(entries.len());
    for e in entries {
        items.push(match e {
            None => js::null(env)?,
            Some(e) => {
                let o = js::object(env)?;
                js::set(env, o, "value\0", js::string(env, &e.value)?)?;
                js::set(env, o, "expiresAt\0", js::number(env, e.expires_at as f64)?)?;
                o
            }
        });
    }
    js::array(env, items)
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
        let r = (|| {
            let mut b = LimitStore::builder(&store.store);
            if let Some(n) = max_entries {
                let n = tinystore::whole_number(n, "maxEntries", 1..=tinystore::MAX_SAFE_INTEGER)?;
                b = b.max_entries(n as usize);
            }
            if let Some(name) = name {
                b = b.name(&name);
            }
            b.open()
        })();
        Ok(NativeLimitStore { ls: sync(&env, r)? })
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
        let u = sync(&env, self.ls.begin(&keys))?;
        Ok(NativeLimitUpdate {
            update: Arc::new(Mutex::new(Some(u))),
            events: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// Removes expired entries; resolves with how many went.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn sweep<'e>(&self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        let ls = self.ls.clone();
        settle::write(
            env,
            move |done| ls.sweep_then(done),
            |env, s: tinystore::Swept| js::number(env, s.removed as f64).map_err(napi_err),
        )
    }

    /// Entries held, as the count in the file says.
    #[napi]
    pub fn entries(&self, env: Env) -> napi::Result<f64> {
        Ok(sync(&env, self.ls.entries())? as f64)
    }
}

/// What a commit's Promise resolves with.
enum Answer {
    Written(Vec<Option<LimitEntry>>),
    Retry(Vec<Option<LimitEntry>>, i64),
}

type Held = Arc<Mutex<Option<LimitUpdate>>>;

/// One update in progress.
#[napi]
pub struct NativeLimitUpdate {
    update: Held,
    events: Arc<Mutex<Vec<LimitEvent>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[napi]
impl NativeLimitUpdate {
    /// The entries `apply` gets, in the keys' order.
    #[napi(ts_return_type = "Array<{ value: string, expiresAt: number } | null>")]
    pub fn entries(&self) -> Vec<Option<NativeLimitEntry>> {
        lock(&self.update)
            .as_ref()
            .map(|u| u.entries().iter().cloned().map(entry_js).collect())
            .unwrap_or_default()
    }

    /// The store's clock for `apply`, in ms.
    #[napi]
    pub fn now(&self) -> f64 {
        lock(&self.update).as_ref().map_or(0.0, |u| u.now() as f64)
    }

    /// Gives the update up (apply threw): nothing is written.
    #[napi]
    pub fn cancel(&self) {
        lock(&self.update).take();
    }

    /// The events to log since the last call.
    #[napi]
    pub fn take_events(&self) -> Vec<NativeLimitEvent> {
        std::mem::take(&mut *lock(&self.events))
            .into_iter()
            .map(|e| NativeLimitEvent {
                kind: e.kind().to_owned(),
                message: e.to_string(),
                error: e.is_error(),
            })
            .collect()
    }

    /// Writes the changes of `apply`, one a key: `kinds[i]` 0 keeps the key,
    /// 1 deletes it, 2 writes `values[i]` (JSON text) to expire at
    /// `expires[i]`. Resolves `{ written: true, entries }`, or
    /// `{ written: false, entries, now }` when `apply` must run again.
    #[napi(
        ts_return_type = "Promise<{ written: true, entries: Array<{ value: string, expiresAt: number } | null> } | { written: false, entries: Array<{ value: string, expiresAt: number } | null>, now: number }>"
    )]
    pub fn commit<'e>(
        &self,
        env: &'e Env,
        kinds: Vec<u32>,
        values: Vec<String>,
        expires: Vec<f64>,
    ) -> napi::Result<Unknown<'e>> {
        let changes = sync(env, changes(kinds, values, expires));
        let update = lock(&self.update).take();
        let r = changes.and_then(|c| match update {
            Some(u) => Ok((u, c)),
            None => sync(
                env,
                Err(settle::invalid("this update was already committed or given up")),
            ),
        });
        let (u, changes) = r?;
        let (held, events) = (self.update.clone(), self.events.clone());
        settle::write(
            env,
            move |done| {
                u.commit_then(changes, move |c| match c {
                    Commit::Done(d) => {
                        lock(&events).extend(d.events);
                        done(Ok(Answer::Written(d.entries)));
                    }
                    Commit::Retry(next) => {
                        let (entries, now) = (next.entries().to_vec(), next.now());
                        *lock(&held) = Some(next);
                        done(Ok(Answer::Retry(entries, now)));
                    }
                    Commit::Failed(e, ev) => {
                        lock(&events).extend(ev);
                        done(Err(e));
                    }
                })
            },
            |env, a| {
                let make = || -> napi::Result<napi_value> {
                    let o = js::object(env)?;
                    match a {
                        Answer::Written(entries) => {
                            js::set(env, o, "written\0", js::boolean(env, true)?)?;
                            js::set(env, o, "entries\0", entries_value(env, entries)?)?;
                        }
                        Answer::Retry(entries, now) => {
                            js::set(env, o, "written\0", js::boolean(env, false)?)?;
                            js::set(env, o, "entries\0", entries_value(env, entries)?)?;
                            js::set(env, o, "now\0", js::number(env, now as f64)?)?;
                        }
                    }
                    Ok(o)
                };
                make().map_err(napi_err)
            },
        )
    }
}

/// The changes from the package's three arrays.
fn changes(kinds: Vec<u32>, values: Vec<String>, expires: Vec<f64>) -> tinystore::Result<Vec<Change>> {
    if values.len() != kinds.len() || expires.len() != kinds.len() {
        return Err(settle::invalid("the changes' arrays differ in length"));
    }
    kinds
        .into_iter()
        .zip(values)
        .zip(expires)
        .map(|((k, value), at)| match k {
            0 => Ok(Change::Keep),
            1 => Ok(Change::Delete),
            2 if at.is_finite() => Ok(Change::Put(LimitEntry {
                value,
                expires_at: at.floor() as i64,
            })),
            2 => Err(settle::invalid(format!(
                "expiresAt must be a finite number of ms, not {at}"
            ))),
            k => Err(settle::invalid(format!("no change of kind {k}"))),
        })
        .collect()
}
