//! Writes answered through a queue instead of a parked thread.
//!
//! A blocking write parks its caller's thread until the writer answers it;
//! from Go, 64 goroutines writing at once park 64 OS threads, and the
//! writer wakes each with a system call. A write submitted with
//! `TS_OP_SUBMIT` returns at once instead; its answer goes to a
//! `TsAnswers` queue, which one thread drains (`ts_answers_wait`) and hands
//! on to its callers. The writer wakes that thread once per group.
//!
//! An answer is given exactly once: a write the core drops unanswered (with
//! its queue, at close) is answered `TS_CLOSED`, as a blocking write is.

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tinystore::{Error, Raw, RawBucket, Result, Version, WriteOptions};

use crate::call::TsCall;
use crate::{TS_OK, TsError, code_of, invalid};

/// A write's answer, as `ts_answers_wait` hands it out.
#[repr(C)]
pub struct TsAnswer {
    /// The token the write was submitted with.
    pub token: u64,
    /// `TS_OK` or the error's code.
    pub code: i32,
    /// The version written, when `code` is `TS_OK`.
    pub version: i64,
    /// The error, when `code` is not `TS_OK`; the caller frees it with `ts_error_free`.
    pub err: *mut TsError,
}

/// A queue of answers, shared by the writes submitted to it.
pub struct TsAnswers {
    state: Mutex<Queue>,
    ready: Condvar,
}

struct Queue {
    answers: Vec<TsAnswer>,
    /// A wake-up of the waiting thread is already on its way.
    wake_due: bool,
}

// SAFETY: a `TsError` pointer in a queued answer is owned by the queue until
// it is handed out; nothing else points to it.
unsafe impl Send for Queue {}

impl TsAnswers {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues an answer and wakes the waiting thread once for every answer
    /// of the group the writer is answering (`after_answers`).
    fn give(self: &Arc<Self>, token: u64, out: Result<Version>) {
        let answer = match out {
            Ok(v) => TsAnswer {
                token,
                code: TS_OK,
                version: v.get(),
                err: std::ptr::null_mut(),
            },
            Err(e) => TsAnswer {
                token,
                code: code_of(e.kind()),
                version: 0,
                err: Box::into_raw(Box::new(TsError::new(e))),
            },
        };
        let mut q = self.lock();
        q.answers.push(answer);
        if std::mem::replace(&mut q.wake_due, true) {
            return;
        }
        drop(q);
        let me = self.clone();
        tinystore::after_answers(move || me.ready.notify_one());
    }
}

/// The completion of a submitted write: answers its token once, `Closed` if
/// the core drops it unanswered.
struct Reply {
    queue: Option<Arc<TsAnswers>>,
    token: u64,
}

impl Reply {
    fn answer(mut self, out: Result<Version>) {
        if let Some(q) = self.queue.take() {
            q.give(self.token, out);
        }
    }
}

thread_local! {
    /// Set while this thread submits a write: a reply dropped meanwhile
    /// belongs to a write the core refused, whose error the submitter
    /// returns itself.
    static SUBMITTING: Cell<bool> = const { Cell::new(false) };
}

impl Drop for Reply {
    fn drop(&mut self) {
        if SUBMITTING.with(|s| s.get()) {
            return;
        }
        if let Some(q) = self.queue.take() {
            q.give(self.token, Err(Error::unanswered()));
        }
    }
}

/// A new, empty queue of answers; free it with `ts_answers_free`.
#[unsafe(no_mangle)]
pub extern "C" fn ts_answers_new() -> *mut TsAnswers {
    Arc::into_raw(Arc::new(TsAnswers {
        state: Mutex::new(Queue {
            answers: Vec::new(),
            wake_due: false,
        }),
        ready: Condvar::new(),
    }))
    .cast_mut()
}

/// Gives up the caller's hold on a queue; writes still in flight keep it
/// until they are answered (their answers are then dropped). Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_answers_free(q: *mut TsAnswers) {
    if !q.is_null() {
        let q = unsafe { Arc::from_raw(q) };
        for a in std::mem::take(&mut q.lock().answers) {
            unsafe { crate::ts_error_free(a.err) };
        }
    }
}

/// Waits until the queue holds an answer, then moves up to `cap` of them,
/// oldest first, to `out` and returns how many. Errors in them are the
/// caller's. Returns 0 at once for a null queue or `cap` 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_answers_wait(q: *const TsAnswers, out: *mut TsAnswer, cap: usize) -> usize {
    let Some(q) = (unsafe { q.as_ref() }) else { return 0 };
    if out.is_null() || cap == 0 {
        return 0;
    }
    let mut s = q.lock();
    while s.answers.is_empty() {
        s.wake_due = false;
        s = q.ready.wait(s).unwrap_or_else(|p| p.into_inner());
    }
    let n = s.answers.len().min(cap);
    for (i, a) in s.answers.drain(..n).enumerate() {
        unsafe { out.add(i).write(a) };
    }
    // Answers left over: the next call takes them without a wake-up.
    n
}

/// Submits a set of `key` of `rb` on the store (`TS_OP_SUBMIT`, see
/// `bucket_op`): its answer goes to the call's `answers` with its `token`.
pub(crate) fn submit(rb: &RawBucket, key: &[u8], raw: Raw, opts: WriteOptions, c: &TsCall) -> Result<()> {
    if c.answers.is_null() {
        return Err(invalid("a null answers queue"));
    }
    // SAFETY: the caller holds the queue for this call; the reply holds
    // its own reference from here on.
    let queue = unsafe {
        Arc::increment_strong_count(c.answers);
        Arc::from_raw(c.answers)
    };
    let reply = Reply {
        queue: Some(queue),
        token: c.token,
    };
    SUBMITTING.with(|s| s.set(true));
    let submitted = rb.set_then(key, raw, opts, move |r| reply.answer(r));
    SUBMITTING.with(|s| s.set(false));
    let ticket = submitted?;
    if let Some(c) = unsafe { c.cancel.as_ref() } {
        c.on_fire(move || ticket.cancel());
    }
    Ok(())
}
