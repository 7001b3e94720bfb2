//! The promises every call is checked against: a code of the table, an
//! error that matches it with a UTF-8 message that is not a caught panic,
//! nothing written through a null `err`, no success on a closed store, and
//! what a handle name is. Apart from the calls so that each promise is
//! stated once.

use std::ptr::{null, null_mut};

use super::call_args::{free_value, result};
use super::input::Input;
use super::{CODES, TS_OK};
use crate::{TsError, TsErrorView, TsResult, ts_error_free, ts_error_view};

/// Checks the code of a call and the error it left, and frees the error.
pub(super) fn checked(what: &str, code: i32, err: *mut TsError, asked: bool) -> i32 {
    assert!(CODES.contains(&code), "{what}: code {code} is not in the table");
    if !asked {
        assert!(err.is_null(), "{what}: an error was written through a null err");
        return code;
    }
    if code == TS_OK {
        assert!(err.is_null(), "{what}: succeeded and left an error");
        return code;
    }
    assert!(!err.is_null(), "{what}: failed with {code} and no error");
    let mut view = TsErrorView {
        code: -1,
        message: null(),
        message_len: 0,
        bucket: null(),
        bucket_len: 0,
        path: null(),
        path_len: 0,
        text: null(),
        text_len: 0,
    };
    unsafe { ts_error_view(err, &mut view) };
    assert_eq!(view.code, code, "{what}: the error's code differs from the call's");
    let text = |p: *const u8, n: usize| -> String {
        if p.is_null() {
            return String::new();
        }
        let b = unsafe { std::slice::from_raw_parts(p, n) };
        std::str::from_utf8(b)
            .unwrap_or_else(|_| panic!("{what}: the error holds text that is not UTF-8"))
            .to_string()
    };
    let message = text(view.message, view.message_len);
    text(view.bucket, view.bucket_len);
    text(view.path, view.path_len);
    assert!(!message.is_empty(), "{what}: an error with no message");
    assert!(!message.contains("a panic inside tinystore"), "{what}: {message}");
    unsafe { ts_error_free(err) };
    code
}

/// Calls `f` with an `err` out pointer (or null, as the input says) and checks what it left.
pub(super) fn call(input: &mut Input, what: &str, f: impl FnOnce(*mut *mut TsError) -> i32) -> i32 {
    let asked = !input.u8().is_multiple_of(8);
    let mut err: *mut TsError = null_mut();
    let code = f(if asked { &mut err } else { null_mut() });
    checked(what, code, err, asked)
}

/// [`call`] for a read that hands out a value when it finds the key: `f`
/// gets the result to write, and the value is freed after.
pub(super) fn call_get(input: &mut Input, what: &str, f: impl FnOnce(*mut TsResult, *mut *mut TsError) -> i32) -> i32 {
    let mut out = result();
    let code = call(input, what, |err| f(&mut out, err));
    if code == TS_OK && out.found {
        free_value(&out.entry.value);
    }
    code
}

/// Whether `name` is a handle name (KV-2): `[a-z0-9][a-z0-9_-]{0,63}`.
pub(super) fn is_name(name: &[u8]) -> bool {
    (1..=64).contains(&name.len())
        && (name[0].is_ascii_lowercase() || name[0].is_ascii_digit())
        && name
            .iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
}

/// A write or read on the store: after close, never a success.
pub(super) fn touches(code: i32, what: &str, closed: bool) {
    if closed {
        assert_ne!(code, TS_OK, "{what} succeeded on a closed store");
    }
}
