//! The async form of `tx`: the same all-or-nothing transaction, with the
//! waits (for the writer's turn, for the commit's fsync) as futures.
//!
//! The closure itself is synchronous, as in [`Store::tx`]: it runs on the
//! thread that polls the future, holding the writer, so it must not await
//! anything. That keeps the promise of a `tx` (nothing else writes while it
//! runs) without a thread parked per transaction.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::Answer;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::tx::Tx;

/// The async forms of a store's transaction: see [`Store::aio`].
#[derive(Clone, Copy)]
pub struct AsyncStore<'a> {
    store: &'a Store,
}

impl Store {
    /// This store's transaction as a future: `store.aio().tx(|tx| ..).await`.
    pub fn aio(&self) -> AsyncStore<'_> {
        AsyncStore { store: self }
    }
}

impl AsyncStore<'_> {
    /// [`Store::tx`], awaited: waits for the writer's turn, runs `f` in the
    /// transaction, and answers once the commit is durable. An error of `f`
    /// rolls back and is answered; a panic rolls back and goes on to the
    /// poller. Dropping the future before `f` ran writes nothing; after,
    /// the commit goes on with its group.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = tinystore::Store::open(dir.path())?;
    /// let stock = store.bucket::<i64>("stock").open()?;
    /// let orders = store.bucket::<String>("orders").open()?;
    /// stock.set("apples", &1)?;
    /// pollster::block_on(store.aio().tx(|tx| {
    ///     let left = tx.with(&stock).get("apples")?.unwrap_or(0);
    ///     tx.with(&stock).set("apples", &(left - 1))?;
    ///     tx.with(&orders).set("o-1", &"apples".to_string())?;
    ///     Ok(())
    /// }))?;
    /// assert_eq!(stock.get("apples")?, Some(0));
    /// # Ok::<(), tinystore::Error>(())
    /// ```
    pub async fn tx<R>(self, f: impl FnOnce(&Tx<'_, '_>) -> Result<R>) -> Result<R> {
        let (turn, ready) = Answer::new();
        let (durable, done) = Answer::new();
        let ticket = self.store.transaction_then(ready, done)?;
        // Dropped before its turn: the queued transaction is given up.
        let give_up = GiveUp(Some(ticket));
        let session = turn.await?;
        drop(give_up.disarm());
        let mut panicked = None;
        let out = self.store.tx_in_session(&session, |tx| {
            catch_unwind(AssertUnwindSafe(|| f(tx))).unwrap_or_else(|p| {
                panicked = Some(p);
                Err(Error::invalid("the transaction's function panicked"))
            })
        });
        match out {
            Ok(v) => {
                session.commit()?;
                durable.await.map(|()| v)
            }
            Err(e) => {
                // Already ended (held past its limit, an I/O failure): the
                // rollback has nothing left to do.
                let _ = session.rollback();
                drop(session);
                if let Some(p) = panicked {
                    resume_unwind(p);
                }
                Err(e)
            }
        }
    }
}

/// Cancels a queued transaction when dropped armed.
struct GiveUp(Option<crate::group_commit::Ticket>);

impl GiveUp {
    fn disarm(mut self) -> Option<crate::group_commit::Ticket> {
        self.0.take()
    }
}

impl Drop for GiveUp {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
        }
    }
}
