//! The calls that need no live handle: the duration and rate parsers, an
//! error the caller builds, and null handles given to every kind of call.
//! Apart because they hold no state of the run.

use std::ptr::{null, null_mut};

use super::call_args::{allowance, get, op, ptr, result};
use super::checks::call;
use super::input::Input;
use super::{TS_INVALID, TS_OK};
use crate::{
    TS_OP_ALLOW, TsCall, ts_bytes_free, ts_call, ts_cancel_fire, ts_claim_abandon, ts_claim_keep, ts_error_free,
    ts_error_new, ts_error_view, ts_handle_free, ts_page_free, ts_parse_duration, ts_parse_rate, ts_store_maintain,
};

/// Durations and rates of any bytes.
pub(super) fn parse_duration_and_rate(input: &mut Input) {
    let text = input.bytes();
    let (tp, tl) = ptr(text, input.u8().is_multiple_of(16));
    let mut ns = 0i64;
    let code = call(input, "parse_duration", |err| unsafe {
        ts_parse_duration(tp, tl, &mut ns, err)
    });
    if code == TS_OK {
        assert!(ns >= 0, "a duration of {ns} ns");
    }
    let (mut count, mut per) = (0u64, 0i64);
    let code = call(input, "parse_rate", |err| unsafe {
        ts_parse_rate(tp, tl, &mut count, &mut per, err)
    });
    if code == TS_OK {
        assert!(count > 0 && per > 0, "a rate of {count} per {per} ns");
    }
}

/// An error the caller builds, of any code.
pub(super) fn key_error(input: &mut Input) {
    let name = input.bytes();
    let owners = input.owners();
    let key = input.key();
    let code_in = input.kind() - 1;
    let message = input.bytes();
    let code = call(input, "key_error", |err| unsafe {
        ts_error_new(
            name.as_ptr(),
            name.len(),
            owners.as_ptr(),
            owners.len(),
            key.as_ptr(),
            key.len(),
            code_in,
            message.as_ptr(),
            message.len(),
            err,
        )
    });
    assert_ne!(code, TS_OK, "key_error succeeded");
    if (1..=8).contains(&code_in) && std::str::from_utf8(name).is_ok() && code != TS_INVALID {
        assert_eq!(code, code_in, "key_error answered another code");
    }
}

/// Null handles everywhere: each call is Invalid (or Closed), never a crash.
pub(super) fn null_handles(input: &mut Input) {
    let mut out = result();
    let code = call(input, "get on a null bucket", |err| unsafe {
        get(null(), null(), b"k", 3, &mut out, err)
    });
    assert_eq!(code, TS_INVALID);
    let code = call(input, "maintain a null store", |err| unsafe {
        ts_store_maintain(null(), null_mut(), err)
    });
    assert_eq!(code, TS_INVALID);
    let mut a = allowance();
    let code = call(input, "allow on a null limit", |err| unsafe {
        let c = TsCall {
            uses: 1,
            ..op(TS_OP_ALLOW)
        };
        ts_call(
            null(),
            null(),
            null(),
            0,
            b"k".as_ptr(),
            1,
            null(),
            0,
            &c,
            null_mut(),
            &mut a,
            err,
        )
    });
    assert_eq!(code, TS_INVALID);
    let code = call(input, "keep a null claim", |err| unsafe {
        ts_claim_keep(null_mut(), 3, 0, null(), 0, err)
    });
    assert_eq!(code, TS_INVALID);
    unsafe {
        ts_handle_free(null_mut());
        ts_page_free(null_mut());
        ts_claim_abandon(null_mut());
        ts_error_free(null_mut());
        ts_bytes_free(null_mut(), 5);
        ts_cancel_fire(null());
        ts_error_view(null(), null_mut());
    }
}
