//! `once` (KV-11): the engine's `begin` answers by completion, so a second
//! run of a key waits without blocking the event loop, and the JS thread can
//! hold the first run and its retry at the same time. A once's `get` and
//! `delete` take their scope (`scope.rs`), as a bucket's calls do.

use napi::Env;
use napi::bindgen_prelude::{ToNapiValue, Unknown};
use napi_derive::napi;
use tinystore::{Begun, Branches, Claim, OnceDelete, RawOnce};

use crate::caller::NativeContext;
use crate::completions::{self, nothing, sync};
use crate::convert::{self, Ts, ValueKind, napi_err};
use crate::napi_values as js;
use crate::scope::{NativeScope, run, scope_of, written_js};

/// A once, or one branch of it, with the type of its answers.
#[napi]
pub struct NativeOnce {
    pub(crate) once: RawOnce,
    pub(crate) kind: ValueKind,
}

/// The run of one key, held by the caller until it keeps an answer or lets
/// go. Dropped (collected) without either, it lets go keeping nothing.
#[napi]
pub struct NativeClaim {
    claim: Option<Claim>,
    kind: ValueKind,
    /// The once and key an error of `keep` names.
    once: RawOnce,
    key: Vec<u8>,
}

impl NativeOnce {
    fn key(&self, env: &Env, v: &Unknown<'_>) -> Ts<Vec<u8>> {
        convert::arg_key(env, v, &self.once)
    }
}

#[napi]
impl NativeOnce {
    /// The branch of `owner`: its keys run apart from the others.
    #[napi]
    pub fn under<'e>(&self, env: &'e Env, owner: Unknown<'e>) -> napi::Result<NativeOnce> {
        let once = convert::branch(env, &self.once, &owner)?;
        Ok(NativeOnce { once, kind: self.kind })
    }

    /// Begins a run: resolves with `{ kept: true, value }` (JSON as text),
    /// or `{ kept: false, claim }` once the key is the caller's to run,
    /// after any other run of it has ended.
    /// A run from inside a transaction of the store, or inside a run of
    /// the same key (`caller` says which the running code is in), is the
    /// engine's `InvalidError`.
    #[napi(ts_return_type = "Promise<{ kept: true, value: unknown } | { kept: false, claim: NativeClaim }>")]
    pub fn begin<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        caller: Option<&NativeContext>,
    ) -> napi::Result<Unknown<'e>> {
        let k = sync(env, self.key(env, &key))?;
        let (kind, once, key) = (self.kind, self.once.clone(), k.clone());
        let caller = caller.map(|c| c.0.clone()).unwrap_or_default();
        let begin = self.once.clone();
        completions::write(
            env,
            move |done| begin.begin(k.clone(), &caller, done),
            move |env, begun| {
                let (kept, field, v) = match begun {
                    Begun::Kept(raw) => {
                        let v = kind.decode(env, &raw).map_err(|e| once.named(&key, e))?;
                        (true, "value\0", v)
                    }
                    Begun::Run(claim) => {
                        let claim = NativeClaim {
                            claim: Some(claim),
                            kind,
                            once,
                            key,
                        };
                        let v = unsafe { NativeClaim::to_napi_value(env, claim) }.map_err(napi_err)?;
                        (false, "claim\0", v)
                    }
                };
                js::object_of(env, &[("kept\0", js::boolean(env, kept)?), (field, v)])
            },
        )
    }

    /// The answer kept for the key in `scope` (JSON as text), or `undefined`.
    #[napi]
    pub fn get<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "NativeTx")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let r = self
            .key(env, &key)
            .and_then(|k| match scope_of(&scope).once_get(&self.once, &k)? {
                Some(raw) => self.kind.decode(env.raw(), &raw).map_err(|e| self.once.named(&k, e)),
                None => js::undefined(env.raw()),
            });
        completions::value(env, r)
    }

    /// Forgets the answer kept for the key in `scope`; answers whether one was kept.
    #[napi(ts_return_type = "Promise<boolean> | boolean")]
    pub fn delete<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "NativeTx")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let delete = self.key(env, &key).map(OnceDelete);
        run(env, &scope, &self.once, delete, written_js)
    }
}

impl NativeClaim {
    /// `outer` inside this run, while it is held.
    pub(crate) fn inside(&self, outer: &tinystore::CallerContext) -> tinystore::CallerContext {
        match &self.claim {
            Some(c) => outer.inside_run(c),
            None => outer.clone(),
        }
    }
}

#[napi]
impl NativeClaim {
    /// Keeps `value` (JSON as text) as the key's answer and lets go, in one
    /// durable write; waiters then get it. A value of the wrong type lets go
    /// keeping nothing and rejects with `InvalidError`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn keep<'e>(&mut self, env: &'e Env, value: Unknown<'e>) -> napi::Result<Unknown<'e>> {
        let Some(claim) = self.claim.take() else {
            return completions::throw(env.raw(), tinystore::claim_ended());
        };
        let raw = match self.kind.encode(env.raw(), js::raw(&value)) {
            Ok(raw) => raw,
            Err(e) => {
                claim.abandon();
                return completions::throw(env.raw(), self.once.named(&self.key, e));
            }
        };
        completions::write(
            env,
            move |done| {
                claim.keep(raw, done);
                Ok(())
            },
            nothing,
        )
    }

    /// Lets go keeping nothing (the work failed): the next run, or a
    /// waiter, runs the work again.
    #[napi]
    pub fn abandon(&mut self) {
        if let Some(claim) = self.claim.take() {
            claim.abandon();
        }
    }
}
