//! A transaction's thread: while a transaction holds a store's one writer, a
//! blocking write to that store from outside the transaction would wait for
//! the writer until the transaction's limit (`tinystore::TX_LIMIT`) rolls it
//! back. When the thread that began the transaction is the one that makes
//! that write, it waits for itself. `ts_tx_hold_thread` marks the thread in
//! the core, as Rust's own `tx` does, and the core refuses such a call
//! (`TS_INVALID` at once, nothing written) with its one message.
//!
//! The mark is opt-in because only a caller that keeps the transaction's work
//! on one thread may use it: Go's `Store.Tx` locks its goroutine to its OS
//! thread while its function runs.

use std::sync::mpsc;

use tinystore::{CallerContext, Result, Store, Ticket};

use crate::{Done, TsCancel, wait};

/// Whether the core refuses a write to `store` from this thread: it holds
/// a transaction of it.
pub(crate) fn refused(store: &Store) -> Option<tinystore::Error> {
    store.refuse_write(CallerContext::new).err()
}

/// [`wait`] for a write to `store` through its handle `name`, refused by the
/// core (naming the handle) when this thread holds a transaction of it and
/// the write would wait for the writer. A call answered without the writer
/// (a counter kept in memory) is answered as usual; one queued for it is
/// cancelled before its group starts, which the transaction holding the
/// writer guarantees, so nothing is written.
pub(crate) fn wait_outside<T: Send + 'static>(
    store: &Store,
    name: &str,
    cancel: *const TsCancel,
    submit: impl FnOnce(Done<T>) -> Result<Ticket>,
) -> Result<T> {
    let Some(refusal) = refused(store) else {
        return wait(cancel, submit);
    };
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
