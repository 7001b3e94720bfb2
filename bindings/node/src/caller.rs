//! The caller's context (KV-16, KV-11): the transactions and runs of once
//! the running code is inside, which the package keeps in an
//! `AsyncLocalStorage` (so it follows `fn` across its awaits, and not into
//! unrelated requests) and hands to the engine with every call that may
//! wait for the writer. The engine decides whether the call would wait for
//! its own caller, and throws its one error for it.

use napi::Env;
use napi_derive::napi;

use crate::completions::sync;
use crate::once::NativeClaim;
use crate::store::NativeStore;
use crate::tx::NativeTx;

/// The transactions and runs of once the running code is inside.
#[napi]
pub struct NativeContext(pub(crate) tinystore::CallerContext);

#[napi]
impl NativeContext {
    /// This context inside `tx`.
    #[napi]
    pub fn inside_tx(&self, tx: &NativeTx) -> NativeContext {
        NativeContext(self.0.inside_tx(&tx.binding, 0))
    }

    /// This context inside the run `claim` holds.
    #[napi]
    pub fn inside_run(&self, claim: &NativeClaim) -> NativeContext {
        NativeContext(claim.inside(&self.0))
    }
}

#[napi]
impl NativeStore {
    /// Throws the engine's refusal of a call of the bucket (or other handle)
    /// `name` that would wait for the writer a transaction of `caller` holds.
    #[napi]
    pub fn refuse_write(&self, env: Env, caller: &NativeContext, name: Option<String>) -> napi::Result<()> {
        let r = self.store.refuse_write(|| caller.0.clone());
        sync(
            &env,
            r.map_err(|e| match name {
                Some(n) => e.in_bucket(&n),
                None => e,
            }),
        )
    }

    /// Throws the engine's refusal of a transaction opened inside one of
    /// `caller`'s of this store.
    #[napi]
    pub fn refuse_tx(&self, env: Env, caller: &NativeContext) -> napi::Result<()> {
        sync(&env, self.store.refuse_tx(&caller.0, 0))
    }
}
