//! The async forms of a `once`: a run whose work is a future, and the
//! deletion of a kept answer.
//!
//! A run waits for another run of its key without holding a thread, runs
//! its future while it holds the key's claim, and keeps the answer in one
//! durable write. The claim lives in the future: dropping the future (a
//! timeout of the runtime, a client that went away) lets go keeping
//! nothing, as an error of the work does, so the next run runs it again.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Answer, WriteFuture};
use crate::codec::{decode, encode};
use crate::error::Result;
use crate::key::AsKey;
use crate::limits::{Begun, Claim, Once, inside_run};

/// The async forms of a `once`: see [`Once::aio`].
#[derive(Clone, Copy)]
pub struct AsyncOnce<'a, T> {
    once: &'a Once<T>,
}

impl<T: Serialize + DeserializeOwned + Send + 'static> Once<T> {
    /// This `once` with futures in place of waits: `once.aio().run(k, f).await`.
    pub fn aio(&self) -> AsyncOnce<'_, T> {
        AsyncOnce { once: self }
    }
}

impl<T: Serialize + DeserializeOwned + Send + 'static> AsyncOnce<'_, T> {
    /// [`Once::run`] with async work: returns the answer kept for the key,
    /// or awaits `work()` and keeps what it returns. A run of the key
    /// elsewhere, in this process or another, is awaited and its answer
    /// returned; no thread waits for it. An error of `work`, a panic, or
    /// dropping this future keeps nothing. A run of the same key from inside
    /// `work` is `Invalid`. To give up waiting for a stuck run, drop the
    /// future (a timeout of your runtime): that runs nothing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = tinystore::Store::open(dir.path())?;
    /// let payments = store.once::<String>("payments").open()?;
    /// let receipt = pollster::block_on(payments.aio().run("order-1", || async {
    ///     Ok("receipt-1".to_string())
    /// }))?;
    /// assert_eq!(receipt, "receipt-1");
    /// # Ok::<(), tinystore::Error>(())
    /// ```
    pub async fn run<F, Fut>(self, key: impl AsKey, work: F) -> Result<T>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let (begun, answer) = Answer::new();
        let t = self.once.raw().begin_here(&key.key_bytes(), answer)?;
        match begun.await? {
            Begun::Kept(raw) => decode(&raw).map_err(|e| t.name(e)),
            Begun::Run(claim) => {
                let value = InRun {
                    claim: &claim,
                    work: std::pin::pin!(work()),
                }
                .await?; // dropping the claim lets go, keeping nothing
                let raw = encode(&value).map_err(|e| t.name(e))?;
                let (kept, answer) = Answer::new();
                claim.keep(raw, answer);
                kept.await?;
                Ok(value)
            }
        }
    }

    /// [`Once::delete`]: forgets a kept answer.
    pub fn delete(&self, key: impl AsKey) -> WriteFuture<bool> {
        WriteFuture::start(|done| self.once.raw().delete_then(key, done))
    }
}

/// The work of a run, polled with its thread inside the run, so that the
/// guard against a run of the same key from inside it sees it on whatever
/// thread the runtime polls it.
struct InRun<'a, W> {
    claim: &'a Claim,
    work: Pin<&'a mut W>,
}

impl<W: Future> Future for InRun<'_, W> {
    type Output = W::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<W::Output> {
        let this = &mut *self;
        inside_run(this.claim, || this.work.as_mut().poll(cx))
    }
}
