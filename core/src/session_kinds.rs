//! Every durable kind inside a binding's transaction (KV-16): the calls of
//! counters, quotas and `once`'s answers on a [`TxSession`], run on the
//! writer thread inside the transaction as its bucket calls are. What
//! cannot join a transaction is refused with the texts of `tx_kinds`.

use crate::error::{Error, Result};
use crate::limits::{Allowance, Counters, How, Quota, RateLimit, RawOnce, op_change};
use crate::raw::Raw;
use crate::session::TxSession;
use crate::tx_kinds::{counter_value, flush_every_refused, once_answer, rate_limit_refused, same_store};

impl TxSession {
    /// Whether `counters` can join this transaction, for a binding's
    /// `tx.with(counters)`: `Invalid` for `flush_every` counters or those of
    /// another store.
    pub fn check_counters(&self, counters: &Counters) -> Result<()> {
        self.durable(counters)
    }

    /// The refusal of a rate limit given to this transaction (`tx.with`):
    /// its state is in memory.
    pub fn refuse_rate_limit(&self, limit: &RateLimit) -> Error {
        rate_limit_refused(limit.name())
    }

    fn durable(&self, counters: &Counters) -> Result<()> {
        same_store(self.store(), counters.store(), counters.name())?;
        if !counters.durable() {
            return Err(flush_every_refused(counters.name()));
        }
        Ok(())
    }

    fn change(&self, counters: &Counters, key: &[u8], how: How, n: i64) -> Result<i64> {
        self.durable(counters)?;
        let t = counters.target(key)?;
        self.run(move |w| op_change(&t, w, how, n))
    }

    /// Adds `n` to a durable counter inside the transaction; `Invalid` for
    /// `flush_every` counters.
    pub fn counter_add(&self, counters: &Counters, key: &[u8], n: i64) -> Result<i64> {
        self.change(counters, key, How::Add, n)
    }

    /// Keeps the larger of a durable counter and `n`, inside the transaction.
    pub fn counter_max(&self, counters: &Counters, key: &[u8], n: i64) -> Result<i64> {
        self.change(counters, key, How::Max, n)
    }

    /// A durable counter's value as the transaction sees it.
    pub fn counter_get(&self, counters: &Counters, key: &[u8]) -> Result<i64> {
        self.durable(counters)?;
        let t = counters.target(key)?;
        self.run(move |w| counter_value(t.read(w.conn, w.now)?).map_err(|e| t.name(e)))
    }

    /// Deletes a durable counter inside the transaction.
    pub fn counter_delete(&self, counters: &Counters, key: &[u8]) -> Result<bool> {
        self.durable(counters)?;
        let t = counters.target(key)?;
        self.run(move |w| t.op_delete(w, None))
    }

    /// Counts `n` uses of a quota inside the transaction.
    pub fn quota_allow(&self, quota: &Quota, key: &[u8], n: u64) -> Result<Allowance> {
        same_store(self.store(), quota.store(), quota.name())?;
        self.run(quota.allow_op(key, n)?)
    }

    /// Gives `n` uses of a quota back inside the transaction.
    pub fn quota_refund(&self, quota: &Quota, key: &[u8], n: u64) -> Result<Allowance> {
        same_store(self.store(), quota.store(), quota.name())?;
        self.run(quota.refund_op(key, n)?)
    }

    /// The answer one use would get, as the transaction sees the quota.
    pub fn quota_peek(&self, quota: &Quota, key: &[u8]) -> Result<Allowance> {
        same_store(self.store(), quota.store(), quota.name())?;
        self.run(quota.peek_op(key)?)
    }

    /// Forgets a quota's key inside the transaction.
    pub fn quota_reset(&self, quota: &Quota, key: &[u8]) -> Result<()> {
        same_store(self.store(), quota.store(), quota.name())?;
        self.run(quota.reset_op(key)?)
    }

    /// The answer a once keeps for the key, as the transaction sees it.
    pub fn once_get(&self, once: &RawOnce, key: &[u8]) -> Result<Option<Raw>> {
        same_store(self.store(), once.store(), once.name())?;
        let t = once.target(key)?;
        self.run(move |w| Ok(once_answer(t.read(w.conn, w.now)?)))
    }

    /// Forgets the answer a once keeps for the key, inside the transaction.
    pub fn once_delete(&self, once: &RawOnce, key: &[u8]) -> Result<bool> {
        same_store(self.store(), once.store(), once.name())?;
        let t = once.target(key)?;
        self.run(move |w| t.op_delete(w, None))
    }
}
