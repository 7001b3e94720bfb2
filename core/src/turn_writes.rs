//! Writes held until the end of an event loop's turn and handed to the
//! writer together, so that the writes one turn makes (64 `set`s of a
//! `gather` or a `Promise.all`) commit as one group.
//!
//! Invariants:
//! - Held writes are handed over in the order they were held, back to
//!   back inside one burst ([`submit_together`]): the writer wakes once,
//!   with all of them queued.
//! - The first write held in a turn is the one that schedules the turn's
//!   hand-over ([`TurnWrites::hold`] says so); later ones ride on it.
//! - While anything of a turn is held, a binding holds the turn's later
//!   writes too rather than stream them ([`TurnWrites::is_empty`]), so no
//!   write overtakes one made before it.
//! - The hand-over ends this thread's burst ([`crate::close_thread_burst`])
//!   once every held write is handed over, even when one of them panics:
//!   writes streamed earlier in the turn and the held ones commit as one
//!   group, and no burst outlives its turn.
//! - The held writes and a spare vector trade places at each hand-over, so
//!   both keep their room: a turn's writes never grow a new vector write by
//!   write.
//! - A held write given up before the hand-over is never handed over; one
//!   given up after it is cancelled through its ticket, which gives up on
//!   it only if its group has not started ([`TicketCell`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::group_commit::{Ticket, submit_together};
use crate::thread_burst::ThreadBurstEnd;

/// The writes of one turn, held for its end, and the spare vector.
pub struct TurnWrites<W> {
    held: Vec<W>,
    spare: Vec<W>,
}

impl<W> Default for TurnWrites<W> {
    fn default() -> Self {
        TurnWrites::new()
    }
}

impl<W> TurnWrites<W> {
    /// No write held.
    pub const fn new() -> TurnWrites<W> {
        TurnWrites {
            held: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Holds `write` for the end of the turn; says whether it is the first
    /// held this turn, whose holder schedules the hand-over.
    #[inline]
    pub fn hold(&mut self, write: W) -> bool {
        self.held.push(write);
        self.held.len() == 1
    }

    /// Whether nothing is held: only then may a write of the turn go to
    /// the writer at once.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Takes the held writes, in order, for [`hand_over_turn`]; the spare's
    /// room takes the next turn's.
    pub fn take(&mut self) -> Vec<W> {
        let spare = std::mem::take(&mut self.spare);
        std::mem::replace(&mut self.held, spare)
    }

    /// Keeps `emptied`, the vector [`TurnWrites::take`] gave once its
    /// writes are handed over, as the spare of the next hand-over.
    pub fn give_back(&mut self, emptied: Vec<W>) {
        debug_assert!(emptied.is_empty(), "given back once handed over");
        if emptied.capacity() > self.spare.capacity() {
            self.spare = emptied;
        }
    }
}

/// Hands `writes` to the writer in order, each through `submit`, as one
/// burst, then ends this thread's burst; `writes` is left empty, with its
/// room, to give back.
pub fn hand_over_turn<W>(writes: &mut Vec<W>, mut submit: impl FnMut(W)) {
    let _end = ThreadBurstEnd;
    if writes.is_empty() {
        return;
    }
    submit_together(|| {
        for w in writes.drain(..) {
            submit(w);
        }
    });
}

/// Where a held write's cancellation goes: before the write reaches the
/// writer, it is simply never handed over; after, its ticket cancels it.
#[derive(Default)]
pub struct TicketCell {
    cancelled: AtomicBool,
    core: Mutex<Option<Ticket>>,
}

impl TicketCell {
    /// Gives up on the write: it is never handed over, or, handed over
    /// already, cancelled if its group has not started.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        if let Some(t) = self.lock().as_ref() {
            t.cancel();
        }
    }

    /// Whether the write was given up: a hand-over skips it.
    #[inline]
    pub fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Keeps the ticket of the write handed over, and cancels it if the
    /// write was given up meanwhile. The flag is read under the lock,
    /// after the ticket is kept: a `cancel` that set it later takes the
    /// lock after this and finds the ticket, so no give-up falls between.
    #[inline]
    pub fn handed_over(&self, ticket: Ticket) {
        let mut core = self.lock();
        let kept = core.insert(ticket);
        if self.cancelled() {
            kept.cancel();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Ticket>> {
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    use super::*;
    use crate::group_commit::submit_together_tests::with_writer_held;
    use crate::thread_burst::{open_thread_burst, thread_burst_open};
    use crate::{ErrorKind, Raw, RawBucket, Store, WriteOptions};

    #[test]
    fn the_first_write_of_a_turn_schedules_the_hand_over() {
        let mut t = TurnWrites::new();
        assert!(t.is_empty());
        assert!(t.hold(1));
        assert!(!t.hold(2));
        assert!(!t.is_empty());
        let mut writes = t.take();
        assert!(t.is_empty());
        hand_over_turn(&mut writes, drop);
        t.give_back(writes);
        assert!(t.hold(3), "the next turn's first write schedules its own");
    }

    #[test]
    fn held_writes_are_handed_over_in_order_and_end_the_burst() {
        let mut t = TurnWrites::new();
        open_thread_burst(); // a write streamed earlier in the turn
        for i in 0..10 {
            t.hold(i);
        }
        let mut writes = t.take();
        let mut seen = Vec::new();
        hand_over_turn(&mut writes, |w| seen.push(w));
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        assert!(writes.is_empty());
        assert!(!thread_burst_open(), "no burst outlives its turn");
    }

    #[test]
    fn a_hand_over_that_panics_still_ends_the_burst() {
        open_thread_burst();
        let unwound = std::panic::catch_unwind(|| {
            hand_over_turn(&mut vec![1], |_| panic!("a held write panicked"));
        });
        assert!(unwound.is_err());
        assert!(!thread_burst_open());
    }

    #[test]
    fn the_vectors_keep_their_room_from_turn_to_turn() {
        let mut t = TurnWrites::new();
        for i in 0..64 {
            t.hold(i);
        }
        let mut writes = t.take();
        let room = writes.capacity();
        hand_over_turn(&mut writes, drop);
        t.give_back(writes);
        // The next turn fills the room the last one's vector had, once
        // each vector has been through a turn.
        for i in 0..64 {
            t.hold(i);
        }
        let mut writes = t.take();
        hand_over_turn(&mut writes, drop);
        t.give_back(writes);
        assert!(t.held.capacity() >= room, "the turn's writes go into the spare's room");
    }

    #[test]
    fn a_write_given_up_before_or_after_the_hand_over_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let b = RawBucket::open(&store, "b", None, None).unwrap();
        let before = Arc::new(TicketCell::default());
        let after = Arc::new(TicketCell::default());
        let (tx, rx) = mpsc::channel();
        // The writer is held, so no group starts before the cancels.
        with_writer_held(&store, || {
            let mut t = TurnWrites::new();
            t.hold(("before", before.clone()));
            t.hold(("after", after.clone()));
            before.cancel();
            let mut writes = t.take();
            hand_over_turn(&mut writes, |(key, cell)| {
                if cell.cancelled() {
                    return;
                }
                let tx = tx.clone();
                let ticket = b
                    .set_then(key.as_bytes(), Raw::int(1), WriteOptions::default(), move |r| {
                        tx.send(r.map(|_| ()).map_err(|e| e.kind())).unwrap()
                    })
                    .unwrap();
                cell.handed_over(ticket);
            });
            after.cancel();
        });
        // Only the completions of writes handed over hold a sender now.
        drop(tx);
        let answer = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(
            answer,
            Err(ErrorKind::Cancelled),
            "the one handed over is answered cancelled"
        );
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Err(mpsc::RecvTimeoutError::Disconnected),
            "the other never reached the writer"
        );
        assert!(!b.has(b"before").unwrap());
        assert!(!b.has(b"after").unwrap());
    }
}
