//! The hot call of a rate limit, `limit.allow(key, n)`, as a bare napi
//! function answering a number.
//!
//! Measured with callgrind, a `#[napi]` `allow` answering
//! `{ ok, left, retryAt, windows }` cost about 16,400 instructions in Node,
//! most of them napi-rs' per-call bookkeeping and the six properties set
//! through napi (each one interns its name and moves the object to a new
//! shape). The package builds the same object in JavaScript for a fraction
//! of that, so the addon answers only what the object needs:
//! - `left >= 0`: the request passed, with `left` more that would pass now;
//! - `-1 - retryAtMs <= -1`: it was refused, none would pass now, and the
//!   same request passes at `retryAtMs` (a Date's milliseconds);
//! - any other refusal (some would pass: a request of `n > 1` refused, or a
//!   time before 1970) as the whole answer object.
//!
//! The call is a function made once per rate limit (or branch), whose napi
//! data is a clone of the limit, so it needs no `this` to unwrap and no
//! handle argument; `n` is left out when it is 1; a string key is read into
//! the stack, as the bare `get` does (fast_reads.rs). Each napi call saved is
//! worth it: in Bun the five of the first version were a tenth of an `allow`.
//!
//! Bun's napi calls cost more than the whole engine's `allow` (about 270 ns
//! against 150 on this machine), so under Bun the package calls the same
//! `allow` through Bun's FFI instead, as the C function
//! [`tinystore_rate_limit_allow`] of this library, with the key's UTF-8 in a
//! buffer it reuses; whatever that call cannot answer goes through napi.

use std::ptr;

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::{self, napi_callback_info, napi_env, napi_value};
use napi_derive::napi;
use tinystore::{Allowance, RateLimit};

use crate::completions;
use crate::convert::{self, Ts};
use crate::limits::NativeRateLimit;
use crate::napi_values as js;

/// The bare `allow(key, n?)` of a rate limit (or a branch of it).
#[napi(ts_return_type = "((key: unknown, n?: number) => number | object) & { address: number }")]
pub fn rate_limit_allow<'e>(env: &'e Env, limit: &NativeRateLimit) -> napi::Result<Unknown<'e>> {
    completions::value(env, allow_function(env.raw(), limit))
}

/// The function `rate_limit_allow` answers.
fn allow_function(env: napi_env, limit: &NativeRateLimit) -> Ts<napi_value> {
    let (f, data) = js::function_owning(env, "allow", allow, limit.limit.clone())?;
    // The limit's address, for the FFI call: a user-space pointer fits a JS number exactly.
    js::set(env, f, "address\0", js::number(env, data as usize as f64)?)?;
    Ok(f)
}

/// `allow` for a runtime that calls C faster than napi (Bun's FFI): takes
/// `n` requests of the key whose UTF-8 is `key[..len]` (a string key, not
/// empty) and answers the number `allow(key, n)` answers, or NaN when only
/// the napi call can answer (an error, or a refusal a number cannot say),
/// having counted nothing.
///
/// # Safety
/// `limit` is the `address` of a function made by `rateLimitAllow` that is
/// still alive, and `key` points to `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinystore_rate_limit_allow(limit: *const RateLimit, key: *const u8, len: u32, n: f64) -> f64 {
    if limit.is_null() || key.is_null() || len == 0 || !(1.0..=tinystore::MAX_SAFE_INTEGER as f64).contains(&n) {
        return f64::NAN;
    }
    if (n as u64) as f64 != n {
        return f64::NAN;
    }
    // SAFETY: as the caller promises.
    let (limit, key) = unsafe { (&*limit, std::slice::from_raw_parts(key, len as usize)) };
    match limit.allow_n(key, n as u64) {
        Ok(a) => {
            let out = number(&a).unwrap_or(f64::NAN);
            forget_if_empty(a);
            out
        }
        Err(_) => f64::NAN,
    }
}

/// The answer as a number, when a number can say it.
fn number(a: &Allowance) -> Option<f64> {
    if a.ok {
        return Some(a.left as f64);
    }
    match (a.left, a.retry_at.map(tinystore::to_millis)) {
        (0, Some(ms)) if ms >= 0 => Some(-1.0 - ms as f64),
        _ => None,
    }
}

/// `allow(key, n?)`: takes `n` requests (1 when left out) or none, answering
/// as the module's doc says. `n` is a whole number from 1 (the package checks it).
unsafe extern "C" fn allow(env: napi_env, info: napi_callback_info) -> napi_value {
    completions::value_or_throw(env, take(env, info))
}

fn take(env: napi_env, info: napi_callback_info) -> Ts<napi_value> {
    let mut argc = 2;
    let mut argv = [ptr::null_mut(); 2];
    let mut data = ptr::null_mut();
    let status = unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), &mut data) };
    js::check(status, "reading the arguments of allow")?;
    if data.is_null() {
        return Err(completions::invalid("allow is made by rateLimitAllow"));
    }
    // The function owns the limit until it is collected, and it is running.
    let limit = unsafe { &*data.cast::<RateLimit>() };
    let n = if argc < 2 {
        None
    } else {
        let mut n = 0.0;
        let status = unsafe { sys::napi_get_value_double(env, argv[1], &mut n) };
        if status != sys::Status::napi_ok {
            return Err(completions::invalid("allow takes a count: a number").in_bucket(limit.name()));
        }
        Some(n)
    };
    // The count is checked once the key is read, so that its error names it.
    let uses = |k: &[u8]| crate::limits::count(n).map_err(|e| limit.named(k, e));
    let mut buf = [0u8; 256];
    let a = match js::read_string_into(env, argv[0], &mut buf) {
        Some(k) if !k.is_empty() => limit.allow_n(k, uses(k)?)?,
        _ => {
            let k = convert::key(env, argv[0]).map_err(|e| e.in_bucket(limit.name()))?;
            let n = uses(&k)?;
            limit.allow_n(k, n)?
        }
    };
    let out = answer(env, &a);
    forget_if_empty(a);
    out
}

/// Drops an answer, skipping the drop of its empty `windows` (a rate
/// limit's always are): an empty `BTreeMap` owns no memory, yet its drop is
/// an out-of-line loop, 3% of this call's instructions.
fn forget_if_empty(a: Allowance) {
    if a.windows.is_empty() {
        std::mem::forget(a);
    }
}

/// The answer as a number, or as the whole object when a number cannot say it.
fn answer(env: napi_env, a: &Allowance) -> Ts<napi_value> {
    if a.ok && a.left <= i32::MAX as u64 {
        // Most answers: a small integer, which V8 keeps without a heap number.
        return js::int32(env, a.left as i32);
    }
    if let Some(n) = number(a) {
        return js::number(env, n);
    }
    crate::limits::allowance(env, a)
}
