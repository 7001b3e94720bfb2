//! What a call is given besides the input's values: a pointer that may be
//! null with a length, and empty out structs (value, entry, allowance) with
//! the free of the bytes a value hands back. Apart so that the calls read as
//! the ABI's arguments, not their setup.

use std::ptr::{null, null_mut};

use crate::{TsAllowance, TsEntry, TsValue, ts_bytes_free};

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
