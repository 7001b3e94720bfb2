//! The writer thread's loop: wait for writes, take a group (by count and
//! by bytes), gather an open burst's later writes, commit, answer, and run
//! what [`after_answers`] put off. Separate from the commit of one group,
//! which a blocking caller also runs on its own thread.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::error::Error;
use crate::storage::file::BUSY_TIMEOUT;
use crate::storage::{self, sql};

use super::blocking::wake_blocked;
use super::commit::commit_group;
use super::job::WriteOp;
use super::{
    BURST_GAP_AT_MOST, BURST_SPIN, BURST_WAIT_AT_MOST, GROUP_MAX_BYTES, GROUP_MAX_WRITES, ON_WRITER, Shared,
    after_commit, lock,
};

thread_local! {
    /// On the writer thread: what [`after_answers`] put off until the group is answered.
    static AFTER: std::cell::RefCell<Vec<Box<dyn FnOnce()>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` once the writer has answered every write of the group it is
/// answering, when called from a write's completion on the writer thread;
/// elsewhere, at once. For bindings that wake another thread (an event loop)
/// to resolve answers: one wake-up per group instead of one for the first
/// answer, which would resolve the group's answers in several passes and
/// split the next burst of writes into several groups.
pub fn after_answers(f: impl FnOnce() + 'static) {
    if ON_WRITER.with(|w| w.get()) {
        AFTER.with(|a| a.borrow_mut().push(Box::new(f)));
    } else {
        f();
    }
}

/// Runs what [`after_answers`] put off.
fn run_after_answers() {
    for f in AFTER.with(|a| std::mem::take(&mut *a.borrow_mut())) {
        f();
    }
}

/// The writer thread: take a group, commit it, answer it, repeat.
pub(super) fn run(shared: Arc<Shared>) {
    ON_WRITER.with(|w| w.set(true));
    loop {
        wake_blocked();
        run_after_answers();
        {
            let mut q = lock(&shared.queue);
            while q.ops.is_empty() && !q.closed {
                let due = shared.checkpoints.due();
                match due {
                    Some(at) if at <= Instant::now() => {
                        // Idle since the due time: run the checkpoint that
                        // fell short again (the connection first, as ever).
                        drop(q);
                        if let Some(conn) = lock(&shared.conn).as_ref() {
                            shared.checkpoints.retry(conn);
                        }
                        q = lock(&shared.queue);
                        continue;
                    }
                    _ => {}
                }
                q.idle = true;
                q = match due {
                    Some(at) => {
                        let left = at.saturating_duration_since(Instant::now());
                        shared.wake.wait_timeout(q, left).unwrap_or_else(|p| p.into_inner()).0
                    }
                    None => shared.wake.wait(q).unwrap_or_else(|p| p.into_inner()),
                };
                q.idle = false;
            }
            if q.ops.is_empty() {
                return; // closed and drained
            }
        }
        // Take the connection and the write lock first, then the group: every
        // write that arrived while a `tx`, another process or the last commit
        // held the file joins this group.
        let guard = lock(&shared.conn);
        let began = match guard.as_ref() {
            Some(conn) => lock(&shared.turns).begin(conn, BUSY_TIMEOUT),
            None => Err(Error::closed()),
        };
        let group = take_group(&mut lock(&shared.queue).ops);
        let (group, cancelled): (Vec<_>, Vec<_>) = group.into_iter().partition(|op| !op.cancelled());
        for op in cancelled {
            op.finish(None, None);
        }
        let conn = match began {
            Ok(()) => guard.as_ref().expect("a transaction began on this connection"),
            Err(e) => {
                drop(guard);
                for op in group {
                    op.finish(None, Some(e.clone()));
                }
                continue;
            }
        };
        if group.is_empty() {
            let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
            drop(guard);
            lock(&shared.turns).ended();
            continue;
        }
        let leftover = commit_group(conn, &shared, group, true);
        drop(guard);
        after_commit(&shared);
        put_back(&shared, leftover);
    }
}

/// Puts writes that never ran (SQLite ended the transaction under them)
/// back in front of the queue, in their order, for the writer's next group.
pub(super) fn put_back(shared: &Shared, leftover: Vec<Box<dyn WriteOp>>) {
    if leftover.is_empty() {
        return;
    }
    let mut q = lock(&shared.queue);
    for op in leftover.into_iter().rev() {
        q.ops.push_front(op);
    }
    drop(q);
    shared.wake.notify_one();
}

fn take_group(ops: &mut VecDeque<Box<dyn WriteOp>>) -> Vec<Box<dyn WriteOp>> {
    let mut group = Vec::new();
    take_into(ops, &mut group, &mut 0);
    group
}

/// Moves writes from the queue into `group` while it has room, by count
/// and by `bytes`, the weight the group holds (kept by the caller, so that
/// a burst's group, which takes its writes a few at a time, is not summed
/// again at each); a write heavier than the room left waits for the next
/// group, unless the group is empty. Returns how many it moved.
fn take_into(ops: &mut VecDeque<Box<dyn WriteOp>>, group: &mut Vec<Box<dyn WriteOp>>, bytes: &mut usize) -> usize {
    let before = group.len();
    while let Some(op) = ops.front() {
        if !group.is_empty() && (group.len() >= GROUP_MAX_WRITES || *bytes + op.weight() > GROUP_MAX_BYTES) {
            break;
        }
        *bytes += op.weight();
        group.push(ops.pop_front().expect("front was there"));
    }
    group.len() - before
}

/// While a burst is open ([`submit_together`]), waits for its next writes
/// and moves them into `group`: polling for [`BURST_SPIN`], then asleep
/// until a write or the burst's end wakes the writer. Returns false when
/// the group should commit: no burst is open, the group is full, or the
/// waits ran out. Writes cancelled meanwhile are answered here.
///
/// [`submit_together`]: super::submit_together
pub(super) fn gather(shared: &Shared, group: &mut Vec<Box<dyn WriteOp>>, bytes: &mut usize, started: Instant) -> bool {
    let gap_from = Instant::now();
    let mut q = lock(&shared.queue);
    loop {
        if !q.ops.is_empty() {
            let at = group.len();
            let moved = take_into(&mut q.ops, group, bytes);
            drop(q);
            let mut i = at;
            while i < group.len() {
                if group[i].cancelled() {
                    let op = group.remove(i);
                    *bytes -= op.weight();
                    op.finish(None, None);
                } else {
                    i += 1;
                }
            }
            if moved == 0 {
                return false; // full
            }
            if group.len() > at {
                return true;
            }
            q = lock(&shared.queue); // all cancelled: wait on
            continue;
        }
        let waited = gap_from.elapsed();
        let total = started.elapsed();
        if q.bursts == 0 || q.closed || waited >= BURST_GAP_AT_MOST || total >= BURST_WAIT_AT_MOST {
            return false;
        }
        if waited < BURST_SPIN {
            let seen = shared.pushes.load(Ordering::Acquire);
            drop(q);
            while shared.pushes.load(Ordering::Acquire) == seen && gap_from.elapsed() < BURST_SPIN {
                std::thread::yield_now();
            }
            q = lock(&shared.queue);
            continue;
        }
        q.gathering = true;
        let left = (BURST_GAP_AT_MOST - waited).min(BURST_WAIT_AT_MOST - total);
        q = shared.wake.wait_timeout(q, left).unwrap_or_else(|p| p.into_inner()).0;
        q.gathering = false;
    }
}
