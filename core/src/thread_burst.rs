//! A thread's open burst: the [`Burst`] an event loop's thread keeps open
//! across many calls into a binding (every write of one turn of the loop),
//! so that the writes it streams to the writer as they are made commit as
//! one group when the turn ends.
//!
//! Invariants:
//! - A thread has at most one open burst; opening while one is open does
//!   nothing, so the first write of a turn opens it and the rest join it.
//! - The burst ends when the binding closes it (the end of the turn, or a
//!   [`ThreadBurstEnd`] dropped, a panic's unwinding too) and at the
//!   latest when the thread exits: a burst no one closes would hold every
//!   group of its store open for up to the burst's bound.
//! - Ending it as the thread exits never panics out of the thread's
//!   destructors, whichever of the thread's states goes first.

use std::cell::RefCell;

use crate::group_commit::Burst;

thread_local! {
    static OPEN: RefCell<Option<Burst>> = const { RefCell::new(None) };
}

/// Opens this thread's burst unless one is open; says whether it opened
/// one, so that the caller schedules the end of the turn once.
#[inline]
pub fn open_thread_burst() -> bool {
    OPEN.with(|b| {
        let mut b = b.borrow_mut();
        let opened = b.is_none();
        if opened {
            *b = Some(Burst::start());
        }
        opened
    })
}

/// Ends this thread's burst, if one is open: the group its writes joined
/// commits now.
#[inline]
pub fn close_thread_burst() {
    // Dropped outside the borrow: ending a burst wakes the writer.
    let burst = OPEN.with(|b| b.borrow_mut().take());
    drop(burst);
}

/// Whether this thread has a burst open.
pub fn thread_burst_open() -> bool {
    OPEN.with(|b| b.borrow().is_some())
}

/// Ends this thread's burst when dropped: a turn's end closes it even when
/// it returns early with an error or unwinds.
pub struct ThreadBurstEnd;

impl Drop for ThreadBurstEnd {
    #[inline]
    fn drop(&mut self) {
        close_thread_burst();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::group_commit::submit_together_tests::{answered_on, store_with_bucket};
    use crate::{Raw, WriteOptions};

    #[test]
    fn a_burst_opens_once_and_closes_when_the_turn_ends() {
        assert!(!thread_burst_open());
        assert!(open_thread_burst());
        assert!(!open_thread_burst(), "a second write of the turn joins the burst");
        assert!(thread_burst_open());
        close_thread_burst();
        assert!(!thread_burst_open());
        close_thread_burst(); // closing none does nothing
        assert!(open_thread_burst(), "the next turn opens its own");
        {
            let _end = ThreadBurstEnd;
        }
        assert!(!thread_burst_open());
    }

    #[test]
    fn a_turn_that_unwinds_closes_its_burst() {
        let unwound = std::panic::catch_unwind(|| {
            let _end = ThreadBurstEnd;
            open_thread_burst();
            panic!("a held write panicked");
        });
        assert!(unwound.is_err());
        assert!(!thread_burst_open());
    }

    #[test]
    fn a_thread_that_exits_with_its_burst_open_ends_it() {
        let (_dir, store, b) = store_with_bucket();
        let (tx, rx) = mpsc::channel();
        let b2 = b.clone();
        std::thread::spawn(move || {
            open_thread_burst();
            b2.set_then(b"k", Raw::int(1), WriteOptions::default(), move |r| {
                tx.send(r.is_ok()).unwrap()
            })
            .unwrap();
            // The thread exits without closing its burst.
        })
        .join()
        .expect("ending the burst at exit never panics out of the thread");
        assert!(rx.recv_timeout(Duration::from_secs(5)).unwrap());
        // No burst is left open at the writer: a waited write alone
        // commits on its caller's thread only when none is.
        store.tx(|_| Ok(())).unwrap();
        assert_eq!(answered_on(&b, b"here", true), std::thread::current().id());
    }
}
