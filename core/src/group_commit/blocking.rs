//! The blocking calls (`call`): the completion form plus a parked thread,
//! and how the writer wakes a group's blocked callers as a tree rather than
//! one by one. Separate because it is the only part that parks threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;

use crate::error::{Error, Result};

use super::commit::WriteCtx;
use super::job::{Isolation, new_job};
use super::{ON_WRITER, Writer, lock};

thread_local! {
    /// On the writer thread: the blocking callers answered in this group,
    /// in order, still to be woken.
    static BLOCKED: std::cell::RefCell<Vec<Arc<dyn Blocked>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A blocking caller whose answer is given, waiting to be woken.
trait Blocked {
    fn thread(&self) -> &Thread;
    /// Tells the caller its place in the group's wake-up tree, and that its
    /// answer is there.
    fn release(&self, tree: &Arc<[Thread]>, place: usize);
}

/// Where the writer leaves a blocking caller's answer.
///
/// The callers of a group are woken as a tree, not one by one by the
/// writer: the writer wakes the first, and each caller, once awake, wakes
/// the two after it (places 2i+1 and 2i+2). Waking a parked thread costs
/// the waker a system call and, on a virtual machine, an interrupt to an
/// idle core; 64 of them in a row kept the writer from its next group for
/// half a millisecond, a third of its time.
struct Answer<T> {
    out: Mutex<Option<Result<T>>>,
    tree: OnceLock<(Arc<[Thread]>, usize)>,
    /// Set after `out` and `tree`: the caller may take them.
    ready: AtomicBool,
    caller: Thread,
}

impl<T> Blocked for Answer<T> {
    fn thread(&self) -> &Thread {
        &self.caller
    }
    fn release(&self, tree: &Arc<[Thread]>, place: usize) {
        let _ = self.tree.set((tree.clone(), place));
        self.ready.store(true, Ordering::Release);
    }
}

impl<T> Answer<T> {
    /// Waits for the answer, then wakes this caller's part of the tree.
    fn wait(&self) -> Result<T> {
        while !self.ready.load(Ordering::Acquire) {
            std::thread::park();
        }
        if let Some((tree, place)) = self.tree.get() {
            for next in [2 * place + 1, 2 * place + 2] {
                if let Some(t) = tree.get(next) {
                    t.unpark();
                }
            }
        }
        lock(&self.out).take().unwrap_or_else(|| Err(Error::closed()))
    }

    /// Gives the answer: on the writer thread, to be woken with the rest of
    /// the group ([`wake_blocked`]); anywhere else, at once.
    fn give(self: Arc<Self>, out: Result<T>)
    where
        T: 'static,
    {
        *lock(&self.out) = Some(out);
        if ON_WRITER.with(|w| w.get()) {
            BLOCKED.with(|b| b.borrow_mut().push(self));
        } else {
            self.ready.store(true, Ordering::Release);
            self.caller.unpark();
        }
    }
}

/// The completion of a blocking call. Dropped unanswered (a write dropped
/// with its queue), it wakes its caller with `Closed`, as a channel whose
/// sender went away would.
struct GiveAnswer<T>(Option<Arc<Answer<T>>>);

impl<T> Drop for GiveAnswer<T> {
    fn drop(&mut self) {
        if let Some(a) = self.0.take() {
            a.ready.store(true, Ordering::Release);
            a.caller.unpark();
        }
    }
}

/// Wakes the blocking callers this group answered: the first, which wakes
/// the rest as a tree ([`Answer`]).
pub(super) fn wake_blocked() {
    let blocked = BLOCKED.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let Some(first) = blocked.first() else { return };
    let first = first.thread().clone();
    let tree: Arc<[Thread]> = blocked.iter().map(|b| b.thread().clone()).collect();
    for (place, b) in blocked.iter().enumerate() {
        b.release(&tree, place);
    }
    first.unpark();
}

impl Writer {
    /// Runs `work` in the next group and waits for its commit.
    pub fn call<T, F>(&self, weight: usize, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T> + Send + 'static,
    {
        self.call_as(weight, Isolation::Savepoint, work)
    }

    /// [`Writer::call`] for a write that says how it must be isolated.
    pub fn call_as<T, F>(&self, weight: usize, isolation: Isolation, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T> + Send + 'static,
    {
        self.call_with(weight, isolation, (), move |(), w| work(w), |(), e| e)
    }

    /// [`Writer::call_as`] with `state` that the work borrows, and that
    /// `name` uses to add to every error of the call, the writer's own
    /// (closed, cancelled, outcome unknown) too.
    pub(crate) fn call_with<S, T, F>(
        &self,
        weight: usize,
        isolation: Isolation,
        state: S,
        work: F,
        name: fn(&S, Error) -> Error,
    ) -> Result<T>
    where
        S: Send + 'static,
        T: Send + 'static,
        F: FnOnce(&S, &mut WriteCtx<'_>) -> Result<T> + Send + 'static,
    {
        if ON_WRITER.with(|w| w.get()) {
            return Err(name(
                &state,
                Error::invalid("a blocking write was called from inside a write's completion; use the completion form"),
            ));
        }
        if self.held_here() {
            return Err(name(&state, crate::error::inside_tx_error()));
        }
        let answer = Arc::new(Answer {
            out: Mutex::new(None),
            tree: OnceLock::new(),
            ready: AtomicBool::new(false),
            caller: std::thread::current(),
        });
        let mut give = GiveAnswer(Some(answer.clone()));
        let (mut job, _cancel) = new_job(weight, isolation, state, work, move |s, r: Result<T>| {
            if let Some(a) = give.0.take() {
                a.give(r.map_err(|e| name(&s, e)));
            }
        });
        let q = lock(&self.shared.queue);
        if q.closed {
            drop(q);
            let state = job.state.take().expect("the state was just put there");
            return Err(name(&state, Error::closed()));
        }
        self.run_here_or_push(q, job);
        answer.wait()
    }
}
