//! The calls on the other handles: counters, a rate limit, a quota and
//! once, and opening each of any name and options. Apart from the bucket's
//! calls because each kind has its own arguments and answers.

use std::ptr::{null, null_mut};

use super::TS_OK;
use super::call_args::{allowance, free_value, op, result};
use super::checks::{call, is_name, touches};
use super::input::Input;
use super::run::Handles;
use crate::{
    TS_OP_ADD, TS_OP_ALLOW, TS_OP_BEGIN, TS_OP_GET, TS_OP_MAX, TS_OP_PEEK, TS_OPEN_COUNTERS, TS_OPEN_ONCE,
    TS_OPEN_QUOTA, TS_OPEN_RATE_LIMIT, TsCall, TsOpen, ts_call, ts_claim_abandon, ts_claim_keep, ts_handle_free,
    ts_open,
};

/// A counter: add or max any amount.
pub(super) fn counters(h: &Handles, input: &mut Input, closed: bool) {
    let c = if input.u8().is_multiple_of(8) {
        null()
    } else {
        h.counters as *const _
    };
    let owners = input.owners();
    let key = input.key();
    let (n, max) = (input.i64(), input.bool());
    let c_op = match (input_is_get(n), max) {
        (true, _) => TS_OP_GET,
        (false, true) => TS_OP_MAX,
        (false, false) => TS_OP_ADD,
    };
    let mut got = result();
    let code = call(input, "counters_add", |err| unsafe {
        let (op_, ol, kp, kl) = (owners.as_ptr(), owners.len(), key.as_ptr(), key.len());
        let c_call = TsCall { n, ..op(c_op) };
        ts_call(
            c,
            null(),
            op_,
            ol,
            kp,
            kl,
            null(),
            0,
            &c_call,
            &mut got,
            null_mut(),
            err,
        )
    });
    touches(code, "counters", closed);
}

/// A rate limit's allow of any n, or a quota's use of any op.
pub(super) fn allow_or_use(h: &Handles, input: &mut Input, closed: bool) {
    let owners = input.owners();
    let key = input.key();
    let n = input.i64();
    let mut a = allowance();
    let quota_op = input.kind() - 1;
    let peek = input.bool();
    let on_limit = input.bool();
    // The quota's op is any of a range around its four, to be refused.
    let quota_op = quota_op + 12;
    let c = TsCall {
        uses: n,
        ..op(if on_limit {
            if peek { TS_OP_PEEK } else { TS_OP_ALLOW }
        } else {
            quota_op
        })
    };
    let code = call(input, "allow/use", |err| unsafe {
        let (op_, ol, kp, kl) = (owners.as_ptr(), owners.len(), key.as_ptr(), key.len());
        if on_limit {
            ts_call(h.limit, null(), op_, ol, kp, kl, null(), 0, &c, null_mut(), &mut a, err)
        } else {
            ts_call(h.quota, null(), op_, ol, kp, kl, null(), 0, &c, null_mut(), &mut a, err)
        }
    });
    if code == TS_OK {
        assert!(a.window_count <= 8);
        assert!(
            on_limit || (12..=15).contains(&quota_op),
            "quota_use accepted the op {quota_op}"
        );
    }
    touches(code, "allow/use", closed);
}

/// once: begin, then keep any value or abandon.
pub(super) fn once(h: &Handles, input: &mut Input, closed: bool) {
    let owners = input.owners();
    let key = input.key();
    let want = input.kind();
    let mut begun = result();
    let (op_, ol, kp, kl) = (owners.as_ptr(), owners.len(), key.as_ptr(), key.len());
    let code = call(input, "once_begin", |err| unsafe {
        let c = TsCall {
            want,
            ..op(TS_OP_BEGIN)
        };
        ts_call(
            h.once,
            null(),
            op_,
            ol,
            kp,
            kl,
            null(),
            0,
            &c,
            &mut begun,
            null_mut(),
            err,
        )
    });
    let claim = begun.claim;
    if code == TS_OK && begun.found {
        free_value(&begun.entry.value);
        assert!(claim.is_null(), "a kept answer with a claim");
    } else if code == TS_OK {
        assert!(!claim.is_null(), "no answer and no claim");
        if input.bool() {
            let (kind, integer) = (input.kind(), input.i64());
            let bytes = input.bytes();
            call(input, "claim_keep", |err| unsafe {
                ts_claim_keep(claim, kind, integer, bytes.as_ptr(), bytes.len(), err)
            });
        } else {
            unsafe { ts_claim_abandon(claim) };
        }
    }
    let mut got = result();
    let code2 = call(input, "once_get", |err| unsafe {
        let c = TsCall { want, ..op(TS_OP_GET) };
        ts_call(
            h.once,
            null(),
            op_,
            ol,
            kp,
            kl,
            null(),
            0,
            &c,
            &mut got,
            null_mut(),
            err,
        )
    });
    if code2 == TS_OK && got.found {
        free_value(&got.entry.value);
    }
    touches(code, "once_begin", closed);
}

/// Handles of the other kinds, of any name and options.
pub(super) fn open_other_handle(h: &Handles, input: &mut Input, closed: bool) {
    let name = input.bytes();
    let (a, b, c) = (input.i64(), input.bool(), input.i64());
    let which = input.u8() % 4;
    let how = match which {
        0 => TsOpen {
            kind: TS_OPEN_COUNTERS,
            ttl_ns: a,
            has_ttl: b,
            flush_every_ns: c,
            has_flush_every: input_is_get(c),
            ..TsOpen::default()
        },
        1 => TsOpen {
            kind: TS_OPEN_RATE_LIMIT,
            has_rate: true,
            count: a,
            per_ns: c,
            burst: a >> 1,
            has_burst: b,
            ..TsOpen::default()
        },
        2 => TsOpen {
            kind: TS_OPEN_QUOTA,
            ..TsOpen::default()
        },
        _ => TsOpen {
            kind: TS_OPEN_ONCE,
            keep_ns: a,
            has_keep: b,
            ..TsOpen::default()
        },
    };
    // A quota's windows: the name's bytes as their names, up to two limits and spans.
    let (limits, spans) = ([a, c], [c, a]);
    let (window_names, count) = if which == 2 {
        (name, (a as usize) % 3)
    } else {
        (&[][..], 0)
    };
    let quota_name: &[u8] = if which == 2 { b"q2" } else { name };
    let code = call(input, "open a handle", |err| unsafe {
        let mut out = null_mut();
        let (wn, l, s) = (window_names.as_ptr(), limits.as_ptr(), spans.as_ptr());
        let code = ts_open(
            h.store,
            quota_name.as_ptr(),
            quota_name.len(),
            &how,
            wn,
            window_names.len(),
            l,
            s,
            count,
            &mut out,
            err,
        );
        ts_handle_free(out);
        code
    });
    if code == TS_OK && which != 2 {
        assert!(is_name(name), "a handle opened with the name {name:?}");
    }
    touches(code, "open a handle", closed);
}

/// Whether an amount picks the read form of a call instead (an odd choice
/// taken from a value the input gave anyway).
pub(super) fn input_is_get(n: i64) -> bool {
    n & 0x100 != 0
}
