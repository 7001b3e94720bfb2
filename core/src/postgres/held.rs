//! The transactions and snapshots of the bindings on PostgreSQL that are
//! still open, so that one held past its bound ([`crate::TX_LIMIT`],
//! [`crate::VIEW_LIMIT`]) ends even if its caller never calls it again.
//!
//! On kv.db a transaction holds the writer, which ends it at the limit
//! itself, and maintenance ends idle views. On PostgreSQL nothing waits for
//! either, but each holds one of the store's eight held connections; a
//! transaction also holds the locks of the rows it wrote, which other
//! servers' writes of those keys wait on, and a snapshot the database's
//! oldest snapshot, which vacuum waits on. The bound is judged on the
//! store's clock (a test clock in tests), at each call and at each
//! maintenance (every second in an ordinary store, and each
//! [`crate::Store::maintain`]), which ends every one past it.

use std::sync::{Mutex, Weak};

/// An open transaction with a bound.
pub(crate) trait Bounded: Send + Sync {
    /// Ends it (rolled back) if it is past its bound at `now` (ms on the
    /// store's clock); says whether it did.
    fn end_if_past(&self, now: i64) -> bool;
}

/// The open transactions of one store, held weakly: a transaction dropped
/// by its caller has ended already.
#[derive(Default)]
pub(crate) struct Held(Mutex<Vec<Weak<dyn Bounded>>>);

impl Held {
    pub(crate) fn add(&self, tx: Weak<dyn Bounded>) {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        held.retain(|t| t.strong_count() > 0);
        held.push(tx);
    }

    /// Ends every transaction past its bound at `now`; says how many.
    pub(crate) fn end_past_bound(&self, now: i64) -> usize {
        let open: Vec<_> = {
            let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
            held.retain(|t| t.strong_count() > 0);
            held.iter().filter_map(Weak::upgrade).collect()
        };
        // Each rollback is a statement: none runs under the list's lock.
        open.iter().filter(|t| t.end_if_past(now)).count()
    }
}
