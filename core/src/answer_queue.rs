//! The queue a binding's answers wait in between the writer thread, which
//! pushes them from the writes' completions, and an event loop's thread,
//! which empties it and settles each answer in its language.
//!
//! Invariants:
//! - The writer thread never waits for the loop: a push takes the queue's
//!   lock only for the push, and never a language's lock.
//! - The loop is woken once per group: the push that finds the queue empty
//!   asks for the wake-up, and on the writer thread that wake-up waits
//!   until the whole group is answered ([`after_answers`]), so the loop
//!   settles the group's answers in one pass and the writes they lead to
//!   form one burst, not several. Off the writer thread it wakes at once.
//! - [`AnswerQueue::push_now`] wakes at once even on the writer thread:
//!   for an answer the writer then waits on (a transaction's start), which
//!   waiting for the group's end would never give.
//! - The loop empties the queue by trading it for a buffer it emptied
//!   before ([`AnswerQueue::swap`]), so that both keep their room and the
//!   writer pushes a group's answers without growing a vector answer by
//!   answer.
//!
//! Generic over the answer and over how the runtime is woken, so that each
//! binding's queue is its own monomorphic code: no box or dynamic call per
//! answer.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::group_commit::after_answers;

/// How a runtime's thread is woken to empty its queue, from any thread.
pub trait Wake: Send + Sync + 'static {
    /// Wakes the runtime's thread; a wake-up already on its way may serve.
    fn wake(&self);
}

/// The answers waiting for one runtime's thread, and how to wake it.
pub struct AnswerQueue<T, W> {
    answers: Mutex<Vec<T>>,
    waker: W,
}

impl<T: Send + 'static, W: Wake> AnswerQueue<T, W> {
    /// An empty queue whose runtime `waker` wakes.
    pub fn new(waker: W) -> AnswerQueue<T, W> {
        AnswerQueue {
            answers: Mutex::new(Vec::new()),
            waker,
        }
    }

    /// Queues `answer`, from any thread; the first of a group wakes the
    /// runtime once the group is answered.
    #[inline]
    pub fn push(self: &Arc<Self>, answer: T) {
        let first = {
            let mut answers = self.lock();
            answers.push(answer);
            answers.len() == 1
        };
        if first {
            let queue = self.clone();
            after_answers(move || queue.waker.wake());
        }
    }

    /// Queues `answer` and wakes the runtime now, even in the middle of a
    /// group.
    pub fn push_now(&self, answer: T) {
        self.lock().push(answer);
        self.waker.wake();
    }

    /// Trades the queued answers for `batch`, which the runtime emptied
    /// before (its room serves the next answers): on return `batch` holds
    /// every answer queued, oldest first.
    #[inline]
    pub fn swap(&self, batch: &mut Vec<T>) {
        debug_assert!(batch.is_empty(), "a batch is traded once emptied");
        std::mem::swap(&mut *self.lock(), batch);
    }

    /// The runtime's side: what wakes it.
    #[inline]
    pub fn waker(&self) -> &W {
        &self.waker
    }

    /// The guard of the answers, a poisoned one too: a panic elsewhere
    /// leaves the vector whole.
    fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        self.answers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::group_commit::submit_together_tests::with_writer_held;
    use crate::{Raw, RawBucket, Store, WriteOptions};

    /// Counts its wake-ups, and how many answers had been pushed at each;
    /// tells `woke`, when set, of each wake-up.
    #[derive(Default)]
    struct Counted {
        wakes: AtomicUsize,
        pushed: Arc<AtomicUsize>,
        pushed_at_wake: Mutex<Vec<usize>>,
        woke: Mutex<Option<mpsc::Sender<()>>>,
    }

    impl Wake for Counted {
        fn wake(&self) {
            self.wakes.fetch_add(1, Ordering::SeqCst);
            let at = self.pushed.load(Ordering::SeqCst);
            self.pushed_at_wake.lock().unwrap().push(at);
            if let Some(woke) = self.woke.lock().unwrap().as_ref() {
                let _ = woke.send(());
            }
        }
    }

    #[test]
    fn off_the_writer_the_first_push_wakes_once_until_emptied() {
        let q = Arc::new(AnswerQueue::new(Counted::default()));
        q.push(1);
        q.push(2);
        q.push(3);
        assert_eq!(q.waker().wakes.load(Ordering::SeqCst), 1);
        let mut batch = Vec::with_capacity(8);
        q.swap(&mut batch);
        assert_eq!(batch, [1, 2, 3], "answers keep their order");
        batch.clear();
        q.swap(&mut batch);
        assert!(batch.is_empty());
        q.push(4);
        assert_eq!(
            q.waker().wakes.load(Ordering::SeqCst),
            2,
            "an emptied queue wakes again"
        );
        q.push_now(5);
        q.push_now(6);
        assert_eq!(q.waker().wakes.load(Ordering::SeqCst), 4, "push_now always wakes");
    }

    #[test]
    fn the_emptied_batch_keeps_its_room_for_the_next_answers() {
        let q = Arc::new(AnswerQueue::new(Counted::default()));
        let mut batch = Vec::with_capacity(64);
        q.swap(&mut batch); // the queue now has the room
        for i in 0..64 {
            q.push(i);
        }
        q.swap(&mut batch);
        assert_eq!(batch.len(), 64);
        assert!(batch.capacity() >= 64);
    }

    #[test]
    fn a_group_answered_on_the_writer_wakes_once_after_all_its_answers() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let b = RawBucket::open(&store, "b", None, None).unwrap();
        let q = Arc::new(AnswerQueue::new(Counted::default()));
        let pushed = q.waker().pushed.clone();
        let (woke, wake_seen) = mpsc::channel();
        *q.waker().woke.lock().unwrap() = Some(woke);
        let (tx, rx) = mpsc::channel();
        // The writer is held while the writes queue, so that they form one group.
        with_writer_held(&store, || {
            for i in 0..16 {
                let (q, pushed, tx) = (q.clone(), pushed.clone(), tx.clone());
                let key = format!("k{i}");
                b.set_then(key.as_bytes(), Raw::int(i), WriteOptions::default(), move |r| {
                    pushed.fetch_add(1, Ordering::SeqCst);
                    q.push(r.is_ok());
                    let _ = tx.send(());
                })
                .unwrap();
            }
        });
        for _ in 0..16 {
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        wake_seen.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(
            *q.waker().pushed_at_wake.lock().unwrap(),
            [16],
            "one wake-up, after the group"
        );
        let mut batch = Vec::new();
        q.swap(&mut batch);
        assert_eq!(batch, [true; 16]);
    }
}
