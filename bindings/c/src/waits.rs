//! Waiting for a write on the store: the caller's thread blocks until the
//! writer answers, and a `TsCancel` fired from another thread gives up on
//! the write before its group starts.
//!
//! A thread that holds a transaction (`ts_tx_hold_thread`) would wait for
//! itself: while the transaction holds the store's one writer, a write to
//! that store from outside it waits until the transaction's limit
//! (`tinystore::TX_LIMIT`) rolls it back. The core refuses such a write
//! (`TS_INVALID` at once, nothing written) with its one message; the mark
//! is opt-in because only a caller that keeps the transaction's work on one
//! thread may use it (Go's `Store.Tx` locks its goroutine to its OS thread).

use std::sync::{Arc, mpsc};

use tinystore::{CallerContext, Cancel, Error, Result, Store, Ticket};

/// A way for one thread to give up on a call another thread is waiting
/// for: a write whose group has not started never runs, and a wait (for a
/// run of once) ends; the call returns `TS_CANCELLED`.
// The core's `Cancel`, which says what is given up and when.
pub struct TsCancel(pub(crate) Arc<Cancel>);

/// A new cancel, not fired; free it with `ts_cancel_free` once the call returned.
#[unsafe(no_mangle)]
pub extern "C" fn ts_cancel_new() -> *mut TsCancel {
    Box::into_raw(Box::new(TsCancel(Cancel::new())))
}

/// Gives up on the call this cancel was passed to (now or later).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_cancel_fire(cancel: *const TsCancel) {
    if let Some(c) = unsafe { cancel.as_ref() } {
        c.0.fire();
    }
}

/// Frees a cancel. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_cancel_free(cancel: *mut TsCancel) {
    unsafe { crate::free(cancel) }
}

impl TsCancel {
    /// Runs `f` when the cancel fires, or now if it has fired.
    pub(crate) fn on_fire(&self, f: impl FnOnce() + Send + 'static) {
        self.0.on_fire(f);
    }
}

/// The completion a write is submitted with.
pub(crate) type Done<T> = Box<dyn FnOnce(Result<T>) + Send>;

/// Submits a write by its completion form and waits for it, letting
/// `cancel` (which may be null) give up on it before its group starts.
pub(crate) fn wait<T: Send + 'static>(
    cancel: *const TsCancel,
    submit: impl FnOnce(Done<T>) -> Result<Ticket>,
) -> Result<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    // This thread waits for the write: alone, it commits here.
    let submitted = || {
        tinystore::submit_waited(|| {
            submit(Box::new(move |r| {
                let _ = tx.send(r);
            }))
        })
    };
    // Submitted under the cancel, the write is given up by the core's rule
    // (see `tinystore::cancellable`).
    match unsafe { cancel.as_ref() } {
        Some(c) => tinystore::cancellable(&c.0, submitted)?,
        None => submitted()?,
    };
    rx.recv().unwrap_or_else(|_| Err(Error::unanswered()))
}

/// Waits for the answer that `start` hands its completion, or until
/// `cancel` (which may be null) fires: then `give_up` gets what `start`
/// returned (a ticket to cancel) and makes the answer, an error. An answer
/// that comes after is dropped where it arrives, which lets go of it (a
/// transaction rolls back, a claim is released).
pub(crate) fn answer_or_give_up<T: Send + 'static, S: Send + 'static>(
    cancel: *const TsCancel,
    start: impl FnOnce(Done<T>) -> Result<S>,
    give_up: impl FnOnce(S) -> Error + Send + 'static,
) -> Result<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    let gave_up = tx.clone();
    let started = start(Box::new(move |r| {
        let _ = tx.try_send(r);
    }))?;
    if let Some(c) = unsafe { cancel.as_ref() } {
        c.on_fire(move || {
            let _ = gave_up.try_send(Err(give_up(started)));
        });
    }
    rx.recv().unwrap_or_else(|_| Err(Error::unanswered()))
}

/// Whether the core refuses a write to `store` from this thread: it holds
/// a transaction of it.
pub(crate) fn refused(store: &Store) -> Option<Error> {
    store.refuse_write(CallerContext::new).err()
}

/// [`wait`] for a write to `store` through its handle `name`, refused by the
/// core (naming the handle) when this thread holds a transaction of it and
/// the write would wait for the writer. A call answered without the writer
/// (a counter kept in memory) is answered as usual; one queued for it is
/// cancelled before its group starts, which the transaction holding the
/// writer guarantees, so nothing is written.
pub(crate) fn wait_on_store<T: Send + 'static>(
    store: &Store,
    name: &str,
    cancel: *const TsCancel,
    submit: impl FnOnce(Done<T>) -> Result<Ticket>,
) -> Result<T> {
    let Some(refusal) = refused(store) else {
        return wait(cancel, submit);
    };
    if store.is_postgres() {
        // No writer queues the call on PostgreSQL: once submitted, it runs
        // at once and cannot be cancelled before it writes.
        return Err(refusal.in_bucket(name));
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let ticket = submit(Box::new(move |r| {
        let _ = tx.send(r);
    }))?;
    match rx.try_recv() {
        Ok(r) => r,
        Err(_) => {
            ticket.cancel();
            Err(refusal.in_bucket(name))
        }
    }
}
