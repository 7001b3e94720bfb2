//! How a write reaches a group: queued for the writer thread, or, for a
//! caller that waits for it and would be alone, committed as a group of one
//! on the caller's own thread. Separate from the writer thread's loop
//! because this side runs on the callers' threads.

use std::cell::Cell as StdCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard, Weak};

use crate::error::{Error, Result};
use crate::storage::direct_statements::WriteConn;
use crate::storage::file::BUSY_TIMEOUT;

use super::commit::{WriteCtx, commit_group};
use super::job::{Isolation, WriteOp, new_job};
use super::writer_thread::put_back;
use super::{BURST, ON_WRITER, Queue, Shared, Writer, after_commit, lock};

thread_local! {
    /// Set inside [`submit_waited`]: this thread waits for what it submits.
    static WAITS: StdCell<bool> = const { StdCell::new(false) };
}

/// Runs `f`, whose writes (the completion forms, `*_then`) the calling
/// thread then waits for: for a binding whose blocking calls are a submit
/// and a wait (the C ABI, so that a cancel can give up on a queued write).
/// Such a write commits on this thread, as a blocking call does, when
/// nothing is queued and the writer is free: two thread switches instead of
/// four. Never from an event loop, which must not wait out a commit.
pub fn submit_waited<R>(f: impl FnOnce() -> R) -> R {
    /// Clears the mark however `f` ends, a panic too.
    struct Waits(bool);
    impl Drop for Waits {
        fn drop(&mut self) {
            WAITS.with(|w| w.set(self.0));
        }
    }
    let _restore = Waits(WAITS.with(|w| w.replace(true)));
    f()
}

/// A handle that lets a caller give up on a write before it starts.
#[derive(Clone)]
pub struct Ticket {
    cancelled: Arc<AtomicBool>,
    /// The writer whose queue the write waits in, if it was queued.
    queued: Option<Weak<Shared>>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Ticket").field(&self.cancelled).finish()
    }
}

impl Ticket {
    /// The ticket of a call that finished without waiting for the writer
    /// (a `flush_every` counter's change): cancelling it does nothing.
    #[allow(dead_code)] // until the counters land
    pub(crate) fn finished() -> Ticket {
        Ticket {
            cancelled: Arc::new(AtomicBool::new(true)),
            queued: None,
        }
    }

    /// Gives up on the write: if its group has not started, it never runs
    /// and its completion gets `Cancelled`. A write still in the queue is
    /// taken out and answered now, on this thread, so that a caller who
    /// gives up while a transaction or a long group holds the writer is
    /// not kept waiting for it.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        let Some(shared) = self.queued.as_ref().and_then(Weak::upgrade) else {
            return;
        };
        let op = {
            let mut q = lock(&shared.queue);
            let at = q.ops.iter().position(|op| op.has_ticket(&self.cancelled));
            at.and_then(|i| q.ops.remove(i))
        };
        // Outside the queue's lock: the completion may submit again.
        if let Some(op) = op {
            op.finish(None, None);
        }
    }
}

impl Writer {
    /// Queues `work` for the next group and returns at once; `done` gets its
    /// result on the writer thread once the group committed.
    pub fn submit<T, F, C>(&self, weight: usize, work: F, done: C) -> Result<Ticket>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        self.submit_as(weight, Isolation::Savepoint, work, done)
    }

    /// [`Writer::submit`] for a write that says how it must be isolated.
    pub fn submit_as<T, F, C>(&self, weight: usize, isolation: Isolation, work: F, done: C) -> Result<Ticket>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        self.submit_with(weight, isolation, (), move |(), w| work(w), move |(), r| done(r))
            .map_err(|(e, ())| e)
    }

    /// [`Writer::submit_as`] with `state` that the work borrows and the
    /// completion then owns. A write the writer refuses at once (it is
    /// closed) hands `state` back with the error. From inside a transaction
    /// such a write is queued behind it: a caller must not wait for its
    /// answer there (a blocking call is refused instead).
    pub(crate) fn submit_with<S, T, F, C>(
        &self,
        weight: usize,
        isolation: Isolation,
        state: S,
        work: F,
        done: C,
    ) -> std::result::Result<Ticket, (Error, S)>
    where
        S: Send + 'static,
        T: Send + 'static,
        F: FnOnce(&S, &mut WriteCtx<'_>) -> Result<T> + Send + 'static,
        C: FnOnce(S, Result<T>) + Send + 'static,
    {
        let (mut job, cancelled) = new_job(weight, isolation, state, work, done);
        let ticket = Ticket {
            cancelled,
            queued: Some(Arc::downgrade(&self.shared)),
        };
        // The caller's cancel is told of the write before the write can
        // start: a cancel that returns from `fire` before the group starts
        // has marked it, so it never runs. Fired before the write is
        // queued, it only marks it, and the write is answered below.
        if let Some(cancel) = crate::cancel::current() {
            let t = ticket.clone();
            cancel.on_fire(move || t.cancel());
        }
        let q = lock(&self.shared.queue);
        if q.closed {
            drop(q);
            let state = job.state.take().expect("the state was just put there");
            return Err((Error::closed(), state));
        }
        if job.cancelled() {
            drop(q);
            job.finish(None, None);
        } else if WAITS.with(|w| w.get()) && !ON_WRITER.with(|w| w.get()) {
            self.run_here_or_push(q, job);
        } else {
            self.push(q, job);
        }
        Ok(ticket)
    }

    /// Commits `job` on this thread when it would be alone, else queues it.
    /// Alone: nothing queued (so no earlier write of this thread), no burst
    /// open, no sign of other writers (else the first caller a group woke
    /// would commit alone, and split every group in two), and the
    /// connection free. The lock order is the writer's (connection, then
    /// queue) reversed, so only a try.
    pub(super) fn run_here_or_push(&self, q: MutexGuard<'_, Queue>, job: Box<dyn WriteOp>) {
        let alone = q.ops.is_empty()
            && q.bursts == 0
            && BURST.with(|b| b.borrow().0.is_none())
            && self.shared.last_group.load(Ordering::Relaxed) <= 1;
        match self.shared.conn.try_lock() {
            Ok(conn) if alone => {
                drop(q);
                self.run_here(conn, job);
            }
            _ => self.push(q, job),
        }
    }

    /// Queues `job` for the next group, waking the writer when it waits.
    fn push(&self, mut q: MutexGuard<'_, Queue>, job: Box<dyn WriteOp>) {
        let joins_burst = BURST.with(|b| match b.borrow_mut().0.as_mut() {
            Some(writers) if !writers.iter().any(|w| Arc::ptr_eq(w, &self.shared)) => {
                writers.push(self.shared.clone());
                true
            }
            _ => false,
        });
        if joins_burst {
            q.bursts += 1;
        }
        q.ops.push_back(job);
        self.shared.pushes.fetch_add(1, Ordering::Release);
        let wake = q.idle || q.gathering;
        drop(q);
        if wake {
            self.shared.wake.notify_one();
        }
    }

    /// Commits `job` as a group of its own on this thread, holding the
    /// writer's connection: for a blocking call that finds no write queued
    /// and the connection free, which would otherwise wake the writer
    /// thread and wait to be woken in turn. Writes queued meanwhile wait
    /// for the connection and form the writer's next group.
    fn run_here(&self, guard: MutexGuard<'_, Option<WriteConn>>, job: Box<dyn WriteOp>) {
        let shared = &self.shared;
        let began = match guard.as_ref() {
            Some(conn) => lock(&shared.turns).begin(conn, BUSY_TIMEOUT),
            None => Err(Error::closed()),
        };
        let conn = match began {
            Ok(()) => guard.as_ref().expect("a transaction began on this connection"),
            Err(e) => {
                drop(guard);
                job.finish(None, Some(e));
                return;
            }
        };
        // The completion runs here, on the caller's thread: a panic in it
        // goes on once the connection and the write lock are given back.
        let leftover = catch_unwind(AssertUnwindSafe(|| commit_group(conn, shared, vec![job], false)));
        drop(guard);
        after_commit(shared);
        match leftover {
            Ok(leftover) => put_back(shared, leftover),
            Err(p) => resume_unwind(p),
        }
    }
}
