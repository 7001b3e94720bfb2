//! One write as it waits in the queue: its work, its completion and how it
//! is isolated from the rest of its group. Separate because the queue, the
//! writer thread and the commit handle a write only as a [`WriteOp`],
//! whatever its types.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::row_codec::panic_text;

use super::commit::WriteCtx;
use super::{ON_WRITER, WRITER_LOG_ID};

/// How a write is kept apart from the other writes of its group, so that
/// when it fails nothing of it stays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isolation {
    /// In a savepoint of its own: a write that may change several rows.
    Savepoint,
    /// A write that changes the file with at most one statement, after any
    /// reads, and fails before that statement or in it: SQLite undoes a
    /// failed statement alone.
    OneStatement,
}

/// A write waiting for its group.
pub(super) trait WriteOp: Send {
    fn cancelled(&self) -> bool;
    /// Whether `cancelled` is this write's ticket.
    fn has_ticket(&self, cancelled: &Arc<AtomicBool>) -> bool;
    fn weight(&self) -> usize;
    fn isolation(&self) -> Isolation;
    /// Runs inside its savepoint; returns whether it failed (to roll back).
    fn run(&mut self, ctx: &mut WriteCtx<'_>) -> bool;
    /// Answers the caller. `commit` is the commit's failure, if any;
    /// `refused` answers a write that never ran.
    fn finish(self: Box<Self>, commit: Option<&Error>, refused: Option<Error>);
}

/// One write: `state` is what its work and its completion share (for a
/// bucket's write, the key it names in errors), kept in the write's one
/// allocation rather than behind an `Arc` of its own.
pub(super) struct Job<S, T, F, C> {
    pub(super) state: Option<S>,
    work: Option<F>,
    done: Option<C>,
    out: Option<Result<T>>,
    cancel: Option<Arc<AtomicBool>>,
    weight: usize,
    isolation: Isolation,
}

impl<S, T, F, C> WriteOp for Job<S, T, F, C>
where
    S: Send,
    T: Send,
    F: FnOnce(&S, &mut WriteCtx<'_>) -> Result<T> + Send,
    C: FnOnce(S, Result<T>) + Send,
{
    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.load(Ordering::Acquire))
    }
    fn has_ticket(&self, cancelled: &Arc<AtomicBool>) -> bool {
        self.cancel.as_ref().is_some_and(|c| Arc::ptr_eq(c, cancelled))
    }
    fn weight(&self) -> usize {
        self.weight
    }
    fn isolation(&self) -> Isolation {
        self.isolation
    }
    fn run(&mut self, ctx: &mut WriteCtx<'_>) -> bool {
        let work = self.work.take().expect("a write runs once");
        let state = self.state.as_ref().expect("a write's state lives until it is answered");
        // A panic in a write's work (a binding's check, say) is that write's
        // failure: its savepoint rolls back and the group goes on.
        let out = catch_unwind(AssertUnwindSafe(|| work(state, ctx))).unwrap_or_else(|p| {
            Err(Error::invalid(format!(
                "the write panicked ({}); nothing of it was written",
                panic_text(p.as_ref())
            )))
        });
        let failed = out.is_err();
        self.out = Some(out);
        failed
    }
    fn finish(mut self: Box<Self>, commit: Option<&Error>, refused: Option<Error>) {
        let out = match (self.out.take(), commit, refused) {
            (_, _, Some(e)) => Err(e),
            (Some(Ok(_)), Some(e), _) => Err(Error::outcome_unknown(e)),
            (Some(r), _, _) => r,
            (None, _, None) => Err(crate::cancel::cancelled_before_start()),
        };
        if let (Some(done), Some(state)) = (self.done.take(), self.state.take()) {
            if !ON_WRITER.with(|w| w.get()) {
                // A group of one on the caller's thread: a panic goes on to
                // the caller, once the writer has let go (`run_here`).
                return done(state, out);
            }
            // The writer thread must outlive a completion's panic: every
            // later write of the store waits for it.
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| done(state, out))) {
                log::error!(
                    store = WRITER_LOG_ID.with(|id| id.get());
                    "tinystore: a write's completion panicked on the writer thread: {}",
                    panic_text(p.as_ref())
                );
            }
        }
    }
}

/// A write and the ticket that cancels it.
#[allow(clippy::type_complexity)]
pub(super) fn new_job<S, T, F, C>(
    weight: usize,
    isolation: Isolation,
    state: S,
    work: F,
    done: C,
) -> (Box<Job<S, T, F, C>>, Arc<AtomicBool>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let job = Box::new(Job {
        state: Some(state),
        work: Some(work),
        done: Some(done),
        out: None,
        cancel: Some(cancel.clone()),
        weight,
        isolation,
    });
    (job, cancel)
}
