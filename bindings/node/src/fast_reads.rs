//! The hot read, `bucket.get(key)`, as a bare napi function.
//!
//! A `#[napi]` method pays napi-rs' per-call bookkeeping (a borrow scope
//! for its arguments, the unwrap of `this`), which is a large share of a
//! point read's cost in Node (`bench/node/bench.mjs` times the gets). The
//! read needs none of it: its arguments are a handle and a key, and it
//! answers at once. So the package calls `get(handle, key)`, a plain
//! `napi_callback`, with a handle made once per bucket (an External that
//! owns a clone of the bucket). Errors are thrown as the package's error
//! classes, as everywhere else in the addon.

use std::ptr;
use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::{self, napi_callback_info, napi_env, napi_value};
use napi_derive::napi;
use tinystore::{Raw, RawBucket};

use crate::bucket::NativeBucket;
use crate::completions;
use crate::convert::{self, Ts, ValueKind};
use crate::napi_values as js;

/// What a handle owns: the bucket (or branch) and the type of its values.
pub(crate) struct Handle {
    /// Shared with the sets in flight, which may outlive the handle.
    pub(crate) raw: Arc<RawBucket>,
    pub(crate) kind: ValueKind,
    /// The bucket's `streams`: its bare sets may stream into a burst.
    pub(crate) streams: bool,
}

/// The read handle of a bucket, for `get(handle, key)`.
pub(crate) fn handle(env: napi_env, bucket: &NativeBucket) -> Ts<napi_value> {
    let handle = Handle {
        raw: Arc::new(bucket.raw.clone()),
        kind: bucket.kind,
        streams: bucket.streams,
    };
    Ok(js::external(env, handle, "making a read handle")?.0)
}

/// `get(handle, key)`: the value of a live key, or `undefined` (JSON as its
/// text), as the bucket's `get` answers.
unsafe extern "C" fn get(env: napi_env, info: napi_callback_info) -> napi_value {
    completions::value_or_throw(env, read(env, info))
}

fn read(env: napi_env, info: napi_callback_info) -> Ts<napi_value> {
    let (h, argv) = with_handle::<2>(env, info, "get")?;
    convert::with_key(env, argv[1], h.raw.name(), |k| value(env, h, k))
}

/// The first `N` arguments of the bare call `what` (`undefined` past those
/// given), the first a read handle, with the handle it owns.
pub(crate) fn with_handle<'a, const N: usize>(
    env: napi_env,
    info: napi_callback_info,
    what: &str,
) -> Ts<(&'a Handle, [napi_value; N])> {
    let argv: [napi_value; N] = js::args(env, info, what)?;
    let mut data = ptr::null_mut();
    let status = unsafe { sys::napi_get_value_external(env, argv[0], &mut data) };
    if status != sys::Status::napi_ok || data.is_null() {
        return Err(completions::invalid(format!("{what} takes a bucket's read handle")));
    }
    // The External owns the handle until it is collected, and it is an
    // argument of the running call, so it outlives the call's scope.
    Ok((unsafe { &*data.cast::<Handle>() }, argv))
}

fn value(env: napi_env, h: &Handle, key: &[u8]) -> Ts<napi_value> {
    let found: Option<Raw> = h.raw.entry(key)?.map(|e| e.value);
    match found {
        Some(raw) => h.kind.decode(env, &raw).map_err(|e| h.raw.named(key, e)),
        None => js::undefined(env),
    }
}

/// The bare read functions, made once per JS environment: `{ get }`.
#[napi(ts_return_type = "{ get(handle: unknown, key: unknown): unknown }")]
pub fn fast_reads<'e>(env: &'e Env) -> napi::Result<Unknown<'e>> {
    let get = js::function(env.raw(), "get", get, ptr::null_mut());
    completions::value(env, get.and_then(|f| js::object_of(env.raw(), &[("get\0", f)])))
}
