//! The limit store's promises about time and load: every call answered
//! within its deadline, and at most so many calls in flight.
//!
//! Why a timer thread: a commit may wait in the writer's queue behind
//! another process's transaction for as long as SQLite's busy timeout. The
//! caller must still be answered by its deadline, so one process-wide
//! thread answers whatever is overdue, and the write's own completion,
//! arriving later, finds the answer already given. Both paths take the
//! answer from one slot, so a call is answered exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Instant;

use crate::error::{Error, ErrorKind, Result};
use crate::group_commit::Ticket;

/// A call that can be answered at its deadline.
pub(crate) trait Overdue: Send + Sync {
    /// Answers the call as timed out, if it was not answered yet.
    fn answer_overdue(&self);
}

/// Where a call's answer goes.
type Done<T> = Box<dyn FnOnce(T) + Send>;

/// The answer of one call, given once: by its completion or by the timer.
pub(crate) struct AnswerOnce<T> {
    done: Mutex<Option<Done<T>>>,
    overdue: Box<dyn Fn() -> T + Send + Sync>,
}

impl<T: 'static> AnswerOnce<T> {
    /// `overdue` makes the answer of a call past its deadline.
    pub(crate) fn new(done: impl FnOnce(T) + Send + 'static, overdue: impl Fn() -> T + Send + Sync + 'static) -> Self {
        AnswerOnce {
            done: Mutex::new(Some(Box::new(done))),
            overdue: Box::new(overdue),
        }
    }

    /// Answers with `value` unless the call was answered already.
    pub(crate) fn give(&self, value: T) {
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(done) = done {
            done(value);
        }
    }

    fn answered(&self) -> bool {
        self.done.lock().unwrap_or_else(|p| p.into_inner()).is_none()
    }
}

impl<T: 'static> Overdue for AnswerOnce<T> {
    fn answer_overdue(&self) {
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(done) = done {
            done((self.overdue)());
        }
    }
}

struct Watched {
    at: Instant,
    call: Weak<dyn Overdue>,
    ticket: Option<Ticket>,
}

struct Timer {
    watched: Mutex<Vec<Watched>>,
    wake: Condvar,
}

fn timer() -> &'static Arc<Timer> {
    static TIMER: OnceLock<Arc<Timer>> = OnceLock::new();
    TIMER.get_or_init(|| {
        let t = Arc::new(Timer {
            watched: Mutex::new(Vec::new()),
            wake: Condvar::new(),
        });
        let run = t.clone();
        // If the thread cannot start, calls are still answered by their
        // completions, only not by their deadline.
        if let Err(e) = std::thread::Builder::new()
            .name("tinystore-limit-deadlines".into())
            .spawn(move || run.run())
        {
            log::error!("tinystore: no deadline thread for the limit store: {e}");
        }
        t
    })
}

impl Timer {
    fn run(&self) {
        let mut w = self.watched.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            w.retain(|c| c.call.upgrade().is_some());
            let now = Instant::now();
            let (due, waiting): (Vec<Watched>, Vec<Watched>) =
                std::mem::take(&mut *w).into_iter().partition(|c| c.at <= now);
            *w = waiting;
            if !due.is_empty() {
                drop(w);
                for c in due {
                    // Answered first: a cancel answers a write still queued
                    // at once, and the overdue answer is the one to give.
                    if let Some(call) = c.call.upgrade() {
                        call.answer_overdue();
                    }
                    if let Some(t) = &c.ticket {
                        t.cancel(); // if its group has not started, it never runs
                    }
                }
                w = self.watched.lock().unwrap_or_else(|p| p.into_inner());
                continue;
            }
            w = match w.iter().map(|c| c.at).min() {
                None => self.wake.wait(w).unwrap_or_else(|p| p.into_inner()),
                Some(at) => {
                    self.wake
                        .wait_timeout(w, at.saturating_duration_since(now))
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }
}

/// Answers `call` at `at` if nothing answered it before, cancelling its
/// write (`ticket`) if that has not started.
pub(crate) fn watch<T: 'static>(at: Instant, call: &Arc<AnswerOnce<T>>, ticket: Option<Ticket>) {
    if call.answered() {
        return;
    }
    let t = timer();
    let weak: Weak<dyn Overdue> = Arc::downgrade(call) as Weak<AnswerOnce<T>>;
    t.watched
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Watched { at, call: weak, ticket });
    t.wake.notify_one();
}

/// The error of a call whose write was queued and not answered in time: it
/// may still commit.
pub(crate) fn overdue_error(what: &str, deadline_ms: u128) -> Error {
    Error::new(
        ErrorKind::OutcomeUnknown,
        format!(
            "the limit store is unavailable: {what} was not answered within {deadline_ms} ms; \
             it may still be written, so read the keys before counting again"
        ),
    )
}

/// One call in flight; the count goes down when this is dropped.
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Takes a slot, or refuses at once when `max` calls are in flight: a call
/// past its deadline may still be running, so waiting would only pile up.
pub(crate) fn take_slot(in_flight: &Arc<AtomicUsize>, max: usize) -> Result<Slot> {
    let mut n = in_flight.load(Ordering::Acquire);
    loop {
        if n >= max {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "the limit store is unavailable: {max} calls are in flight already; try again once they finish"
                ),
            ));
        }
        match in_flight.compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Ok(Slot(in_flight.clone())),
            Err(now) => n = now,
        }
    }
}
