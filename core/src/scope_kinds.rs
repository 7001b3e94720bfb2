//! Every kind beside buckets in a [`Scope`] (KV-16): counters, quotas,
//! once's answers and rate limits, directly or inside a binding's
//! transaction, where the durable ones run on the caller's thread inside the
//! transaction as its bucket calls do. What cannot join a transaction
//! (counters with flush_every, rate limits) is refused with the texts of
//! `tx_kinds`; a snapshot reads buckets only.

use crate::binding_tx::BindingTx;
use crate::error::{Error, Result};
use crate::in_tx::{flush_every_refused, rate_limit_refused, same_store};
use crate::limits::{Allowance, Counters, How, Quota, RateLimit, RawOnce};
use crate::raw::Raw;
use crate::scope::Scope;
use crate::tx_kinds::{counter_value, once_answer};

impl BindingTx {
    /// Whether `counters` can join this transaction, for a binding's
    /// `tx.with(counters)`: `Invalid` for `flush_every` counters or those of
    /// another store.
    pub fn check_counters(&self, counters: &Counters) -> Result<()> {
        same_store(self.store(), counters.store(), counters.name())?;
        if !counters.durable() {
            return Err(flush_every_refused(counters.name()));
        }
        Ok(())
    }

    /// The refusal of a rate limit given to this transaction (`tx.with`):
    /// its state is in memory.
    pub fn refuse_rate_limit(&self, limit: &RateLimit) -> Error {
        rate_limit_refused(limit.name())
    }
}

impl Scope<'_> {
    fn change(&self, counters: &Counters, key: &[u8], how: How, n: i64) -> Result<i64> {
        let in_tx = self.in_tx(counters.name(), |s| {
            s.check_counters(counters)?;
            let t = counters.target(key)?;
            s.run_kind(|on| on.change(&t, how, n))
        });
        in_tx.unwrap_or_else(|| match how {
            How::Add => counters.add(key, n),
            How::Max => counters.max(key, n),
        })
    }

    /// Adds `n` to a counter; the new value. Inside a transaction,
    /// `flush_every` counters are `Invalid`.
    pub fn counter_add(&self, counters: &Counters, key: &[u8], n: i64) -> Result<i64> {
        self.change(counters, key, How::Add, n)
    }

    /// Keeps the larger of a counter and `n`; the new value.
    pub fn counter_max(&self, counters: &Counters, key: &[u8], n: i64) -> Result<i64> {
        self.change(counters, key, How::Max, n)
    }

    /// A counter's value: 0 when it is missing or expired.
    pub fn counter_get(&self, counters: &Counters, key: &[u8]) -> Result<i64> {
        let in_tx = self.in_tx(counters.name(), |s| {
            s.check_counters(counters)?;
            let t = counters.target(key)?;
            s.run_kind(|mut on| counter_value(on.read(&t)?).map_err(|e| t.name(e)))
        });
        in_tx.unwrap_or_else(|| counters.get(key))
    }

    /// Deletes a counter; says whether a live one was there.
    pub fn counter_delete(&self, counters: &Counters, key: &[u8]) -> Result<bool> {
        let in_tx = self.in_tx(counters.name(), |s| {
            s.check_counters(counters)?;
            let t = counters.target(key)?;
            s.run_kind(|on| on.delete(&t))
        });
        in_tx.unwrap_or_else(|| counters.delete(key))
    }

    /// Counts `n` uses of a quota in every window, or in none.
    pub fn quota_allow(&self, quota: &Quota, key: &[u8], n: u64) -> Result<Allowance> {
        let in_tx = self.in_tx(quota.name(), |s| {
            same_store(s.store(), quota.store(), quota.name())?;
            s.run_kind(quota.allow_op(key, n)?)
        });
        in_tx.unwrap_or_else(|| quota.allow_n(key, n))
    }

    /// Gives `n` uses of a quota back.
    pub fn quota_refund(&self, quota: &Quota, key: &[u8], n: u64) -> Result<Allowance> {
        let in_tx = self.in_tx(quota.name(), |s| {
            same_store(s.store(), quota.store(), quota.name())?;
            s.run_kind(quota.refund_op(key, n)?)
        });
        in_tx.unwrap_or_else(|| quota.refund_n(key, n))
    }

    /// The answer one use of a quota would get, counting nothing.
    pub fn quota_peek(&self, quota: &Quota, key: &[u8]) -> Result<Allowance> {
        let in_tx = self.in_tx(quota.name(), |s| {
            same_store(s.store(), quota.store(), quota.name())?;
            s.run_kind(quota.peek_op(key)?)
        });
        in_tx.unwrap_or_else(|| quota.peek(key))
    }

    /// Forgets a quota's key.
    pub fn quota_reset(&self, quota: &Quota, key: &[u8]) -> Result<()> {
        let in_tx = self.in_tx(quota.name(), |s| {
            same_store(s.store(), quota.store(), quota.name())?;
            s.run_kind(quota.reset_op(key)?)
        });
        in_tx.unwrap_or_else(|| quota.reset(key))
    }

    /// The answer a once keeps for the key, if any.
    pub fn once_get(&self, once: &RawOnce, key: &[u8]) -> Result<Option<Raw>> {
        let in_tx = self.in_tx(once.name(), |s| {
            same_store(s.store(), once.store(), once.name())?;
            let t = once.target(key)?;
            s.run_kind(|mut on| Ok(once_answer(on.read(&t)?)))
        });
        in_tx.unwrap_or_else(|| once.get(key))
    }

    /// Forgets the answer a once keeps for the key; says whether one was kept.
    pub fn once_delete(&self, once: &RawOnce, key: &[u8]) -> Result<bool> {
        let in_tx = self.in_tx(once.name(), |s| {
            same_store(s.store(), once.store(), once.name())?;
            let t = once.target(key)?;
            s.run_kind(|on| on.delete(&t))
        });
        in_tx.unwrap_or_else(|| once.delete(key))
    }

    /// A rate limit's call: on the store itself `direct`; inside a
    /// transaction the refusal, since its state is in memory.
    fn rate_limit<T>(&self, limit: &RateLimit, direct: impl FnOnce() -> Result<T>) -> Result<T> {
        self.in_tx(limit.name(), |_| Err(rate_limit_refused(limit.name())))
            .unwrap_or_else(direct)
    }

    /// Takes `n` requests of a rate limit's key together, or none.
    pub fn rate_limit_allow(&self, limit: &RateLimit, key: &[u8], n: u64) -> Result<Allowance> {
        self.rate_limit(limit, || limit.allow_n(key, n))
    }

    /// The answer one request of a rate limit's key would get, counting nothing.
    pub fn rate_limit_peek(&self, limit: &RateLimit, key: &[u8]) -> Result<Allowance> {
        self.rate_limit(limit, || limit.peek(key))
    }

    /// Forgets a rate limit's key.
    pub fn rate_limit_reset(&self, limit: &RateLimit, key: &[u8]) -> Result<()> {
        self.rate_limit(limit, || limit.reset(key))
    }
}
