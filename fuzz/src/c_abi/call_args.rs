//! What a call is given besides the input's values: a pointer that may be
//! null with a length, and empty out structs (value, entry, allowance) with
//! the free of the bytes a value hands back. Apart so that the calls read as
//! the ABI's arguments, not their setup.

use std::ptr::{null, null_mut};

use crate::{TsAllowance, TsCall, TsEntry, TsError, TsHandle, TsResult, TsScope, TsValue, ts_bytes_free, ts_call};

/// A pointer to `b` and its length; sometimes null with a length, which the
/// ABI reads as empty.
pub(super) fn ptr(b: &[u8], null_it: bool) -> (*const u8, usize) {
    if null_it {
        (null(), b.len())
    } else {
        (b.as_ptr(), b.len())
    }
}

/// Frees the bytes a value handed out.
pub(super) fn free_value(v: &TsValue) {
    unsafe { ts_bytes_free(v.bytes, v.len) };
}

pub(super) fn value() -> TsValue {
    TsValue {
        kind: 0,
        integer: 0,
        bytes: null_mut(),
        len: 0,
    }
}

pub(super) fn entry() -> TsEntry {
    TsEntry {
        value: value(),
        version: 0,
        has_expiry: false,
        expires_ms: 0,
        key: null(),
        key_len: 0,
    }
}

pub(super) fn allowance() -> TsAllowance {
    // SAFETY: plain integers, bools and byte arrays, for which zero is valid.
    unsafe { std::mem::zeroed() }
}

pub(super) fn result() -> TsResult {
    // SAFETY: integers, bools and pointers, for which zero (null) is valid.
    unsafe { std::mem::zeroed() }
}

/// A call of `op`, its other fields zero: no value, options, check, caller
/// or cancel.
pub(super) fn op(op: i32) -> TsCall {
    // SAFETY: integers, bools, pointers and an `Option` of a function
    // pointer, for which zero (null, `None`) is valid.
    TsCall {
        op,
        ..unsafe { std::mem::zeroed() }
    }
}

/// A get of `key` (no owners) of `b` in `scope`, as `want`.
pub(super) unsafe fn get(
    b: *const TsHandle,
    scope: *const TsScope,
    key: &[u8],
    want: i32,
    out: *mut TsResult,
    err: *mut *mut TsError,
) -> i32 {
    let c = TsCall {
        want,
        ..op(crate::TS_OP_GET)
    };
    unsafe {
        ts_call(
            b,
            scope,
            null(),
            0,
            key.as_ptr(),
            key.len(),
            null(),
            0,
            &c,
            out,
            null_mut(),
            err,
        )
    }
}

/// A set of `key` (no owners) of `b` in `scope` to the value of `kind`,
/// `integer` and `bytes`.
pub(super) unsafe fn set(
    b: *const TsHandle,
    scope: *const TsScope,
    key: &[u8],
    (kind, integer, bytes): (i32, i64, &[u8]),
    out: *mut TsResult,
    err: *mut *mut TsError,
) -> i32 {
    let c = TsCall {
        kind,
        integer,
        ..op(crate::TS_OP_SET)
    };
    let (kp, kl, vp, vl) = (key.as_ptr(), key.len(), bytes.as_ptr(), bytes.len());
    unsafe { ts_call(b, scope, null(), 0, kp, kl, vp, vl, &c, out, null_mut(), err) }
}
