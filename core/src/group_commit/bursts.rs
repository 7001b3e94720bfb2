//! Bursts: a thread that submits many writes in a row (one event-loop
//! turn) keeps the group they start open until it is done, so that they
//! commit together. Separate because it is per-thread state the bindings
//! drive, apart from any one writer.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{BURST, Shared, lock};

/// Runs `f` as one burst of writes: every write it submits joins the
/// group the first one starts, which stays open while `f` runs (up to
/// `BURST_WAIT_AT_MOST`, and `BURST_GAP_AT_MOST` between two writes).
/// The writer runs each write as it comes, while this thread makes the
/// next, and commits when `f` returns: one group, one fsync, and the two
/// threads working at once rather than in turn. For bindings that submit a
/// burst of writes (every `set` of one event-loop turn) from one thread.
pub fn submit_together<R>(f: impl FnOnce() -> R) -> R {
    let _burst = Burst::start();
    f()
}

/// A burst of writes from this thread, open until the guard is dropped:
/// [`submit_together`] for a binding whose burst spans several calls into
/// it (every `set` of one event-loop turn, submitted as it is made, with
/// the guard dropped when the turn ends). A burst inside another is part
/// of it. Bound to its thread.
pub struct Burst {
    outer: bool,
    _thread: std::marker::PhantomData<*const ()>,
}

impl Burst {
    /// Opens a burst on this thread, or joins the one open.
    pub fn start() -> Burst {
        let nested = BURST.with(|b| {
            let mut b = b.borrow_mut();
            let nested = b.0.is_some();
            b.0.get_or_insert_with(Vec::new);
            nested
        });
        Burst {
            outer: !nested,
            _thread: std::marker::PhantomData,
        }
    }
}

impl Drop for Burst {
    /// Ends the burst; a guard dropped as its thread exits, after the
    /// thread's own state, finds it ended there already.
    fn drop(&mut self) {
        if self.outer
            && let Ok(Some(writers)) = BURST.try_with(|b| b.borrow_mut().0.take())
        {
            close_bursts(writers);
        }
    }
}

/// The writers this thread's burst writes to. A thread that exits with a
/// burst open ends it, whichever of its thread-locals goes first: else
/// each writer would count it open for good, and hold every later group
/// of a burst for the gap.
pub(super) struct OpenBursts(pub(super) Option<Vec<Arc<Shared>>>);

impl Drop for OpenBursts {
    fn drop(&mut self) {
        if let Some(writers) = self.0.take() {
            close_bursts(writers);
        }
    }
}

/// Ends this thread's burst at each writer: a group waiting for it commits.
fn close_bursts(writers: Vec<Arc<Shared>>) {
    for shared in writers {
        let mut q = lock(&shared.queue);
        q.bursts -= 1;
        shared.pushes.fetch_add(1, Ordering::Release);
        let wake = q.bursts == 0 && q.gathering;
        drop(q);
        if wake {
            shared.wake.notify_one();
        }
    }
}

/// Ends this thread's burst now, inside [`submit_together`]: for a caller
/// about to wait for something only its writes can give back (the memory
/// budget), which would otherwise keep their group waiting for the burst.
/// Its later writes start a burst of their own.
pub(crate) fn submit_held_now() {
    let writers = BURST.with(|b| b.borrow_mut().0.as_mut().map(std::mem::take));
    if let Some(writers) = writers {
        close_bursts(writers);
    }
}
