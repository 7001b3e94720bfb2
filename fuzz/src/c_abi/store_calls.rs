//! The calls on the store itself: a transaction, a snapshot, the test
//! clock, maintenance and close. Apart because they end or change what the
//! other calls act on (a transaction or snapshot after its end, a clock set
//! back, every handle after close).

use std::ptr::{null, null_mut};

use super::call_args::{get, set};
use super::checks::{call, call_get, touches};
use super::input::Input;
use super::run::Handles;
use super::{START_MS, TS_CLOSED, TS_INVALID, TS_OK};
use crate::{
    TsMaintenance, ts_scope_free, ts_store_close, ts_store_maintain, ts_store_set_clock, ts_tx_begin, ts_tx_commit,
    ts_tx_hold_thread, ts_tx_rollback, ts_view_close, ts_view_open,
};

/// A transaction: a set and a get, commit or roll back, then a call after its end.
pub(super) fn transaction(h: &Handles, input: &mut Input, closed: bool) {
    let mut tx = null_mut();
    let code = call(input, "tx_begin", |err| unsafe {
        ts_tx_begin(h.store, null(), &mut tx, err)
    });
    touches(code, "tx_begin", closed);
    if code != TS_OK {
        return;
    }
    let b = h.bucket(input);
    if input.bool() {
        // The transaction's thread, marked, is refused a write outside
        // it and a transaction inside it at once: each would wait for
        // the writer this transaction holds, until its limit.
        unsafe { ts_tx_hold_thread(tx) };
        let code = call(input, "set outside a held transaction", |err| unsafe {
            set(b, null(), b"k", (3, 0, b"v"), null_mut(), err)
        });
        assert_eq!(code, TS_INVALID, "a write outside a held transaction was not refused");
        let mut inner = null_mut();
        let code = call(input, "tx_begin inside a held transaction", |err| unsafe {
            ts_tx_begin(h.store, null(), &mut inner, err)
        });
        assert_eq!(code, TS_INVALID, "a transaction inside a held one was not refused");
    }
    let key = input.key();
    let (kind, integer) = (input.kind(), input.i64());
    call(input, "tx_set", |err| unsafe {
        set(b, tx, &key, (kind, integer, &key), null_mut(), err)
    });
    let want = input.kind();
    call_get(input, "tx_get", |out, err| unsafe { get(b, tx, &key, want, out, err) });
    if input.bool() {
        call(input, "tx_commit", |err| unsafe {
            ts_tx_commit(tx, std::ptr::null(), err)
        });
    } else {
        unsafe { ts_tx_rollback(tx) };
    }
    let code = call_get(input, "tx_get after the end", |out, err| unsafe {
        get(b, tx, b"k", 3, out, err)
    });
    assert_ne!(code, TS_OK, "a call on an ended transaction succeeded");
    unsafe { ts_tx_rollback(tx) };
    unsafe { ts_scope_free(tx) };
}

/// A snapshot: a read, then a read after it is closed.
pub(super) fn snapshot(h: &Handles, input: &mut Input, closed: bool) {
    let mut snap = null_mut();
    let code = call(input, "snapshot_open", |err| unsafe {
        ts_view_open(h.store, &mut snap, err)
    });
    touches(code, "snapshot_open", closed);
    if code != TS_OK {
        return;
    }
    let b = h.bucket(input);
    let key = input.key();
    let want = input.kind();
    call_get(input, "snapshot_get", |out, err| unsafe {
        get(b, snap, &key, want, out, err)
    });
    unsafe { ts_view_close(snap) };
    let code = call_get(input, "snapshot_get after close", |out, err| unsafe {
        get(h.bucket, snap, b"k", 3, out, err)
    });
    assert_ne!(code, TS_OK, "a read on a closed snapshot succeeded");
    unsafe { ts_scope_free(snap) };
}

/// The test clock set anywhere, back included.
pub(super) fn set_clock(h: &Handles, input: &mut Input) {
    let ms = input.i64();
    let code = call(input, "set_clock", |err| unsafe {
        ts_store_set_clock(h.store, ms, false, err)
    });
    if code == TS_OK {
        assert!(ms >= START_MS, "the clock was set back to {ms}");
    }
}

/// The store's maintenance, with its out struct or a null one.
pub(super) fn maintain(h: &Handles, input: &mut Input, closed: bool) {
    let mut m = TsMaintenance {
        flushed: 0,
        renewed: 0,
        cleared: 0,
        expired: 0,
        more: false,
    };
    let out = if input.bool() { &mut m as *mut _ } else { null_mut() };
    let code = call(input, "maintain", |err| unsafe { ts_store_maintain(h.store, out, err) });
    touches(code, "maintain", closed);
}

/// The store closed under its handles: every later call is refused.
pub(super) fn close(h: &mut Handles, input: &mut Input) {
    let code = call(input, "close", |err| unsafe { ts_store_close(h.store, err) });
    assert!(code == TS_OK || code == TS_CLOSED || h.closed);
    h.closed = true;
}
