//! Transactions (KV-16): `store.tx(fn)` holds one write of the engine's
//! writer open while `fn` runs, sending its bucket calls one at a time.
//!
//! Why this shape: JS cannot hand the engine a closure that awaits, so the
//! binding uses the core's `BindingTx`. `NativeStore::transaction` hands
//! `Store::transaction_then` to the writer without blocking the event loop;
//! when the writer's turn comes it gives the `BindingTx` to `ready`, which
//! settles the Promise from the writer thread at once (`Wake::AtOnce`:
//! the writer then waits on JS, so the answer cannot wait for the group's
//! end).
//! The writer then lends the transaction its connection, so each call runs on
//! the JS thread inside the transaction and answers before it returns, as a
//! read does; every call of a handle takes the transaction as its scope
//! (`scope.rs`). `commit` and `rollback` end the transaction and resolve once
//! the writer has finished with it, through the same completions as any
//! write.
//!
//! Invariants:
//! - The writer runs nothing else while a transaction is open, so the package
//!   ends every transaction it starts (commit after `fn`, rollback if it
//!   throws); one held past `tinystore::TX_LIMIT` is rolled back by the core.
//! - The core calls `done` exactly once; [`Ending`] keeps its answer until
//!   JS asks for it, so no Promise is made that nobody awaits.

use std::sync::{Arc, Mutex};

use napi::Env;
use napi::bindgen_prelude::{ToNapiValue, Unknown};
use napi_derive::napi;
use tinystore::BindingTx;

use crate::cancel::NativeCancel;
use crate::completions::{self, Completion, Pending, Wake, sync};
use crate::convert::napi_err;
use crate::napi_values as js;

/// What became of a transaction's write: the core's `done` answer, or the
/// Promise of `commit` or `rollback` waiting for it.
enum End {
    Open,
    Ended(tinystore::Result<()>),
    /// The Promise, and whether the end asked for is a rollback.
    Awaited(Completion, bool),
}

/// Shared by the core's `done` (writer thread) and the [`NativeTx`] (JS thread).
#[derive(Clone)]
pub(crate) struct Ending(Arc<Mutex<End>>);

impl Ending {
    fn new() -> Ending {
        Ending(Arc::new(Mutex::new(End::Open)))
    }

    /// Meets the other side: the core's `done` answer (`End::Ended`, from
    /// the writer thread) or the Promise of `commit` or `rollback`
    /// (`End::Awaited`, from JS). The second to come settles the Promise.
    fn meet(&self, arrived: End) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match (std::mem::replace(&mut *g, End::Open), arrived) {
            (End::Awaited(completion, rolled_back), End::Ended(r))
            | (End::Ended(r), End::Awaited(completion, rolled_back)) => {
                drop(g);
                answer(completion, r, rolled_back);
            }
            (_, arrived) => *g = arrived,
        }
    }
}

/// A commit resolves with `undefined` once durable, or rejects with why it
/// was not written; a rollback resolves once the writer let go, since its
/// error (`Cancelled`) is what it asked for.
fn answer(completion: Completion, r: tinystore::Result<()>, rolled_back: bool) {
    let r = if rolled_back { Ok(()) } else { r };
    completion.send(r.map(|()| Box::new(js::undefined) as completions::Answer));
}

/// Starts a transaction on `store`: the Promise resolves with the
/// [`NativeTx`] when the writer's turn comes. Nothing blocks meanwhile.
pub(crate) fn begin<'e>(env: &'e Env, store: &tinystore::Store) -> napi::Result<Unknown<'e>> {
    let store = store.clone();
    completions::write_waking(
        env,
        Wake::AtOnce,
        move |ready| {
            let ending = Ending::new();
            let on_done = ending.clone();
            store.transaction_then(
                move |r| ready(r.map(|binding| (binding, ending))),
                move |r| on_done.meet(End::Ended(r)),
            )
        },
        |env, (binding, ending)| {
            let tx = NativeTx {
                binding,
                ending,
                ended: false,
            };
            unsafe { NativeTx::to_napi_value(env, tx) }.map_err(napi_err)
        },
    )
}

/// An open transaction (the package's `Tx` wraps it). A handle's calls
/// given it as their scope run inside the transaction, seeing its own
/// writes; reads renew no idle key. After the end they are `Closed`, or say
/// why the core ended it (held past `TX_LIMIT`). Collected without an end,
/// it rolls back.
#[napi]
pub struct NativeTx {
    pub(crate) binding: BindingTx,
    ending: Ending,
    ended: bool,
}

impl NativeTx {
    /// Ends the transaction with `end` and returns the Promise of the writer's answer.
    fn end<'e>(
        &mut self,
        env: &'e Env,
        rolled_back: bool,
        end: impl FnOnce(&BindingTx) -> tinystore::Result<()>,
    ) -> napi::Result<Unknown<'e>> {
        let (pending, completion, promise) = sync(env, Pending::new(env.raw()))?;
        if self.ended {
            sync(env, pending.reject_now(tinystore::tx_ended()))?;
            return Ok(js::unknown(env.raw(), promise));
        }
        self.ended = true;
        sync(env, pending.queued(Ok(())))?;
        self.ending.meet(End::Awaited(completion, rolled_back));
        // When the transaction cannot take the end (the writer already rolled it
        // back), the core's answer, which says why, still settles the Promise.
        let _ = end(&self.binding);
        Ok(js::unknown(env.raw(), promise))
    }
}

#[napi]
impl NativeTx {
    /// Commits: resolves once everything the transaction wrote is durable,
    /// or rejects with why nothing was (`OutcomeUnknown` when the group's
    /// commit failed; `Cancelled` when `cancel` fired, which rolls back).
    /// A second end is `Closed`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn commit<'e>(&mut self, env: &'e Env, cancel: Option<&NativeCancel>) -> napi::Result<Unknown<'e>> {
        self.end(env, false, |s| s.commit_unless(cancel.map(NativeCancel::cancel)))
    }

    /// Rolls back, writing nothing; resolves once the writer has let go.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn rollback<'e>(&mut self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        self.end(env, true, BindingTx::rollback)
    }
}
