//! Async forms of the calls that wait for the writer, for servers on an
//! async runtime (tokio, async-std, smol, or none): a worker must not block
//! on an fsync.
//!
//! Each form is the call of the same name, answered by a [`WriteFuture`]
//! over the engine's completions: the call is checked and queued when it is
//! made, and the future is woken from the writer thread once its group is
//! durable. No thread waits per write, and no runtime is required.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! # let store = tinystore::Store::open(dir.path())?;
//! let sessions = store.bucket::<String>("sessions").open()?;
//! let codes = store.bucket::<i64>("sign-in-codes").open()?;
//! pollster::block_on(async {
//!     sessions.aio().set("s1", &"ada".to_owned()).await?;
//!     codes.aio().key("abc").ttl(std::time::Duration::from_secs(900)).set(&42).await?;
//!     assert_eq!(codes.aio().take("abc").await?, Some(42));
//!     Ok::<(), tinystore::Error>(())
//! })?;
//! # Ok::<(), tinystore::Error>(())
//! ```
//!
//! A transaction ([`AsyncStore::tx`]) and a run of a `once`
//! ([`AsyncOnce::run`]) wait the same way: for the writer's turn, for
//! another run of the key, and for the commit.
//!
//! Reads (`get`, `entry`, `has`, `list`) do not wait for the writer: they
//! stay on the handle itself. Dropping a future before it is answered gives
//! up on its write the way Go's context and Python's cancellation do: a
//! write whose group has not started writes nothing; one that started
//! finishes with its group.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::bucket::{Bucket, KeyCall, typed};
use crate::error::Result;
use crate::group_commit::Ticket;
use crate::key::AsKey;
use crate::limits::{Allowance, Counters, Quota};
use crate::raw::MAX_VALUE;
use crate::values::{Created, Expiry, Target, Version};

mod once;
mod tx;

pub use once::AsyncOnce;
pub use tx::AsyncStore;

/// Where a completion leaves its answer for the future that waits for it.
struct Slot<T> {
    state: Mutex<(Option<Result<T>>, Option<Waker>)>,
}

/// The answer of a write made through [`Bucket::aio`] and the like.
///
/// It needs no particular runtime. Dropping it before it is answered
/// cancels the write if its group has not started.
#[must_use = "the write is given up when its future is dropped unanswered"]
pub struct WriteFuture<T> {
    slot: Arc<Slot<T>>,
    ticket: Option<Ticket>,
    answered: bool,
}

impl<T: Send + 'static> WriteFuture<T> {
    /// Queues a write through its completion form `submit`, which gets the
    /// function the writer answers through.
    fn start(submit: impl FnOnce(Box<dyn FnOnce(Result<T>) + Send>) -> Result<Ticket>) -> WriteFuture<T> {
        let (answer, done) = Answer::new();
        match submit(Box::new(done)) {
            Ok(ticket) => WriteFuture {
                slot: answer.slot,
                ticket: Some(ticket),
                answered: false,
            },
            Err(e) => WriteFuture::ready(Err(e)),
        }
    }

    /// A future answered already: a call refused before it was queued.
    fn ready(r: Result<T>) -> WriteFuture<T> {
        WriteFuture {
            slot: Arc::new(Slot {
                state: Mutex::new((Some(r), None)),
            }),
            ticket: None,
            answered: false,
        }
    }
}

impl<T> Future for WriteFuture<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let r = poll_slot(&self.slot, cx);
        if r.is_ready() {
            self.answered = true;
        }
        r
    }
}

impl<T> Drop for WriteFuture<T> {
    fn drop(&mut self) {
        // Cancelling a write that already finished does nothing.
        if let (false, Some(t)) = (self.answered, &self.ticket) {
            t.cancel();
        }
    }
}

/// A future answered once by a completion that is not a write of its own
/// (a transaction's turn, a run's claim). Dropping it unanswered drops the
/// answer when it comes, which lets go of what it holds.
struct Answer<T> {
    slot: Arc<Slot<T>>,
}

impl<T: Send + 'static> Answer<T> {
    /// The future and the function that answers it, from any thread.
    fn new() -> (Answer<T>, impl FnOnce(Result<T>) + Send + 'static) {
        let slot = Arc::new(Slot {
            state: Mutex::new((None, None)),
        });
        let to = slot.clone();
        let answer = move |r: Result<T>| {
            let waker = {
                let mut st = to.state.lock().unwrap_or_else(|p| p.into_inner());
                st.0 = Some(r);
                st.1.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
        };
        (Answer { slot }, answer)
    }
}

impl<T> Future for Answer<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        poll_slot(&self.slot, cx)
    }
}

/// Takes the answer out of `slot`, or leaves `cx`'s waker for it.
fn poll_slot<T>(slot: &Slot<T>, cx: &mut Context<'_>) -> Poll<Result<T>> {
    let mut st = slot.state.lock().unwrap_or_else(|p| p.into_inner());
    match st.0.take() {
        Some(r) => Poll::Ready(r),
        None => {
            if !st.1.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                st.1 = Some(cx.waker().clone());
            }
            Poll::Pending
        }
    }
}

/// The async forms of a bucket's writes: see [`Bucket::aio`].
pub struct AsyncBucket<'a, T> {
    bucket: &'a Bucket<T>,
}

impl<T: Send + 'static> Bucket<T> {
    /// This bucket's writes as futures: `bucket.aio().set(k, &v).await`.
    pub fn aio(&self) -> AsyncBucket<'_, T> {
        AsyncBucket { bucket: self }
    }
}

impl<T: Send + 'static> AsyncBucket<'_, T> {
    /// [`Bucket::set`].
    pub fn set(&self, key: impl AsKey, value: &T) -> WriteFuture<Version> {
        self.key(key).set(value)
    }

    /// [`Bucket::create`].
    pub fn create(&self, key: impl AsKey, value: &T) -> WriteFuture<bool> {
        self.key(key).create(value)
    }

    /// [`Bucket::take`].
    pub fn take(&self, key: impl AsKey) -> WriteFuture<Option<T>> {
        self.key(key).take()
    }

    /// [`Bucket::delete`].
    pub fn delete(&self, key: impl AsKey) -> WriteFuture<bool> {
        self.key(key).delete()
    }

    /// [`Bucket::expire`].
    pub fn expire(&self, key: impl AsKey, expiry: impl Into<Expiry>) -> WriteFuture<bool> {
        self.key(key).expire(expiry)
    }

    /// [`Bucket::clear`].
    pub fn clear(&self) -> WriteFuture<()> {
        let raw = self.bucket.raw().clone();
        WriteFuture::start(move |done| raw.clear_then(done))
    }

    /// One key, for a call with options: [`Bucket::key`].
    pub fn key(&self, key: impl AsKey) -> AsyncKeyCall<'_, T> {
        AsyncKeyCall(self.bucket.key(key))
    }
}

/// A call on one key with options, answered by a future: [`crate::KeyCall`],
/// whose options it takes as they are.
#[must_use = "a key call does nothing until a method like .set() runs"]
pub struct AsyncKeyCall<'a, T>(KeyCall<'a, T>);

impl<T: Send + 'static> AsyncKeyCall<'_, T> {
    /// [`crate::KeyCall::ttl`].
    pub fn ttl(self, d: Duration) -> Self {
        Self(self.0.ttl(d))
    }

    /// [`crate::KeyCall::expires_at`].
    pub fn expires_at(self, t: std::time::SystemTime) -> Self {
        Self(self.0.expires_at(t))
    }

    /// [`crate::KeyCall::if_version`].
    pub fn if_version(self, v: Version) -> Self {
        Self(self.0.if_version(v))
    }

    /// [`crate::KeyCall::set`].
    pub fn set(self, value: &T) -> WriteFuture<Version> {
        let (raw, held) = match self.0.bucket.encode_holding(&self.0.key, value, 0) {
            Ok(x) => x,
            Err(e) => return WriteFuture::ready(Err(e)),
        };
        let (bucket, key, opts) = (self.0.bucket.raw().clone(), self.0.key, self.0.opts);
        WriteFuture::start(move |done| bucket.set_then_held(&key, raw, opts, held, done))
    }

    /// [`crate::KeyCall::create`].
    pub fn create(self, value: &T) -> WriteFuture<bool> {
        let (raw, _) = match self.0.bucket.encode_holding(&self.0.key, value, 0) {
            Ok(x) => x,
            Err(e) => return WriteFuture::ready(Err(e)),
        };
        let (bucket, key, expiry) = (self.0.bucket.raw().clone(), self.0.key, self.0.opts.expiry);
        WriteFuture::start(move |done| bucket.create_then(&key, raw, expiry, move |r| done(r.map(|c| c.written()))))
    }

    /// [`crate::KeyCall::create_entry`]: the version and expiry written, or
    /// the entry found.
    pub fn create_entry(self, value: &T) -> WriteFuture<Created<T>> {
        let (raw, _) = match self.0.bucket.encode_holding(&self.0.key, value, MAX_VALUE) {
            Ok(x) => x,
            Err(e) => return WriteFuture::ready(Err(e)),
        };
        let (bucket, key, expiry) = (self.0.bucket.raw().clone(), self.0.key, self.0.opts.expiry);
        let codec = self.0.bucket.codec.clone();
        WriteFuture::start(move |done| {
            let named = bucket.clone();
            let k = key.clone();
            bucket.create_then(&key, raw, expiry, move |r| {
                done(r.and_then(|c| c.try_map(|e| typed(&*codec, e).map_err(|e| named.named(&k, e)))))
            })
        })
    }

    /// [`crate::KeyCall::take`]: a value that does not decode as `T` is
    /// `Corrupt` and stays.
    pub fn take(self) -> WriteFuture<Option<T>> {
        let raw = self.0.bucket.raw();
        let t = match Target::new(&raw.core, &raw.branch, &self.0.key) {
            Ok(t) => t,
            Err(e) => return WriteFuture::ready(Err(e)),
        };
        let inner = &raw.core.store.inner;
        if let Err(e) = inner.check_open() {
            return WriteFuture::ready(Err(e));
        }
        let (if_version, codec) = (self.0.opts.if_version, self.0.bucket.codec.clone());
        if let Some(pg) = raw.pg() {
            return WriteFuture::start(move |done| {
                crate::values::pg_take_then(pg, t, if_version, move |e| codec.decode_row(&e.value), done)
            });
        }
        WriteFuture::start(move |done| {
            inner.writer.submit(
                0,
                move |w| t.op_take(w, if_version, |e| codec.decode_row(&e.value)),
                done,
            )
        })
    }

    /// [`crate::KeyCall::delete`].
    pub fn delete(self) -> WriteFuture<bool> {
        let (bucket, key, if_version) = (self.0.bucket.raw().clone(), self.0.key, self.0.opts.if_version);
        WriteFuture::start(move |done| bucket.delete_then(&key, if_version, done))
    }

    /// [`crate::KeyCall::expire`].
    pub fn expire(self, expiry: impl Into<Expiry>) -> WriteFuture<bool> {
        let (bucket, key, if_version, expiry) = (
            self.0.bucket.raw().clone(),
            self.0.key,
            self.0.opts.if_version,
            expiry.into(),
        );
        WriteFuture::start(move |done| bucket.expire_then(&key, expiry, if_version, done))
    }
}

/// The async forms of counters' writes: see [`Counters::aio`].
pub struct AsyncCounters<'a> {
    counters: &'a Counters,
}

impl Counters {
    /// These counters' writes as futures: `counters.aio().add(k, 1).await`.
    pub fn aio(&self) -> AsyncCounters<'_> {
        AsyncCounters { counters: self }
    }
}

impl AsyncCounters<'_> {
    /// [`Counters::add`].
    pub fn add(&self, key: impl AsKey, n: i64) -> WriteFuture<i64> {
        WriteFuture::start(|done| self.counters.add_then(key, n, done))
    }

    /// [`Counters::max`].
    pub fn max(&self, key: impl AsKey, n: i64) -> WriteFuture<i64> {
        WriteFuture::start(|done| self.counters.max_then(key, n, done))
    }

    /// [`Counters::delete`].
    pub fn delete(&self, key: impl AsKey) -> WriteFuture<bool> {
        WriteFuture::start(|done| self.counters.delete_then(key, done))
    }

    /// [`Counters::clear`].
    pub fn clear(&self) -> WriteFuture<()> {
        WriteFuture::start(|done| self.counters.clear_then(done))
    }
}

/// The async forms of a quota's writes: see [`Quota::aio`].
pub struct AsyncQuota<'a> {
    quota: &'a Quota,
}

impl Quota {
    /// This quota's writes as futures: `quota.aio().allow(user).await`.
    pub fn aio(&self) -> AsyncQuota<'_> {
        AsyncQuota { quota: self }
    }
}

impl AsyncQuota<'_> {
    /// [`Quota::allow`].
    pub fn allow(&self, key: impl AsKey) -> WriteFuture<Allowance> {
        self.allow_n(key, 1)
    }

    /// [`Quota::allow_n`].
    pub fn allow_n(&self, key: impl AsKey, n: u64) -> WriteFuture<Allowance> {
        WriteFuture::start(|done| self.quota.allow_n_then(key, n, done))
    }

    /// [`Quota::refund`].
    pub fn refund(&self, key: impl AsKey) -> WriteFuture<Allowance> {
        self.refund_n(key, 1)
    }

    /// [`Quota::refund_n`].
    pub fn refund_n(&self, key: impl AsKey, n: u64) -> WriteFuture<Allowance> {
        WriteFuture::start(|done| self.quota.refund_n_then(key, n, done))
    }

    /// [`Quota::reset`].
    pub fn reset(&self, key: impl AsKey) -> WriteFuture<()> {
        WriteFuture::start(|done| self.quota.reset_then(key, done))
    }
}
