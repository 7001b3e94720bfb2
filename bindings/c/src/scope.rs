//! Where a call runs (KV-16): every operation of a bucket, counters, a
//! quota, a rate limit or a once takes a `const TsScope *scope`. Null runs
//! the call on the store itself; a scope from `ts_tx_begin` runs it inside
//! that transaction, on the caller's thread; one from `ts_view_open` runs it
//! in that read snapshot. The core's `tinystore::Scope` decides what each
//! call does in each (a view only reads buckets; a rate limit cannot join a
//! transaction); this file only turns the pointer into it.
//!
//! A transaction is driven call by call: a caller that cannot hand the core
//! a closure (Go) begins it, sends its calls one at a time, then commits or
//! rolls back. A call in a scope that has ended is `TS_CLOSED`.

use std::sync::mpsc;

use tinystore::{BlockingTx, Result, Scope, Snapshot};

use crate::store::{TsStore, store};
use crate::waits::{TsCancel, answer_or_give_up};
use crate::{TsError, guard, invalid, put};

/// An open transaction or read snapshot, the scope of the calls given it.
pub struct TsScope(Held);

enum Held {
    /// A transaction: its calls run inside one write of the store's writer,
    /// which runs nothing else until it ends (or after `tinystore::TX_LIMIT`,
    /// when it is rolled back).
    Tx(BlockingTx),
    /// A read snapshot: every read sees the file as it was at its first read.
    View(Snapshot),
}

/// The core's scope of `s`: on the store itself when it is null.
pub(crate) unsafe fn scope_of<'a>(s: *const TsScope) -> Scope<'a> {
    match unsafe { s.as_ref() } {
        None => Scope::Direct,
        Some(TsScope(Held::Tx(t))) => Scope::Tx(t),
        Some(TsScope(Held::View(v))) => Scope::View(v),
    }
}

unsafe fn tx<'a>(s: *const TsScope) -> Result<&'a BlockingTx> {
    match unsafe { s.as_ref() } {
        Some(TsScope(Held::Tx(t))) => Ok(t),
        Some(TsScope(Held::View(_))) => Err(invalid("a view is not a transaction")),
        None => Err(invalid("a null transaction")),
    }
}

/// Begins a transaction, waiting for the writer's turn; a fired `cancel`
/// gives up on it before it starts (`TS_CANCELLED`). Its scope goes to
/// `out`; end it with `ts_tx_commit` or `ts_tx_rollback`, then free it with
/// `ts_scope_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_begin(
    s: *const TsStore,
    cancel: *const TsCancel,
    out: *mut *mut TsScope,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let st = unsafe { store(s) }?;
        if out.is_null() {
            return Err(invalid("a null out pointer"));
        }
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        // A fired cancel ends the wait at once, even while another
        // transaction holds the writer: a `BindingTx` that still arrives is
        // dropped on the writer thread, which rolls it back.
        let binding = answer_or_give_up(
            cancel,
            |ready| {
                st.transaction_then(ready, move |r| {
                    let _ = done_tx.send(r);
                })
            },
            |ticket| {
                ticket.cancel();
                tinystore::cancelled_before_start()
            },
        )?;
        put(out, TsScope(Held::Tx(BlockingTx::new(binding, Some(done_rx)))))
    })
}

/// Commits the transaction and waits until it is durable. A failed group
/// commit is `TS_OUTCOME_UNKNOWN`; a transaction held past the core's limit
/// was rolled back (`TS_LIMIT`); one that has ended is `TS_CLOSED`; a view
/// is `TS_INVALID`. When `cancel` (which may be null) has fired, it rolls
/// back instead, writing nothing, and is `TS_CANCELLED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_commit(t: *const TsScope, cancel: *const TsCancel, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let cancel = unsafe { cancel.as_ref() }.map(|c| &*c.0);
        unsafe { tx(t) }?.commit_wait_unless(cancel)
    })
}

/// Rolls the transaction back, writing nothing of it, and waits until the
/// writer has let go of it. Nothing happens to a transaction that has ended,
/// nor to a view or null.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_rollback(t: *const TsScope) {
    if let Ok(t) = unsafe { tx(t) } {
        t.rollback_wait();
    }
}

/// Marks the calling thread as the transaction's until it ends (commit,
/// rollback or free): a call from this thread that would wait for the
/// writer of the same store outside the transaction (a write with a null
/// scope, a run of once, another transaction) is then `TS_INVALID` at once,
/// nothing written, rather than a wait the transaction's own thread would
/// end only at `tinystore::TX_LIMIT`. Only for a caller that makes the
/// transaction's calls on this thread (Go locks the goroutine to it); a
/// view, null or an ended transaction marks nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_hold_thread(t: *const TsScope) {
    if let Ok(t) = unsafe { tx(t) } {
        t.hold_thread();
    }
}

/// Opens a read snapshot of the store. Its scope goes to `out`; close it
/// soon with `ts_view_close` (the file keeps every page it may still read),
/// then free it with `ts_scope_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_view_open(s: *const TsStore, out: *mut *mut TsScope, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let snap = unsafe { store(s) }?.snapshot()?;
        put(out, TsScope(Held::View(snap)))
    })
}

/// Ends the view; a read in it after this is `TS_CLOSED`. Nothing happens
/// to a transaction or null.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_view_close(v: *const TsScope) {
    if let Some(TsScope(Held::View(v))) = unsafe { v.as_ref() } {
        v.close();
    }
}

/// Ends a scope, as `ts_tx_rollback` or `ts_view_close` does, and frees it.
/// Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_scope_free(s: *mut TsScope) {
    if s.is_null() {
        return;
    }
    match *unsafe { Box::from_raw(s) } {
        TsScope(Held::Tx(t)) => t.rollback_wait(),
        TsScope(Held::View(v)) => v.close(),
    }
}
