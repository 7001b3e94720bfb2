//! Small, checked wrappers over the raw napi calls that make and read the
//! JS values the addon passes: strings, numbers, bigints, bytes, dates,
//! plain objects and arrays.
//!
//! The glue works on raw `napi_value`s rather than napi-rs' typed values so
//! that one function can take "a key" (text, bytes or an integer) or "a
//! value of the bucket's type" and say exactly what was wrong with it.

use std::ffi::c_void;
use std::ptr;

use napi::bindgen_prelude::Unknown;
use napi::sys::{self, napi_env, napi_value};

use crate::convert::Ts;

/// Turns a napi status into a result: a failure (rare: a broken env) is an
/// engine error, so that it reaches JS as the package's errors do.
#[inline]
pub(crate) fn check(status: sys::napi_status, what: &str) -> Ts<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(failed(status, what))
    }
}

/// The error of a napi call that failed: out of line, so that a check on
/// the hot path is a compare.
#[cold]
fn failed(status: sys::napi_status, what: &str) -> tinystore::Error {
    tinystore::Error::new(tinystore::ErrorKind::Invalid, format!("napi: {what} failed ({status})"))
}

/// A bare JS function named `name` that runs `cb` with `data` (null for
/// none; the caller keeps ownership of what it points to).
pub(crate) fn function(
    env: napi_env,
    name: &str,
    cb: unsafe extern "C" fn(napi_env, sys::napi_callback_info) -> napi_value,
    data: *mut c_void,
) -> Ts<napi_value> {
    let mut f = ptr::null_mut();
    // SAFETY: the name's bytes and length are passed together; napi copies them.
    let status =
        unsafe { sys::napi_create_function(env, name.as_ptr().cast(), name.len() as isize, Some(cb), data, &mut f) };
    check(status, &format!("making {name}"))?;
    Ok(f)
}

/// What a napi finalizer frees: a `T` boxed by [`owned_by`].
unsafe extern "C" fn drop_boxed<T>(_env: napi_env, data: *mut c_void, _hint: *mut c_void) {
    drop(unsafe { Box::from_raw(data.cast::<T>()) });
}

/// The JS value `make` makes owning a box of `value` (its finalizer runs
/// [`drop_boxed`]), and the address of `value`, which lives as long.
fn owned_by<T>(value: T, make: impl FnOnce(*mut T) -> Ts<napi_value>) -> Ts<(napi_value, *const T)> {
    let data = Box::into_raw(Box::new(value));
    // Until the finalizer is added the value is still ours to drop.
    make(data)
        .map(|v| (v, data.cast_const()))
        .inspect_err(|_| drop(unsafe { Box::from_raw(data) }))
}

/// An External that owns `value` until it is collected, and the address
/// of `value`, which lives as long.
pub(crate) fn external<T>(env: napi_env, value: T, what: &str) -> Ts<(napi_value, *const T)> {
    owned_by(value, |data| {
        let mut out = ptr::null_mut();
        let finalize = Some(drop_boxed::<T> as _);
        check(
            unsafe { sys::napi_create_external(env, data.cast(), finalize, ptr::null_mut(), &mut out) },
            what,
        )
        .map(|()| out)
    })
}

/// A bare JS function named `name` that runs `cb` with its data `value`,
/// which it owns until it is collected; and the address of `value`.
pub(crate) fn function_owning<T>(
    env: napi_env,
    name: &str,
    cb: unsafe extern "C" fn(napi_env, sys::napi_callback_info) -> napi_value,
    value: T,
) -> Ts<(napi_value, *const T)> {
    owned_by(value, |data| {
        let f = function(env, name, cb, data.cast())?;
        let finalize = Some(drop_boxed::<T> as _);
        check(
            unsafe { sys::napi_add_finalizer(env, f, data.cast(), finalize, ptr::null_mut(), ptr::null_mut()) },
            &format!("making {name}"),
        )
        .map(|()| f)
    })
}

/// The first `N` arguments of a bare callback (`undefined` past those
/// given); `what` names the call in the error.
pub(crate) fn args<const N: usize>(env: napi_env, info: sys::napi_callback_info, what: &str) -> Ts<[napi_value; N]> {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    // SAFETY: argv has room for argc values, as napi requires.
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    check(status, &format!("reading the arguments of {what}"))?;
    Ok(argv)
}

/// The JS type of a value, as `typeof` would name it (`null` for null).
pub(crate) fn type_name(env: napi_env, v: napi_value) -> &'static str {
    let mut t = 0;
    if unsafe { sys::napi_typeof(env, v, &mut t) } != sys::Status::napi_ok {
        return "unknown";
    }
    match t {
        sys::ValueType::napi_undefined => "undefined",
        sys::ValueType::napi_null => "null",
        sys::ValueType::napi_boolean => "boolean",
        sys::ValueType::napi_number => "number",
        sys::ValueType::napi_string => "string",
        sys::ValueType::napi_symbol => "symbol",
        sys::ValueType::napi_object => "object",
        sys::ValueType::napi_function => "function",
        sys::ValueType::napi_bigint => "bigint",
        _ => "unknown",
    }
}

/// The raw value of an argument.
pub(crate) fn raw(v: &Unknown<'_>) -> napi_value {
    use napi::JsValue;
    v.raw()
}

/// The UTF-8 bytes of a JS string.
pub(crate) fn read_string(env: napi_env, v: napi_value) -> Ts<Vec<u8>> {
    let mut len = 0;
    check(
        unsafe { sys::napi_get_value_string_utf8(env, v, ptr::null_mut(), 0, &mut len) },
        "reading a string's length",
    )?;
    let mut buf = vec![0u8; len + 1];
    let mut written = 0;
    check(
        unsafe { sys::napi_get_value_string_utf8(env, v, buf.as_mut_ptr().cast(), len + 1, &mut written) },
        "reading a string",
    )?;
    buf.truncate(written);
    Ok(buf)
}

/// The UTF-8 bytes of a JS string written into `buf`, in one call: `None`
/// when the value is not a string, or the string may not have fit (a read
/// stops short of a character that does not fit, so anything within four
/// bytes of the end counts as not fitting). The fast path of a read's key:
/// no type check, no length query, no allocation.
pub(crate) fn read_string_into(env: napi_env, v: napi_value, buf: &mut [u8]) -> Option<&[u8]> {
    let mut written = 0;
    let status = unsafe { sys::napi_get_value_string_utf8(env, v, buf.as_mut_ptr().cast(), buf.len(), &mut written) };
    (status == sys::Status::napi_ok && written + 4 < buf.len()).then(|| &buf[..written])
}

/// Reads a JS value by one napi call, `$call(env, v, &mut out)`.
macro_rules! readers {
    ($($(#[$doc:meta])* $name:ident -> $t:ty = $call:ident, $what:literal;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(env: napi_env, v: napi_value) -> Ts<$t> {
            let mut out = <$t>::default();
            check(unsafe { sys::$call(env, v, &mut out) }, $what)?;
            Ok(out)
        }
    )*};
}

readers! {
    /// A JS number.
    read_f64 -> f64 = napi_get_value_double, "reading a number";
    /// A JS boolean.
    read_bool -> bool = napi_get_value_bool, "reading a boolean";
}

/// A JS bigint as a sign and magnitude, or `None` when it has more than 128 bits.
pub(crate) fn read_bigint(env: napi_env, v: napi_value) -> Ts<Option<i128>> {
    let mut sign = 0;
    let mut words = [0u64; 2];
    let mut count = words.len();
    check(
        unsafe { sys::napi_get_value_bigint_words(env, v, &mut sign, &mut count, words.as_mut_ptr()) },
        "reading a bigint",
    )?;
    if count > 2 {
        return Ok(None);
    }
    let magnitude = (u128::from(words[1]) << 64) | u128::from(words[0]);
    let Ok(m) = i128::try_from(magnitude) else {
        return Ok(None);
    };
    Ok(Some(if sign != 0 { -m } else { m }))
}

/// A JS bigint as the core's signed number: past 128 bits, its decimal text.
pub(crate) fn signed_bigint(env: napi_env, v: napi_value) -> Ts<tinystore::Signed> {
    if let Some(n) = read_bigint(env, v)? {
        return Ok(n.into());
    }
    let mut text = ptr::null_mut();
    check(
        unsafe { sys::napi_coerce_to_string(env, v, &mut text) },
        "spelling a bigint",
    )?;
    let text = String::from_utf8(read_string(env, text)?).unwrap_or_default();
    Ok(tinystore::Signed::Other(text.into()))
}

/// The bytes of a `Uint8Array` (a `Buffer` is one), or `None` for any other value.
pub(crate) fn read_bytes(env: napi_env, v: napi_value) -> Ts<Option<Vec<u8>>> {
    let mut is_typed = false;
    check(
        unsafe { sys::napi_is_typedarray(env, v, &mut is_typed) },
        "checking for bytes",
    )?;
    if !is_typed {
        return Ok(None);
    }
    let mut kind = 0;
    let mut len = 0;
    let mut data: *mut c_void = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    let mut offset = 0;
    check(
        unsafe { sys::napi_get_typedarray_info(env, v, &mut kind, &mut len, &mut data, &mut buffer, &mut offset) },
        "reading bytes",
    )?;
    if kind != sys::TypedarrayType::uint8_array {
        return Ok(None);
    }
    if len == 0 {
        return Ok(Some(Vec::new()));
    }
    Ok(Some(
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }.to_vec(),
    ))
}

/// Makes a JS value by one napi call, `$call(env, args.., &mut out)`.
macro_rules! makers {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $t:ty),*) = $call:ident($($e:expr),*), $what:literal;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub(crate) fn $name(env: napi_env, $($arg: $t),*) -> Ts<napi_value> {
            let mut out = ptr::null_mut();
            check(unsafe { sys::$call(env, $($e,)* &mut out) }, $what)?;
            Ok(out)
        }
    )*};
}

makers! {
    /// `undefined`.
    undefined() = napi_get_undefined(), "making undefined";
    /// `null`: the value of a set member.
    null() = napi_get_null(), "making null";
    /// A JS string from UTF-8 text.
    string(s: &str) = napi_create_string_utf8(s.as_ptr().cast(), s.len() as isize), "making a string";
    /// A JS number.
    number(n: f64) = napi_create_double(n), "making a number";
    /// A JS number from an `i32`: cheaper for V8 to make than one from an `f64`.
    int32(n: i32) = napi_create_int32(n), "making a number";
    /// A JS boolean.
    boolean(b: bool) = napi_get_boolean(b), "making a boolean";
    /// A JS bigint of a signed 64-bit integer.
    bigint_i64(i: i64) = napi_create_bigint_int64(i), "making a bigint";
    /// A JS bigint of an unsigned 64-bit integer.
    bigint_u64(u: u64) = napi_create_bigint_uint64(u), "making a bigint";
    /// A JS `Date` at `ms` milliseconds since the Unix epoch.
    date(ms: i64) = napi_create_date(ms as f64), "making a Date";
    /// An empty plain object.
    object() = napi_create_object(), "making an object";
}

/// A fresh `Uint8Array` holding a copy of `bytes`.
pub(crate) fn uint8array(env: napi_env, bytes: &[u8]) -> Ts<napi_value> {
    let mut data: *mut c_void = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    check(
        unsafe { sys::napi_create_arraybuffer(env, bytes.len(), &mut data, &mut buffer) },
        "making an ArrayBuffer",
    )?;
    if !bytes.is_empty() {
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data.cast::<u8>(), bytes.len()) };
    }
    let mut out = ptr::null_mut();
    check(
        unsafe { sys::napi_create_typedarray(env, sys::TypedarrayType::uint8_array, bytes.len(), buffer, 0, &mut out) },
        "making a Uint8Array",
    )?;
    Ok(out)
}

/// A JS `Date` of a `SystemTime`, or `undefined` for `None`.
pub(crate) fn opt_date(env: napi_env, t: Option<std::time::SystemTime>) -> Ts<napi_value> {
    match t {
        Some(t) => date(env, tinystore::to_millis(t)),
        None => undefined(env),
    }
}

/// Sets `obj[name] = value`; `name` must end in NUL.
pub(crate) fn set(env: napi_env, obj: napi_value, name: &'static str, value: napi_value) -> Ts<()> {
    debug_assert!(name.ends_with('\0'));
    check(
        unsafe { sys::napi_set_named_property(env, obj, name.as_ptr().cast(), value) },
        "setting a property",
    )
}

/// A plain object of `fields`, each name ending in NUL.
pub(crate) fn object_of(env: napi_env, fields: &[(&'static str, napi_value)]) -> Ts<napi_value> {
    let o = object(env)?;
    for &(name, value) in fields {
        set(env, o, name, value)?;
    }
    Ok(o)
}

/// Sets `obj[key] = value` for a key that is not a static name.
pub(crate) fn set_key(env: napi_env, obj: napi_value, key: &str, value: napi_value) -> Ts<()> {
    let k = string(env, key)?;
    check(
        unsafe { sys::napi_set_property(env, obj, k, value) },
        "setting a property",
    )
}

/// A JS array of `items`.
pub(crate) fn array(env: napi_env, items: Vec<napi_value>) -> Ts<napi_value> {
    let mut out = ptr::null_mut();
    check(
        unsafe { sys::napi_create_array_with_length(env, items.len(), &mut out) },
        "making an array",
    )?;
    for (i, v) in items.into_iter().enumerate() {
        check(
            unsafe { sys::napi_set_element(env, out, i as u32, v) },
            "filling an array",
        )?;
    }
    Ok(out)
}

/// A reference that keeps `v` alive until the env goes.
pub(crate) fn keep(env: napi_env, v: napi_value) -> Ts<sys::napi_ref> {
    let mut r = ptr::null_mut();
    check(
        unsafe { sys::napi_create_reference(env, v, 1, &mut r) },
        "keeping a value",
    )?;
    Ok(r)
}

/// Calls the function `f` keeps, with `undefined` as `this`.
pub(crate) fn call_kept(env: napi_env, f: sys::napi_ref, args: &[napi_value]) -> Ts<napi_value> {
    let (mut func, mut out) = (ptr::null_mut(), ptr::null_mut());
    check(
        unsafe { sys::napi_get_reference_value(env, f, &mut func) },
        "finding a kept function",
    )?;
    let this = undefined(env)?;
    let status = unsafe { sys::napi_call_function(env, this, func, args.len(), args.as_ptr(), &mut out) };
    check(status, "calling a kept function")?;
    Ok(out)
}

/// A raw value as napi-rs' `Unknown`, to return from a method.
pub(crate) fn unknown<'e>(env: napi_env, v: napi_value) -> Unknown<'e> {
    unsafe { Unknown::from_raw_unchecked(env, v) }
}
