//! Transactions (KV-16): `store.tx(fn)` holds one write of the engine's
//! writer open while `fn` runs, sending its bucket calls one at a time.
//!
//! Why this shape: JS cannot hand the engine a closure that awaits, so the
//! binding uses the core's session form. `NativeStore::transaction` hands
//! `Store::transaction_then` to the writer without blocking the event loop;
//! when the writer's turn comes it gives the session to `ready`, which
//! settles the Promise from the writer thread at once (`settle::turn`: the
//! writer then waits on JS, so the answer cannot wait for the group's end).
//! The writer then lends the session its connection, so each call runs on
//! the JS thread inside the transaction and answers before it returns, as a
//! read does; a bucket's reads take the transaction as their scope
//! (`scope.rs`). `commit` and `rollback` end the session and resolve once
//! the writer has finished with it, through the same completions as any
//! write.
//!
//! Invariants:
//! - The writer runs nothing else while a session is open, so the package
//!   ends every session it starts (commit after `fn`, rollback if it
//!   throws); one held past `tinystore::TX_LIMIT` is rolled back by the core.
//! - The core calls `done` exactly once; [`Ending`] keeps its answer until
//!   JS asks for it, so no Promise is made that nobody awaits.

use std::sync::{Arc, Mutex};

use napi::Env;
use napi::bindgen_prelude::{ToNapiValue, Unknown};
use napi_derive::napi;
use tinystore::{ErrorKind, Scope, TxSession, WriteCall};

use crate::bucket::{NativeBucket, show_path};
use crate::convert::napi_err;
use crate::js;
use crate::limits::{NativeCounters, NativeQuota, NativeRateLimit, allowance, count, key_in, step, value};
use crate::once::NativeOnce;
use crate::settle::{self, Completion, Pending, sync};

/// What became of a transaction's write: the core's `done` answer, or the
/// Promise of `commit` or `rollback` waiting for it.
enum End {
    Open,
    Ended(tinystore::Result<()>),
    Awaited { completion: Completion, rolled_back: bool },
}

/// Shared by the core's `done` (writer thread) and the [`NativeTx`] (JS thread).
#[derive(Clone)]
pub(crate) struct Ending(Arc<Mutex<End>>);

impl Ending {
    fn new() -> Ending {
        Ending(Arc::new(Mutex::new(End::Open)))
    }

    /// The core's `done`: settles a waiting `commit` or `rollback`, or keeps the answer.
    fn finish(&self, r: tinystore::Result<()>) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *g, End::Open) {
            End::Awaited {
                completion,
                rolled_back,
            } => {
                drop(g);
                answer(completion, r, rolled_back);
            }
            _ => *g = End::Ended(r),
        }
    }

    /// Settles `completion` with the core's answer, now or when it comes.
    fn wait(&self, completion: Completion, rolled_back: bool) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *g, End::Open) {
            End::Ended(r) => {
                drop(g);
                answer(completion, r, rolled_back);
            }
            _ => {
                *g = End::Awaited {
                    completion,
                    rolled_back,
                }
            }
        }
    }
}

/// A commit resolves with `undefined` once durable, or rejects with why it
/// was not written; a rollback resolves once the writer let go, since its
/// error (`Cancelled`) is what it asked for.
fn answer(completion: Completion, r: tinystore::Result<()>, rolled_back: bool) {
    let r = if rolled_back { Ok(()) } else { r };
    completion.send(r.map(|()| Box::new(|env| js::undefined(env).map_err(napi_err)) as settle::Answer));
}

/// Starts a transaction on `store`: the Promise resolves with the
/// [`NativeTx`] when the writer's turn comes. Nothing blocks meanwhile.
pub(crate) fn begin<'e>(env: &'e Env, store: &tinystore::Store) -> napi::Result<Unknown<'e>> {
    let store = store.clone();
    settle::turn(
        env,
        move |ready| {
            let ending = Ending::new();
            let on_done = ending.clone();
            store.transaction_then(
                move |r| ready(r.map(|session| (session, ending))),
                move |r| on_done.finish(r),
            )
        },
        |env, (session, ending)| {
            let tx = NativeTx {
                session,
                ending,
                ended: false,
            };
            unsafe { NativeTx::to_napi_value(env, tx) }.map_err(napi_err)
        },
    )
}

/// An open transaction (the package's `Tx` wraps it). Every call takes the
/// bucket it is about and runs inside the transaction, seeing its own
/// writes; reads renew no idle key. Collected without an end, it rolls back.
#[napi]
pub struct NativeTx {
    pub(crate) session: TxSession,
    ending: Ending,
    ended: bool,
}

impl NativeTx {
    /// The engine's session this transaction drives.
    pub(crate) fn session(&self) -> &TxSession {
        &self.session
    }

    /// The core's scope of this transaction's calls. After the end they are
    /// `Closed`, or say why the core ended it (held past `TX_LIMIT`).
    fn scope(&self) -> Scope<'_> {
        Scope::Tx(&self.session)
    }

    /// Ends the session with `end` and returns the Promise of the writer's answer.
    fn end<'e>(
        &mut self,
        env: &'e Env,
        rolled_back: bool,
        end: impl FnOnce(&TxSession) -> tinystore::Result<()>,
    ) -> napi::Result<Unknown<'e>> {
        let (pending, completion, promise) = Pending::new(env.raw())?;
        if self.ended {
            pending.reject_now(ended())?;
            return Ok(js::unknown(env.raw(), promise));
        }
        self.ended = true;
        pending.queued(Ok(()))?;
        self.ending.wait(completion, rolled_back);
        // When the session cannot take the end (the writer already rolled it
        // back), the core's answer, which says why, still settles the Promise.
        let _ = end(&self.session);
        Ok(js::unknown(env.raw(), promise))
    }
}

fn ended() -> tinystore::Error {
    tinystore::Error::new(ErrorKind::Closed, "the transaction has ended")
}

#[napi]
impl NativeTx {
    /// Writes a value inside the transaction.
    // The arguments of the bucket's own `set`, and the bucket.
    #[allow(clippy::too_many_arguments)]
    #[napi]
    pub fn set<'e>(
        &self,
        env: &'e Env,
        bucket: &NativeBucket,
        key: Unknown<'e>,
        value: Unknown<'e>,
        ttl: Unknown<'e>,
        expires_at: Option<f64>,
        if_version: Option<String>,
    ) -> napi::Result<()> {
        let r = bucket
            .prepare_set(env, WriteCall::Set, &key, &value, &ttl, expires_at, if_version)
            .and_then(|(k, v, opts)| self.scope().set(&bucket.raw, &k, v, opts));
        sync(env, r).map(|_version| ())
    }

    /// Writes a value if the key is absent; returns whether it did.
    #[napi]
    pub fn create<'e>(
        &self,
        env: &'e Env,
        bucket: &NativeBucket,
        key: Unknown<'e>,
        value: Unknown<'e>,
        ttl: Unknown<'e>,
        expires_at: Option<f64>,
    ) -> napi::Result<bool> {
        let r = bucket
            .prepare_create(env, &key, &value, &ttl, expires_at)
            .and_then(|(k, v, expiry)| self.scope().create(&bucket.raw, &k, v, expiry));
        Ok(matches!(sync(env, r)?, tinystore::Created::Written(_)))
    }

    /// Reads and deletes a key inside the transaction; returns the value or
    /// `undefined`. A value that does not read as the bucket's type, or that
    /// `check` (the package's codec, given the value read) answers `false`
    /// for, is `Corrupt` and stays: it is checked before it is taken.
    #[napi]
    pub fn take<'e>(
        &self,
        env: &'e Env,
        bucket: &NativeBucket,
        key: Unknown<'e>,
        if_version: Option<String>,
        #[napi(ts_arg_type = "(value: unknown) => boolean")] check: Option<Unknown<'e>>,
    ) -> napi::Result<Unknown<'e>> {
        let r = (|| -> tinystore::Result<Option<(Vec<u8>, tinystore::Entry<tinystore::Raw>)>> {
            let (k, if_version) = bucket.prepare_versioned(env, &key, if_version)?;
            let taken = self.scope().take_checked(&bucket.raw, &k, if_version, |e| {
                bucket.check(&e.value, &k)?;
                match &check {
                    Some(f) => js_check(env, js::raw(f), bucket.decoded(env.raw(), &e.value, &k)?),
                    None => Ok(()),
                }
            })?;
            Ok(taken.map(|e| (k, e)))
        })();
        let v = match sync(env, r)? {
            Some((k, e)) => sync(env, bucket.decoded(env.raw(), &e.value, &k))?,
            None => js::undefined(env.raw())?,
        };
        Ok(js::unknown(env.raw(), v))
    }

    /// Deletes a key inside the transaction; returns whether a live key was there.
    #[napi]
    pub fn delete<'e>(
        &self,
        env: &'e Env,
        bucket: &NativeBucket,
        key: Unknown<'e>,
        if_version: Option<String>,
    ) -> napi::Result<bool> {
        let r = bucket
            .prepare_versioned(env, &key, if_version)
            .and_then(|(k, v)| self.scope().delete(&bucket.raw, &k, v));
        sync(env, r)
    }

    /// Gives a live key a new expiry inside the transaction: `ttl` (a
    /// duration) or `at_ms` (a time). Returns whether a live key was there.
    #[napi]
    pub fn expire<'e>(
        &self,
        env: &'e Env,
        bucket: &NativeBucket,
        key: Unknown<'e>,
        ttl: Unknown<'e>,
        at_ms: Option<f64>,
        if_version: Option<String>,
    ) -> napi::Result<bool> {
        let r = bucket
            .prepare_expire(env, &key, &ttl, at_ms, if_version)
            .and_then(|(k, expiry, v)| self.scope().expire(&bucket.raw, &k, expiry, v));
        sync(env, r)
    }

    /// Clears the branch inside the transaction (a branch over 10,000 keys is `Limit`).
    #[napi]
    pub fn clear(&self, env: Env, bucket: &NativeBucket) -> napi::Result<()> {
        sync(&env, self.scope().clear(&bucket.raw))
    }

    /// Refuses at once what cannot join the transaction (`tx.with`): a rate
    /// limit, `flush_every` counters, counters of another store.
    #[napi]
    pub fn check_counters(&self, env: Env, counters: &NativeCounters) -> napi::Result<()> {
        sync(&env, self.session.check_counters(&counters.counters))
    }

    /// The engine's refusal of a rate limit given to `tx.with`.
    #[napi]
    pub fn refuse_rate_limit(&self, env: Env, limit: &NativeRateLimit) -> napi::Result<()> {
        sync(&env, Err(self.session.refuse_rate_limit(&limit.limit)))
    }

    /// Adds `n` to a durable counter (`max`: keeps the larger) inside the
    /// transaction; the new value as the transaction sees it.
    #[napi(ts_return_type = "number | bigint")]
    pub fn counter_change<'e>(
        &self,
        env: &'e Env,
        counters: &NativeCounters,
        key: Unknown<'e>,
        n: Unknown<'e>,
        max: bool,
    ) -> napi::Result<Unknown<'e>> {
        let c = &counters.counters;
        let r = (|| {
            let (k, n) = (
                key_in(env, c.name(), &key)?,
                step(env.raw(), js::raw(&n)).map_err(|e| e.in_bucket(c.name()))?,
            );
            let v = if max {
                self.scope().counter_max(c, &k, n)
            } else {
                self.scope().counter_add(c, &k, n)
            }?;
            value(env.raw(), counters.big, v, true).map_err(|e| e.at(c.name(), show_path(&counters.owners, &k)))
        })();
        Ok(js::unknown(env.raw(), sync(env, r)?))
    }

    /// A durable counter as the transaction sees it.
    #[napi(ts_return_type = "number | bigint")]
    pub fn counter_get<'e>(
        &self,
        env: &'e Env,
        counters: &NativeCounters,
        key: Unknown<'e>,
    ) -> napi::Result<Unknown<'e>> {
        let c = &counters.counters;
        let r = (|| {
            let k = key_in(env, c.name(), &key)?;
            let v = self.scope().counter_get(c, &k)?;
            value(env.raw(), counters.big, v, false).map_err(|e| e.at(c.name(), show_path(&counters.owners, &k)))
        })();
        Ok(js::unknown(env.raw(), sync(env, r)?))
    }

    /// Deletes a durable counter inside the transaction.
    #[napi]
    pub fn counter_delete<'e>(&self, env: &'e Env, counters: &NativeCounters, key: Unknown<'e>) -> napi::Result<bool> {
        let c = &counters.counters;
        let r = key_in(env, c.name(), &key).and_then(|k| self.scope().counter_delete(c, &k));
        sync(env, r)
    }

    /// A quota's `allow` (`refund`: gives back) of `n` uses inside the transaction.
    #[napi]
    pub fn quota_change<'e>(
        &self,
        env: &'e Env,
        quota: &NativeQuota,
        key: Unknown<'e>,
        n: Option<f64>,
        refund: bool,
    ) -> napi::Result<Unknown<'e>> {
        let q = &quota.quota;
        let r = (|| {
            let (k, n) = (
                key_in(env, q.name(), &key)?,
                count(n).map_err(|e| e.in_bucket(q.name()))?,
            );
            let a = if refund {
                self.scope().quota_refund(q, &k, n)
            } else {
                self.scope().quota_allow(q, &k, n)
            }?;
            allowance(env.raw(), &a)
        })();
        Ok(js::unknown(env.raw(), sync(env, r)?))
    }

    /// The answer one use would get, as the transaction sees the quota.
    #[napi]
    pub fn quota_peek<'e>(&self, env: &'e Env, quota: &NativeQuota, key: Unknown<'e>) -> napi::Result<Unknown<'e>> {
        let q = &quota.quota;
        let r = key_in(env, q.name(), &key)
            .and_then(|k| self.scope().quota_peek(q, &k))
            .and_then(|a| allowance(env.raw(), &a));
        Ok(js::unknown(env.raw(), sync(env, r)?))
    }

    /// Forgets a quota's key inside the transaction.
    #[napi]
    pub fn quota_reset<'e>(&self, env: &'e Env, quota: &NativeQuota, key: Unknown<'e>) -> napi::Result<()> {
        let q = &quota.quota;
        let r = key_in(env, q.name(), &key).and_then(|k| self.scope().quota_reset(q, &k));
        sync(env, r)
    }

    /// The answer a once keeps for the key, as the transaction sees it, or `undefined`.
    #[napi]
    pub fn once_get<'e>(&self, env: &'e Env, once: &NativeOnce, key: Unknown<'e>) -> napi::Result<Unknown<'e>> {
        let r = (|| {
            let k = once.key(env, &key)?;
            match self.scope().once_get(&once.once, &k)? {
                Some(raw) => once
                    .kind
                    .decode(env.raw(), &raw)
                    .map_err(|e| e.at(once.once.name(), show_path(&once.owners, &k))),
                None => js::undefined(env.raw()).map_err(napi_err),
            }
        })();
        Ok(js::unknown(env.raw(), sync(env, r)?))
    }

    /// Forgets the answer a once keeps for the key, inside the transaction.
    #[napi]
    pub fn once_delete<'e>(&self, env: &'e Env, once: &NativeOnce, key: Unknown<'e>) -> napi::Result<bool> {
        let r = once
            .key(env, &key)
            .and_then(|k| self.scope().once_delete(&once.once, &k));
        sync(env, r)
    }

    /// Commits: resolves once everything the transaction wrote is durable,
    /// or rejects with why nothing was (`OutcomeUnknown` when the group's
    /// commit failed). A second end is `Closed`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn commit<'e>(&mut self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        self.end(env, false, TxSession::commit)
    }

    /// Rolls back, writing nothing; resolves once the writer has let go.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn rollback<'e>(&mut self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        self.end(env, true, TxSession::rollback)
    }
}

/// Calls the package's check of a value to be taken (its codec's decode):
/// `true` lets the take go on; `false` or a throw is `Corrupt`, and the
/// value stays. The package keeps the decode's own error to throw.
fn js_check(env: &Env, f: napi::sys::napi_value, value: napi::sys::napi_value) -> tinystore::Result<()> {
    let (env, mut out) = (env.raw(), std::ptr::null_mut());
    let mut this = std::ptr::null_mut();
    let passed = unsafe { napi::sys::napi_get_undefined(env, &mut this) } == napi::sys::Status::napi_ok
        && unsafe { napi::sys::napi_call_function(env, this, f, 1, &value, &mut out) } == napi::sys::Status::napi_ok
        && js::read_bool(env, out).unwrap_or(false);
    if !passed {
        // A throw leaves its exception pending; the check's `false` says it.
        let mut thrown = std::ptr::null_mut();
        unsafe { napi::sys::napi_get_and_clear_last_exception(env, &mut thrown) };
        return Err(tinystore::Error::new(
            ErrorKind::Corrupt,
            "the bucket's codec could not decode the value; it stays",
        ));
    }
    Ok(())
}
