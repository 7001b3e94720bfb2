//! The calls on a bucket: open one of any name and spans, set, get, take,
//! has, delete, expire, clear, create, and list a page. Apart because a
//! bucket's calls are most of the ABI.

use std::ptr::{null, null_mut};

use super::TS_OK;
use super::call_args::{entry, free_value, get, op, ptr, result};
use super::checks::{call, call_get, is_name, touches};
use super::input::Input;
use super::run::Handles;
use crate::{
    TS_OP_CLEAR, TS_OP_CREATE, TS_OP_DELETE, TS_OP_EXPIRE, TS_OP_GET, TS_OP_HAS, TS_OP_LIST, TS_OP_SET, TS_OP_TAKE,
    TS_OPEN_BUCKET, TsCall, TsOpen, TsWriteOptions, ts_call, ts_cancel_fire, ts_cancel_free, ts_cancel_new,
    ts_handle_free, ts_open, ts_page_entry, ts_page_free, ts_page_len, ts_page_next,
};

/// Opening a bucket of any name, ttl and idle.
pub(super) fn bucket_open(h: &Handles, input: &mut Input, closed: bool) {
    let name = input.bytes();
    let (np, nl) = ptr(name, input.u8().is_multiple_of(16));
    let (ttl, has_ttl, idle, has_idle) = (input.i64(), input.bool(), input.i64(), input.bool());
    let mut b = null_mut();
    let out = if input.u8().is_multiple_of(8) {
        null_mut()
    } else {
        &mut b as *mut _
    };
    let code = call(input, "bucket_open", |err| unsafe {
        let how = TsOpen {
            kind: TS_OPEN_BUCKET,
            has_ttl,
            ttl_ns: ttl,
            has_idle,
            idle_ns: idle,
            ..TsOpen::default()
        };
        ts_open(h.store, np, nl, &how, null(), 0, null(), null(), 0, out, err)
    });
    if code == TS_OK {
        let name = if np.is_null() { &[][..] } else { name };
        assert!(is_name(name), "bucket_open accepted the name {name:?}");
        assert!(
            (!has_ttl || ttl > 0) && (!has_idle || idle > 0),
            "a span not above 0 was accepted"
        );
        assert!(!(has_ttl && has_idle), "ttl and idle were both accepted");
    }
    touches(code, "bucket_open", closed);
    unsafe { ts_handle_free(b) };
}

/// A set of any kind, value, options and cancel.
pub(super) fn set(h: &Handles, input: &mut Input, closed: bool) {
    let b = h.bucket(input);
    let owners = input.owners();
    let key = input.key();
    let (kind, integer) = (input.kind(), input.i64());
    let v = input.bytes();
    let (vp, vl) = ptr(v, input.u8().is_multiple_of(16));
    let opts = TsWriteOptions {
        has_ttl: input.bool(),
        ttl_ns: input.i64(),
        has_at: input.bool(),
        at_ms: input.i64(),
        has_if_version: input.bool(),
        if_version: input.i64(),
    };
    let opts = if input.bool() {
        opts
    } else {
        TsWriteOptions {
            has_ttl: false,
            has_at: false,
            has_if_version: false,
            ..opts
        }
    };
    let cancel = if input.u8().is_multiple_of(8) {
        ts_cancel_new()
    } else {
        null_mut()
    };
    if !cancel.is_null() && input.bool() {
        unsafe { ts_cancel_fire(cancel) };
    }
    let c = TsCall {
        kind,
        integer,
        options: opts,
        cancel,
        ..op(TS_OP_SET)
    };
    let mut out = result();
    let code = call(input, "set", |err| unsafe {
        let (op_, ol, kp, kl) = (owners.as_ptr(), owners.len(), key.as_ptr(), key.len());
        ts_call(b, null(), op_, ol, kp, kl, vp, vl, &c, &mut out, null_mut(), err)
    });
    let version = out.number;
    unsafe { ts_cancel_free(cancel) };
    if code == TS_OK {
        assert!(
            !b.is_null() && !key.is_empty(),
            "set accepted a null bucket or an empty key"
        );
        assert!((0..=8).contains(&kind), "set accepted the value kind {kind}");
        assert!(
            kind != 4 || integer == 0 || integer == 1,
            "set accepted the bool {integer}"
        );
        assert!(version > 0, "set answered version {version}");
    }
    touches(code, "set", closed);
}

/// get, or take, as any kind.
pub(super) fn get_or_take(h: &Handles, input: &mut Input, closed: bool, which: u8) {
    let b = h.bucket(input);
    let owners = input.owners();
    let key = input.key();
    let want = input.kind();
    let mut r = result();
    let take = which == 3;
    let c = TsCall {
        want,
        ..op(if take { TS_OP_TAKE } else { TS_OP_GET })
    };
    let code = call(input, if take { "take" } else { "get" }, |err| unsafe {
        let (op_, ol, kp, kl) = (owners.as_ptr(), owners.len(), key.as_ptr(), key.len());
        ts_call(b, null(), op_, ol, kp, kl, null(), 0, &c, &mut r, null_mut(), err)
    });
    let (found, out) = (r.found, &r.entry);
    if code == TS_OK && found {
        assert!((0..=9).contains(&want), "read as the kind {want}");
        assert!(
            want == 9 || out.value.kind == want,
            "asked for {want}, got {}",
            out.value.kind
        );
        assert!(out.version > 0);
        free_value(&out.value);
    }
    touches(code, "get", closed);
}

/// has, delete, expire, clear, create.
pub(super) fn has_delete_expire_clear_create(h: &Handles, input: &mut Input, closed: bool) {
    let b = h.bucket(input);
    let owners = input.owners();
    let key = input.key();
    let which = input.u8() % 5;
    let opts = TsWriteOptions {
        has_ttl: input.bool(),
        ttl_ns: input.i64(),
        has_at: input.bool(),
        at_ms: input.i64(),
        has_if_version: input.bool(),
        if_version: input.i64(),
    };
    let kind = input.kind();
    let want = input.kind();
    let c = TsCall {
        kind,
        integer: 7,
        options: opts,
        want,
        ..op([TS_OP_HAS, TS_OP_DELETE, TS_OP_EXPIRE, TS_OP_CLEAR, TS_OP_CREATE][which as usize])
    };
    let mut out = result();
    let code = call(input, "has/delete/expire/clear/create", |err| unsafe {
        let (op_, ol, kp, kl) = (owners.as_ptr(), owners.len(), key.as_ptr(), key.len());
        // A create's value is its key's bytes.
        ts_call(b, null(), op_, ol, kp, kl, kp, kl, &c, &mut out, null_mut(), err)
    });
    if code == TS_OK && which == 4 && !out.found {
        free_value(&out.entry.value);
    }
    touches(code, "has/delete/expire/clear/create", closed);
}

/// A page, read at any index, then freed.
pub(super) fn list(h: &Handles, input: &mut Input, closed: bool) {
    let b = h.bucket(input);
    let owners = input.owners();
    let after = input.key();
    let has_after = input.bool();
    let limit = match input.u8() % 5 {
        0 => 0,
        1 => 1001,
        2 => i64::from(u32::MAX),
        3 => -1 - i64::from(input.u8()),
        _ => i64::from(input.u8()),
    };
    let want = input.kind();
    let c = TsCall {
        has_after,
        limit,
        want,
        ..op(TS_OP_LIST)
    };
    let mut out = result();
    let code = call(input, "list", |err| unsafe {
        let (op_, ol, kp, kl) = (owners.as_ptr(), owners.len(), after.as_ptr(), after.len());
        ts_call(b, null(), op_, ol, kp, kl, null(), 0, &c, &mut out, null_mut(), err)
    });
    let page = out.page;
    if code == TS_OK {
        assert!(
            (1..=1000).contains(&limit) || limit == 0,
            "list accepted a page of {limit}"
        );
        let n = unsafe { ts_page_len(page) };
        for i in [0, n.saturating_sub(1), n, n + 1, usize::MAX] {
            let mut e = entry();
            let there = unsafe { ts_page_entry(page, i, &mut e) };
            assert_eq!(there, i < n, "entry {i} of a page of {n}");
        }
        let (mut k, mut kl) = (null(), 0usize);
        unsafe { ts_page_next(page, &mut k, &mut kl) };
        unsafe { ts_page_next(page, null_mut(), null_mut()) };
    }
    unsafe { ts_page_free(page) };
    touches(code, "list", closed);
}

/// A get of what earlier calls wrote, as every kind.
pub(super) fn get_as_each_kind(h: &Handles, input: &mut Input, closed: bool) {
    let key = input.key();
    for want in 0..=9 {
        let code = call_get(input, "get as each kind", |out, err| unsafe {
            get(h.bucket, null(), &key, want, out, err)
        });
        touches(code, "get as each kind", closed);
    }
}
