//! Transactions and read snapshots (KV-16), driven call by call: a caller
//! that cannot hand the core a closure (Go) begins a transaction, sends its
//! bucket calls one at a time, then commits or rolls back.
//!
//! Every call takes the bucket and owners as the bucket calls do. A call on
//! a transaction or snapshot that has ended is `TS_CLOSED`.

use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver};

use tinystore::{Created, Error, ErrorKind, Result, Scope, Snapshot, TxSession, WriteCall};

use crate::bucket::{
    TsBucket, TsCheckFn, TsEntry, TsPage, TsWriteOptions, decodes_as, expire_options, fill, invalid, named, set_flag,
    under, write_options,
};
use crate::scope::{get_in, list_in};
use crate::store::{TsStore, store};
use crate::value::{raw_in, value_out};
use crate::{TsCancel, TsError, bytes, guard};

/// An open transaction: its calls run inside one write of the store's
/// writer, which runs nothing else until it ends (or after
/// `tinystore::TX_LIMIT`, when it is rolled back).
pub struct TsTx {
    pub(crate) session: TxSession,
    done: Mutex<Option<Receiver<Result<()>>>>,
}

/// An open read snapshot: every read sees the file as it was at its first read.
pub struct TsSnapshot(Snapshot);

impl TsTx {
    /// The core's scope of this transaction's calls.
    pub(crate) fn scope(&self) -> Scope<'_> {
        Scope::Tx(&self.session)
    }
}

fn ended() -> Error {
    Error::new(ErrorKind::Closed, "the transaction has ended")
}

pub(crate) unsafe fn tx<'a>(t: *const TsTx) -> Result<&'a TsTx> {
    unsafe { t.as_ref() }.ok_or_else(|| invalid("a null transaction"))
}

unsafe fn snapshot<'a>(s: *const TsSnapshot) -> Result<&'a Snapshot> {
    unsafe { s.as_ref() }
        .map(|s| &s.0)
        .ok_or_else(|| invalid("a null snapshot"))
}

/// Begins a transaction, waiting for the writer's turn; a fired `cancel`
/// gives up on it before it starts (`TS_CANCELLED`). The handle goes to
/// `out`; end it with `ts_tx_commit` or `ts_tx_rollback`, then free it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_begin(
    s: *const TsStore,
    cancel: *const TsCancel,
    out: *mut *mut TsTx,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let st = unsafe { store(s) }?;
        if out.is_null() {
            return Err(invalid("a null out pointer"));
        }
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let gave_up = ready_tx.clone();
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        let ticket = st.transaction_then(
            move |r| {
                // After the caller gave up, the session is dropped here, on
                // the writer thread, which rolls it back: nothing is written.
                let _ = ready_tx.try_send(r);
            },
            move |r| {
                let _ = done_tx.send(r);
            },
        )?;
        if let Some(c) = unsafe { cancel.as_ref() } {
            // The wait ends at once, even while another transaction holds
            // the writer: a session that still arrives is rolled back.
            c.on_fire(move || {
                ticket.cancel();
                let _ = gave_up.try_send(Err(Error::new(
                    ErrorKind::Cancelled,
                    "gave up waiting for the writer; nothing was written",
                )));
            });
        }
        let session = ready_rx.recv().map_err(|_| ended())??;
        unsafe {
            *out = Box::into_raw(Box::new(TsTx {
                session,
                done: Mutex::new(Some(done_rx)),
            }))
        };
        Ok(())
    })
}

/// Commits the transaction and waits until it is durable. A failed group
/// commit is `TS_OUTCOME_UNKNOWN`; a transaction held past the core's limit
/// was rolled back (`TS_LIMIT`); one that has ended is `TS_CLOSED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_commit(t: *const TsTx, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let done = t
            .done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(ended)?;
        // A commit that cannot reach the writer (the transaction timed out)
        // still has its answer on `done`, which says why.
        let sent = t.session.commit();
        done.recv().map_err(|_| ended())??;
        sent
    })
}

/// Rolls the transaction back, writing nothing of it, and waits until the
/// writer has let go of it. Nothing happens to a transaction that has ended.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_rollback(t: *const TsTx) {
    let Some(t) = (unsafe { t.as_ref() }) else { return };
    let done = t.done.lock().unwrap_or_else(|p| p.into_inner()).take();
    let _ = t.session.rollback();
    if let Some(done) = done {
        let _ = done.recv();
    }
}

/// Marks the calling thread as the transaction's until it ends (commit,
/// rollback or free): a call from this thread that would wait for the
/// writer of the same store outside the transaction (a bucket's or counter's
/// write, a run of once, another transaction) is then `TS_INVALID` at once,
/// nothing written, rather than a wait the transaction's own thread would
/// end only at `tinystore::TX_LIMIT`. Only for a caller that makes the
/// transaction's calls on this thread (Go locks the goroutine to it); a null
/// or ended transaction marks nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_hold_thread(t: *const TsTx) {
    if let Some(t) = unsafe { t.as_ref() } {
        t.session.hold_thread();
    }
}

/// Frees a transaction; one not ended is rolled back. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_free(t: *mut TsTx) {
    if !t.is_null() {
        drop(unsafe { Box::from_raw(t) });
    }
}

/// Reads a live key as the transaction sees it, as `ts_bucket_get` does
/// (renewing nothing).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_get(
    t: *const TsTx,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    want: i32,
    out: *mut TsEntry,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        unsafe { get_in(t.scope(), b, owners, owners_len, key, key_len, want, out, found) }
    })
}

/// Writes a value inside the transaction, as `ts_bucket_set` does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_set(
    t: *const TsTx,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    kind: i32,
    integer: i64,
    value: *const u8,
    value_len: usize,
    options: *const TsWriteOptions,
    version: *mut i64,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let rb = unsafe { under(b, owners, owners_len) }?;
        let key = unsafe { bytes(key, key_len) };
        let raw = unsafe { raw_in(kind, integer, value, value_len) }.map_err(|e| named(&rb, key, e))?;
        let opts = write_options(options, WriteCall::Set).map_err(|e| named(&rb, key, e))?;
        let v = t.scope().set(&rb, key, raw, opts).map_err(|e| named(&rb, key, e))?;
        if let Some(out) = unsafe { version.as_mut() } {
            *out = v.get();
        }
        Ok(())
    })
}

/// Writes a value only if the key is absent, inside the transaction, as
/// `ts_bucket_create` does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_create(
    t: *const TsTx,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    kind: i32,
    integer: i64,
    value: *const u8,
    value_len: usize,
    options: *const TsWriteOptions,
    want: i32,
    written: *mut bool,
    version: *mut i64,
    found: *mut TsEntry,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let rb = unsafe { under(b, owners, owners_len) }?;
        let key = unsafe { bytes(key, key_len) };
        let raw = unsafe { raw_in(kind, integer, value, value_len) }.map_err(|e| named(&rb, key, e))?;
        let opts = write_options(options, WriteCall::Create).map_err(|e| named(&rb, key, e))?;
        match t
            .scope()
            .create(&rb, key, raw, opts.expiry)
            .map_err(|e| named(&rb, key, e))?
        {
            Created::Written(v) => {
                set_flag(written, true);
                if let Some(out) = unsafe { version.as_mut() } {
                    *out = v.get();
                }
            }
            Created::Found(e) => {
                set_flag(written, false);
                let v = value_out(&e.value, want).map_err(|x| named(&rb, key, x))?;
                fill(found, &e, v);
            }
        }
        Ok(())
    })
}

/// Reads and deletes a key inside the transaction, as `ts_bucket_take`
/// does: a row of another kind than `want`, or a non-zero `check` (called
/// on the caller's thread), is `TS_CORRUPT` and the value stays (the
/// core's `Scope::take` holds that rule for every binding).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_take(
    t: *const TsTx,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    options: *const TsWriteOptions,
    want: i32,
    check: TsCheckFn,
    check_ctx: u64,
    out: *mut TsEntry,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let rb = unsafe { under(b, owners, owners_len) }?;
        let key = unsafe { bytes(key, key_len) };
        let opts = write_options(options, WriteCall::Take).map_err(|e| named(&rb, key, e))?;
        set_flag(found, false);
        let taken = t
            .scope()
            .take(&rb, key, opts.if_version, decodes_as(want, check, check_ctx))
            .map_err(|x| named(&rb, key, x))?;
        if let Some(e) = taken {
            let v = value_out(&e.value, want).map_err(|x| named(&rb, key, x))?;
            fill(out, &e, v);
            set_flag(found, true);
        }
        Ok(())
    })
}

/// Deletes a key inside the transaction, as `ts_bucket_delete` does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_delete(
    t: *const TsTx,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    options: *const TsWriteOptions,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let rb = unsafe { under(b, owners, owners_len) }?;
        let key = unsafe { bytes(key, key_len) };
        let opts = write_options(options, WriteCall::Delete).map_err(|e| named(&rb, key, e))?;
        let was = t
            .scope()
            .delete(&rb, key, opts.if_version)
            .map_err(|x| named(&rb, key, x))?;
        set_flag(found, was);
        Ok(())
    })
}

/// Gives a live key the options' expiry inside the transaction, as
/// `ts_bucket_expire` does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_expire(
    t: *const TsTx,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    options: *const TsWriteOptions,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let rb = unsafe { under(b, owners, owners_len) }?;
        let key = unsafe { bytes(key, key_len) };
        let (expiry, if_version) = expire_options(options).map_err(|e| named(&rb, key, e))?;
        let was = t
            .scope()
            .expire(&rb, key, expiry, if_version)
            .map_err(|x| named(&rb, key, x))?;
        set_flag(found, was);
        Ok(())
    })
}

/// Clears the branch of `owners` inside the transaction (at most 10,000
/// keys, else `TS_LIMIT`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_clear(
    t: *const TsTx,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let rb = unsafe { under(b, owners, owners_len) }?;
        t.scope().clear(&rb)
    })
}

/// Lists a page of the branch as the transaction sees it, as
/// `ts_bucket_list` does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_list(
    t: *const TsTx,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    after: *const u8,
    after_len: usize,
    has_after: bool,
    limit: u32,
    want: i32,
    out: *mut *mut TsPage,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        unsafe {
            list_in(
                t.scope(),
                b,
                owners,
                owners_len,
                after,
                after_len,
                has_after,
                limit,
                want,
                out,
            )
        }
    })
}

/// Opens a read snapshot of the store. The handle goes to `out`; close it
/// soon (the file keeps every page it may still read), then free it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_snapshot_open(s: *const TsStore, out: *mut *mut TsSnapshot, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let snap = unsafe { store(s) }?.snapshot()?;
        if out.is_null() {
            return Err(invalid("a null out pointer"));
        }
        unsafe { *out = Box::into_raw(Box::new(TsSnapshot(snap))) };
        Ok(())
    })
}

/// Reads a live key in the snapshot, as `ts_bucket_get` does (renewing nothing).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_snapshot_get(
    s: *const TsSnapshot,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    want: i32,
    out: *mut TsEntry,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let snap = unsafe { snapshot(s) }?;
        unsafe { get_in(Scope::View(snap), b, owners, owners_len, key, key_len, want, out, found) }
    })
}

/// Lists a page of the branch in the snapshot, as `ts_bucket_list` does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_snapshot_list(
    s: *const TsSnapshot,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    after: *const u8,
    after_len: usize,
    has_after: bool,
    limit: u32,
    want: i32,
    out: *mut *mut TsPage,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let snap = unsafe { snapshot(s) }?;
        unsafe {
            list_in(
                Scope::View(snap),
                b,
                owners,
                owners_len,
                after,
                after_len,
                has_after,
                limit,
                want,
                out,
            )
        }
    })
}

/// Ends the snapshot; a read after this is `TS_CLOSED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_snapshot_close(s: *const TsSnapshot) {
    if let Some(s) = unsafe { s.as_ref() } {
        s.0.close();
    }
}

/// Frees a snapshot, closing it if needed. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_snapshot_free(s: *mut TsSnapshot) {
    if !s.is_null() {
        drop(unsafe { Box::from_raw(s) });
    }
}

/// A TEST HOOK, not for applications: makes the next group commit of the
/// store fail as a failed fsync would, so that a test sees every write of
/// that group answered `TS_OUTCOME_UNKNOWN`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_fail_next_commit_for_tests(s: *const TsStore, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        unsafe { store(s) }?.fail_next_commit_for_tests();
        Ok(())
    })
}
