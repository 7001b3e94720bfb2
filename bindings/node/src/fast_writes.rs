//! The hot write, `bucket.set(key, value)` without options, as a bare napi
//! function.
//!
//! Measured with callgrind (20,000 sets at 64 in flight), the `#[napi]`
//! method cost about 4,000 instructions a call in napi-rs' bookkeeping
//! alone (a borrow scope for its arguments, the unwrap of `this`, the
//! conversion of three optional arguments), against about 26,000 for the
//! whole of a set on the JS thread. A set without options needs none of
//! it: the package calls `set(handle, key, value)`, a plain
//! `napi_callback`, with the bucket's read handle (see [`crate::fast_reads`]).
//! A set with options keeps the method. The errors and the hand-over to
//! the writer are the method's own (the write groups of [`crate::write_handoff`]).
//!
//! Its Promise is not a napi one either: napi's create and resolve cost
//! about 1,900 instructions a set in Node, and in both runtimes a global
//! handle each. The package makes the Promise and keeps its resolve and
//! reject functions under a number it passes as `id`; once the group is
//! durable the addon writes the numbers into `ids` and calls `settled(n)`
//! once for the group, or `failed(id, error)` for a write that failed.
//!
//! Under Bun a napi call costs far more than under Node (see
//! [`crate::fast_allow`]), so there the package first tries the same set
//! as the C function [`tinystore_bucket_set`] through Bun's FFI, with the
//! key's and the value's UTF-8 in buffers it reuses. That call does only
//! what needs no napi call (a string or JSON bucket, while this turn's
//! other sets are in flight); whatever it declines goes through napi.

use std::ptr;

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::{self, napi_callback_info, napi_env, napi_value};
use napi_derive::napi;

use crate::bucket::show_path;
use crate::completions;
use crate::convert::ValueKind;
use crate::convert::{self, Ts};
use crate::fast_reads::{Handle, with_handle};
use crate::napi_values as js;
use crate::write_handoff::{self, SetArgs};

/// `set(handle, key, value, id)`: writes the value durably, as the
/// bucket's `set(key, value)` does, and settles the Promise the package
/// keeps as number `id` once durable; throws bad input.
unsafe extern "C" fn set(env: napi_env, info: napi_callback_info) -> napi_value {
    completions::value_or_throw(env, write(env, info))
}

fn write(env: napi_env, info: napi_callback_info) -> Ts<napi_value> {
    let (h, argv) = with_handle::<4>(env, info, "set")?;
    let name = h.raw.name();
    // The key is read straight into the stack, as a read's key is.
    convert::with_key(env, argv[1], name, |key| {
        let value = h
            .kind
            .encode(env, argv[2])
            .map_err(|e| e.at(name, show_path(h.raw.owners(), key)))?;
        let mut id = 0;
        js::check(
            unsafe { sys::napi_get_value_uint32(env, argv[3], &mut id) },
            "reading the number of a set's Promise",
        )?;
        write_handoff::set(env, SetArgs::new(h.raw.clone(), key, value), id, h.streams)
    })?;
    // A callback's null is `undefined` to JS, without a napi call to make one.
    Ok(ptr::null_mut())
}

/// `set(handle, key, value, id)` for a runtime that calls C faster than
/// napi (Bun's FFI): `key[..key_len]` is a string key's UTF-8 (not empty)
/// and `value[..value_len]` a string value's. Answers 1 when the set was
/// handed over as the napi `set` would hand it (its Promise, kept as `id`,
/// settles the same way), or 0 when only the napi `set` can do it (a
/// bucket of another type, the first set of a turn, an error to throw),
/// having done nothing.
///
/// # Safety
/// `handle` is the `address` of a read handle that is still alive; `key`
/// and `value` point to `key_len` and `value_len` readable bytes; the
/// call is made on the JS thread of the env that made the handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinystore_bucket_set(
    handle: *const std::ffi::c_void,
    key: *const u8,
    key_len: u32,
    value: *const u8,
    value_len: u32,
    id: u32,
) -> i32 {
    if handle.is_null() || key.is_null() || key_len == 0 || value.is_null() {
        return 0;
    }
    // SAFETY: as the caller promises.
    let (h, key, value) = unsafe {
        (
            &*handle.cast::<Handle>(),
            std::slice::from_raw_parts(key, key_len as usize),
            std::slice::from_raw_parts(value, value_len as usize),
        )
    };
    let value = match h.kind {
        // A string (or the JSON text of an object, in a bucket without a type).
        ValueKind::Json | ValueKind::Auto => tinystore::Raw::json(value.to_vec()),
        ValueKind::String => match std::str::from_utf8(value) {
            Ok(text) => tinystore::Raw::text(text),
            Err(_) => return 0,
        },
        _ => return 0,
    };
    i32::from(write_handoff::set_from_c(
        SetArgs::new(h.raw.clone(), key, value),
        id,
        h.streams,
    ))
}

/// `address(handle)`: where a read handle's bucket lives, for
/// [`tinystore_bucket_set`] (a user-space pointer fits a JS number exactly).
unsafe extern "C" fn address(env: napi_env, info: napi_callback_info) -> napi_value {
    completions::value_or_throw(env, address_of(env, info))
}

fn address_of(env: napi_env, info: napi_callback_info) -> Ts<napi_value> {
    let (h, _) = with_handle::<1>(env, info, "address")?;
    js::number(env, h as *const Handle as usize as f64)
}

/// The bare write functions, made once per JS environment: `{ set, ids,
/// versions }`. The package keeps each set's Promise under a number; once a
/// group is durable the addon writes the numbers of the fulfilled ones into
/// `ids`, the versions they wrote into `versions`, and calls `settled(n)`
/// once, and calls `failed(id, error)` for each rejected one: no napi
/// Promise and no napi call a set.
#[napi(
    ts_args_type = "settled: (n: number) => void, failed: (id: number, error: unknown) => void",
    ts_return_type = "{ set(handle: unknown, key: unknown, value: unknown, id: number): void; address(handle: unknown): number; ids: Uint32Array; versions: Float64Array }"
)]
pub fn fast_writes<'e>(env: &'e Env, settled: Unknown<'e>, failed: Unknown<'e>) -> napi::Result<Unknown<'e>> {
    let env_ = env.raw();
    let r = (|| {
        let (ids, versions) = completions::init_js_promises(env_, js::raw(&settled), js::raw(&failed))?;
        let fields = [
            ("ids\0", ids),
            ("versions\0", versions),
            ("set\0", js::function(env_, "set", set, ptr::null_mut())?),
            ("address\0", js::function(env_, "address", address, ptr::null_mut())?),
        ];
        js::object_of(env_, &fields)
    })();
    completions::value(env, r)
}
