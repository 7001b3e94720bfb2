//! The scope of a native call: every operation of a bucket, counters, a
//! quota or a once takes an optional last argument, the transaction
//! (`NativeTx`) or snapshot (`NativeSnapshot`) it runs in, or nothing for
//! the store itself, and runs the core's one operation for it
//! ([`tinystore::Scope`]), so each operation is one addon function.
//!
//! A read in any scope, and a write in a transaction, run on the JS thread
//! and answer before they return: a transaction's calls cross no thread
//! (the writer lends the transaction its connection). A write on the store
//! goes to the writer and answers a Promise ([`write_in`]); the core
//! refuses any write in a snapshot.

use napi::Either;
use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::napi_env;
use napi::sys::napi_value;
use tinystore::Scope;

use crate::completions::{self, sync};
use crate::convert::Ts;
use crate::napi_values as js;
use crate::tx::NativeTx;
use crate::view::NativeSnapshot;

/// A call's `scope` argument.
pub(crate) type NativeScope = Either<&'static NativeTx, &'static NativeSnapshot>;

/// The core's scope for a call's `scope` argument.
pub(crate) fn scope_of<'a>(scope: &'a Option<NativeScope>) -> Scope<'a> {
    match scope {
        None => Scope::Direct,
        Some(Either::A(tx)) => Scope::Tx(&tx.session),
        Some(Either::B(view)) => Scope::View(&view.snapshot),
    }
}

/// Runs a write, prepared as `args`, in `scope`: inside a transaction (or
/// refused in a snapshot) by `scoped` at once, answering its JS value; on
/// the store by `direct`, which hands the core's completion form the
/// writer's `done`, answering a Promise of it. `answer` makes the JS value
/// either way.
pub(crate) fn write_in<'e, D, T, R>(
    env: &'e Env,
    scope: &Option<NativeScope>,
    args: D,
    scoped: impl FnOnce(Scope<'_>, D) -> Ts<T>,
    direct: impl FnOnce(D, Box<dyn FnOnce(Ts<T>) + Send>) -> Ts<R> + 'static,
    answer: impl FnOnce(napi_env, T) -> Ts<napi_value> + Send + 'static,
) -> napi::Result<Unknown<'e>>
where
    D: 'static,
    T: Send + 'static,
{
    if scope.is_none() {
        return completions::write(env, move |done| direct(args, done), answer);
    }
    let v = sync(env, scoped(scope_of(scope), args).and_then(|v| answer(env.raw(), v)))?;
    Ok(js::unknown(env.raw(), v))
}
