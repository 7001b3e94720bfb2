//! The scope of a native call: every operation of a bucket, counters, a
//! quota or a once takes an optional last argument, the transaction
//! (`NativeTx`) or snapshot (`NativeSnapshot`) it runs in, or nothing for
//! the store itself, and runs the core's one operation for it
//! ([`tinystore::Scope`]), so each operation is one addon function.
//!
//! A read in any scope, and a write in a transaction, run on the JS thread
//! and answer before they return: a transaction's calls cross no thread
//! (the writer lends the transaction its connection). A write on the store
//! goes to the writer and answers a Promise ([`run`]); the core
//! refuses any write in a snapshot. A handle given to `tx.with` or
//! `view.with` is the core's to admit ([`admit`]): one of another store is
//! refused there, as at every call.

use napi::Either;
use napi::Env;
use napi::bindgen_prelude::Either5;
use napi::bindgen_prelude::Unknown;
use napi::sys::{napi_env, napi_value};
use napi_derive::napi;
use tinystore::{HandleWrite, Joining, Scope, Written};

use crate::bucket::NativeBucket;
use crate::completions::{self, sync};
use crate::convert;
use crate::convert::Ts;
use crate::limits::{NativeCounters, NativeQuota, NativeRateLimit};
use crate::napi_values as js;
use crate::once::NativeOnce;
use crate::tx::NativeTx;
use crate::view::NativeSnapshot;

/// A call's `scope` argument.
pub(crate) type NativeScope = Either<&'static NativeTx, &'static NativeSnapshot>;

/// The core's scope for a call's `scope` argument.
pub(crate) fn scope_of<'a>(scope: &'a Option<NativeScope>) -> Scope<'a> {
    match scope {
        None => Scope::Direct,
        Some(Either::A(tx)) => Scope::Tx(&tx.binding),
        Some(Either::B(view)) => Scope::View(&view.snapshot),
    }
}

/// Refuses, at `tx.with(handle)` or `view.with(handle)`, what cannot join
/// the scope (a handle of another store, a rate limit, `flushEvery`
/// counters in a transaction): the core's one decision.
#[napi(
    ts_args_type = "scope: NativeTx | NativeSnapshot, handle: NativeBucket | NativeCounters | NativeQuota | NativeOnce | NativeRateLimit"
)]
pub fn admit(
    env: Env,
    scope: NativeScope,
    handle: Either5<&NativeBucket, &NativeCounters, &NativeQuota, &NativeOnce, &NativeRateLimit>,
) -> napi::Result<()> {
    let joining = match handle {
        Either5::A(b) => Joining::Bucket(&b.raw),
        Either5::B(c) => Joining::Counters(&c.counters),
        Either5::C(q) => Joining::Quota(&q.quota),
        Either5::D(o) => Joining::Once(&o.once),
        Either5::E(r) => Joining::RateLimit(&r.limit),
    };
    sync(&env, scope_of(&Some(scope)).join(joining))
}

/// Runs `write` of the handle `on` in `scope`: inside a transaction (or
/// refused in a snapshot) at once, answering its JS value; on the store
/// through the writer, answering a Promise of it. `answer` makes the JS
/// value either way.
pub(crate) fn run<'e, W: HandleWrite>(
    env: &'e Env,
    scope: &Option<NativeScope>,
    on: &W::On,
    write: Ts<W>,
    answer: impl FnOnce(napi_env, Written) -> Ts<napi_value> + Send + 'static,
) -> napi::Result<Unknown<'e>> {
    let write = sync(env, write)?;
    if scope.is_none() {
        let on = on.clone();
        return completions::write(env, move |done| write.to_writer(&on, done), answer);
    }
    let r = write.in_scope(scope_of(scope), on);
    completions::value(env, r.and_then(|v| answer(env.raw(), v)))
}

/// The JS value of an answer that needs nothing of its handle: a version
/// as its text, whether a create wrote, a counter as a number. A take's
/// value needs its bucket's type: `NativeBucket::take` converts it.
pub(crate) fn written_js(env: napi_env, written: Written) -> Ts<napi_value> {
    match written {
        Written::Version(v) => convert::version_value(env, v),
        Written::Created(c) => js::boolean(env, c.written()),
        Written::Found(found) => js::boolean(env, found),
        Written::Taken(_) | Written::Nothing => js::undefined(env),
        Written::Count(v) => crate::limits::value(env, false, v, true),
        Written::Allowance(a) => crate::limits::allowance(env, &a),
    }
}
