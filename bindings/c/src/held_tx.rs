//! A transaction's thread, marked: while a transaction holds a store's one
//! writer, a blocking write to that store from outside the transaction would
//! wait for the writer until the transaction's limit (`tinystore::TX_LIMIT`)
//! rolls it back. When the thread that began the transaction is the one that
//! makes that write, it waits for itself: Rust refuses it at once with a
//! thread-local of the core's writer, and `ts_tx_hold_thread` gives a C caller
//! the same answer, `TS_INVALID` at once, nothing written.
//!
//! The mark is opt-in because only a caller that keeps the transaction's work
//! on one thread may use it: Go's `Store.Tx` locks its goroutine to its OS
//! thread while its function runs. A mark outlives nothing: it is a flag the
//! transaction clears when it commits, rolls back or is freed, on whatever
//! thread that happens, and a cleared mark is ignored and dropped.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use tinystore::{Error, ErrorKind, Result, Store, Ticket};

use crate::{Done, TsCancel, wait};

thread_local! {
    /// The transactions this thread holds, by the directory of their store,
    /// each with the flag its transaction clears when it ends.
    static HELD: RefCell<Vec<(PathBuf, Arc<AtomicBool>)>> = const { RefCell::new(Vec::new()) };
}

/// The mark of one transaction: open from its begin until [`Hold::end`] or
/// drop; it marks the threads [`Hold::mark_thread`] is called on.
pub(crate) struct Hold {
    dir: PathBuf,
    open: Arc<AtomicBool>,
}

impl Hold {
    /// The mark of a transaction of `store` that has just begun.
    pub(crate) fn new(store: &Store) -> Hold {
        Hold {
            dir: store.dir().to_path_buf(),
            open: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Marks the calling thread as holding the transaction, while it is open.
    pub(crate) fn mark_thread(&self) {
        if !self.open.load(Ordering::Acquire) {
            return;
        }
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            h.retain(|(_, o)| o.load(Ordering::Acquire));
            if !h.iter().any(|(_, o)| Arc::ptr_eq(o, &self.open)) {
                h.push((self.dir.clone(), self.open.clone()));
            }
        });
    }

    /// The transaction ended: its threads' writes go to the writer again.
    pub(crate) fn end(&self) {
        self.open.store(false, Ordering::Release);
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.end();
    }
}

/// Whether this thread holds an open transaction of `store` (of its file:
/// another store on the same directory waits for the same write lock).
pub(crate) fn holds(store: &Store) -> bool {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        h.retain(|(_, o)| o.load(Ordering::Acquire));
        h.iter().any(|(dir, _)| dir.as_path() == store.dir())
    })
}

/// `Invalid` when this thread holds a transaction of `store`: for a call
/// that always waits for the writer (a transaction, a run of once).
pub(crate) fn check_outside(store: &Store, what: &str) -> Result<()> {
    if holds(store) {
        return Err(Error::new(
            ErrorKind::Invalid,
            format!(
                "{what} was called from inside a transaction on the same store, outside it; use the transaction (WithTx)"
            ),
        ));
    }
    Ok(())
}

/// [`wait`] for a write to `store` through its handle `name`, refused with
/// `Invalid` naming the handle when this thread holds a transaction of it and
/// the write would wait for the writer. A call
/// answered without the writer (a counter kept in memory) is answered as
/// usual; one queued for it is cancelled before its group starts, which the
/// transaction holding the writer guarantees, so nothing is written.
pub(crate) fn wait_outside<T: Send + 'static>(
    store: &Store,
    name: &str,
    cancel: *const TsCancel,
    submit: impl FnOnce(Done<T>) -> Result<Ticket>,
) -> Result<T> {
    if !holds(store) {
        return wait(cancel, submit);
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let ticket = submit(Box::new(move |r| {
        let _ = tx.send(r);
    }))?;
    match rx.try_recv() {
        Ok(r) => r,
        Err(_) => {
            ticket.cancel();
            Err(tinystore::inside_tx_error().in_bucket(name))
        }
    }
}
