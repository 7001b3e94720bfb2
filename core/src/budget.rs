//! The store's memory budget ([`Options::memory`](crate::Options::memory)):
//! a call holds the memory its value may need before it makes the value, so
//! that a process under any load keeps what the store holds within a bound.
//!
//! Invariants:
//! - `free` never goes below zero and never above the limit: every [`Held`]
//!   gives back exactly what it took, once, when it drops.
//! - Calls take their turn in arrival order. A large request (a `list`
//!   page) is not passed over forever by a stream of small ones: a call
//!   waits until it is first in line and its memory is free.
//! - A request larger than the whole budget takes the whole budget, so it
//!   runs alone rather than never.
//! - Inside a `tx` or `view` a call never waits (the calls holding memory
//!   may be waiting for the writer or reader the transaction holds): it
//!   takes what is free now or is `Limit` at once.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::error::{Error, ErrorKind, Result};

/// A budget of bytes shared by every call of one store.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: usize,
    state: Mutex<State>,
    turn: Condvar,
}

#[derive(Debug)]
struct State {
    free: usize,
    /// The ticket the next caller gets.
    next: u64,
    /// The ticket whose turn it is.
    serving: u64,
}

/// Memory held by one call; given back when dropped. Without a budget it
/// holds nothing and costs nothing.
#[derive(Debug, Default)]
pub(crate) struct Held {
    from: Option<Arc<Budget>>,
    bytes: usize,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            state: Mutex::new(State {
                free: limit,
                next: 0,
                serving: 0,
            }),
            turn: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a few integer moves: a panic elsewhere cannot
        // leave the state half-changed.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for this call's turn and `bytes` of free memory, then holds them.
    pub fn take(self: &Arc<Self>, bytes: usize) -> Held {
        let bytes = bytes.min(self.limit);
        let mut s = self.lock();
        let ticket = s.next;
        s.next += 1;
        while s.serving != ticket || s.free < bytes {
            s = self.turn.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.free -= bytes;
        s.serving += 1;
        drop(s);
        // The next in line may fit in what is left.
        self.turn.notify_all();
        Held {
            from: Some(self.clone()),
            bytes,
        }
    }

    /// Holds `bytes` if they are free now and nobody is waiting, else
    /// `Limit` at once: for calls inside a transaction.
    pub fn take_now(self: &Arc<Self>, bytes: usize, what: &str) -> Result<Held> {
        let bytes = bytes.min(self.limit);
        let mut s = self.lock();
        if s.serving != s.next || s.free < bytes {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "the store's memory budget ({} bytes) has {} free, and {what} inside a transaction needs {bytes}: \
                     it cannot wait there, so run the transaction again",
                    self.limit, s.free
                ),
            ));
        }
        s.free -= bytes;
        Ok(Held {
            from: Some(self.clone()),
            bytes,
        })
    }

    fn give_back(&self, bytes: usize) {
        let mut s = self.lock();
        s.free = (s.free + bytes).min(self.limit);
        drop(s);
        self.turn.notify_all();
    }

    /// Bytes free now (for tests and stats).
    #[cfg(test)]
    fn free(&self) -> usize {
        self.lock().free
    }
}

impl Held {
    /// Holds nothing: the store has no budget.
    pub fn nothing() -> Held {
        Held::default()
    }

    /// Gives back what is held beyond `bytes`: a value whose encoding turned
    /// out smaller than the largest it could have been.
    pub fn shrink_to(&mut self, bytes: usize) {
        if let Some(b) = &self.from
            && bytes < self.bytes
        {
            b.give_back(self.bytes - bytes);
            self.bytes = bytes;
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(b) = self.from.take() {
            b.give_back(self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_call_waits_until_memory_is_given_back() {
        let b = Budget::new(100);
        let first = b.take(80);
        let (tx, rx) = mpsc::channel();
        let b2 = b.clone();
        let t = std::thread::spawn(move || {
            let held = b2.take(50);
            tx.send(()).unwrap();
            drop(held);
        });
        // The second call cannot proceed while 80 of 100 are held: it only
        // answers after `first` is dropped.
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
        drop(first);
        rx.recv().unwrap();
        t.join().unwrap();
        assert_eq!(b.free(), 100);
    }

    #[test]
    fn inside_a_transaction_a_call_is_limit_at_once() {
        let b = Budget::new(100);
        let _held = b.take(60);
        let e = b.take_now(50, "a get").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit);
        assert!(e.to_string().contains("memory budget"), "{e}");
        let ok = b.take_now(40, "a get").unwrap();
        drop(ok);
        assert_eq!(b.free(), 40);
    }

    #[test]
    fn shrinking_gives_back_the_difference_and_oversize_takes_all() {
        let b = Budget::new(100);
        let mut h = b.take(1000);
        assert_eq!(b.free(), 0, "a request over the budget takes all of it");
        h.shrink_to(30);
        assert_eq!(b.free(), 70);
        drop(h);
        assert_eq!(b.free(), 100);
        let nothing = Held::nothing();
        drop(nothing);
        assert_eq!(b.free(), 100);
    }
}
