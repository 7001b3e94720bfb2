//! Every durable kind inside a transaction (KV-16): counters, quotas and the
//! answers of `once` join `tx` as buckets do, and commit or roll back with
//! everything else in it. What keeps its state in memory cannot: the
//! refusals here are the one text of each for every language.
//!
//! - durable counters: `add`, `max`, `get`, `delete`;
//! - quotas: `allow`, `refund`, `peek`, `reset`;
//! - `once`: `get`, `delete` (an answer kept with the row it describes);
//! - refused, `Invalid`: `flush_every` counters and rate limits (their
//!   state is in memory, written every period), and `once.run` (its claim
//!   and its answer are writes of their own, which would wait for the
//!   transaction).
//!
//! Each call is written once for both backends, on an [`InTx`]: kv.db's
//! write context or PostgreSQL's transaction. The rules (a counter's sum,
//! a quota's windows) decide in the kind's own code either way; PostgreSQL's
//! transaction only runs the statements, on the key's locked row.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::decode;
use crate::error::Result;
use crate::in_tx::{flush_every_refused, same_store};
use crate::key::AsKey;
use crate::limits::{Allowance, Counters, How, Once, Quota, RawOnce};
use crate::raw::Raw;
use crate::storage::Cell;
use crate::tx::Tx;

/// Reads a counter as the transaction sees it: 0 when missing or expired.
pub(crate) fn counter_value(cell: Option<Cell>) -> Result<i64> {
    cell.map_or(Ok(0), |c| c.value.as_int())
}

impl<'a, 'c> Tx<'a, 'c> {
    /// Durable counters inside this transaction. `flush_every` counters keep
    /// their counts in memory and are `Invalid` here.
    pub fn counters<'t>(&'t self, counters: &'t Counters) -> Result<TxCounters<'t, 'a, 'c>> {
        same_store(self.store(), counters.store(), counters.name())?;
        if !counters.durable() {
            return Err(flush_every_refused(counters.name()));
        }
        Ok(TxCounters { tx: self, counters })
    }

    /// A quota inside this transaction: a use it counts commits with the
    /// rest, or rolls back with it.
    pub fn quota<'t>(&'t self, quota: &'t Quota) -> TxQuota<'t, 'a, 'c> {
        TxQuota { tx: self, quota }
    }

    /// The answers of a once inside this transaction: `get` and `delete`.
    /// A run of once inside a transaction is `Invalid` (see [`crate::once_run_refused`]).
    pub fn once<'t, T>(&'t self, once: &'t Once<T>) -> TxOnce<'t, 'a, 'c, T> {
        TxOnce { tx: self, once }
    }
}

/// Durable counters inside a transaction.
pub struct TxCounters<'t, 'a, 'c> {
    tx: &'t Tx<'a, 'c>,
    counters: &'t Counters,
}

impl TxCounters<'_, '_, '_> {
    fn change(&self, key: impl AsKey, how: How, n: i64) -> Result<i64> {
        let t = self.counters.target(&key.key_bytes())?;
        self.tx.run_kind(|on| on.change(&t, how, n))
    }

    /// Adds `n` and returns the new value, as [`Counters::add`].
    pub fn add(&self, key: impl AsKey, n: i64) -> Result<i64> {
        self.change(key, How::Add, n)
    }

    /// Keeps the larger of the counter and `n`, as [`Counters::max`].
    pub fn max(&self, key: impl AsKey, n: i64) -> Result<i64> {
        self.change(key, How::Max, n)
    }

    /// The counter's value as the transaction sees it.
    pub fn get(&self, key: impl AsKey) -> Result<i64> {
        let t = self.counters.target(&key.key_bytes())?;
        self.tx
            .run_kind(|mut on| counter_value(on.read(&t)?))
            .map_err(|e| t.name(e))
    }

    /// Deletes the counter; says whether a live one was there.
    pub fn delete(&self, key: impl AsKey) -> Result<bool> {
        let t = self.counters.target(&key.key_bytes())?;
        self.tx.run_kind(|on| on.delete(&t))
    }
}

/// A quota inside a transaction.
pub struct TxQuota<'t, 'a, 'c> {
    tx: &'t Tx<'a, 'c>,
    quota: &'t Quota,
}

impl TxQuota<'_, '_, '_> {
    fn check(&self) -> Result<()> {
        same_store(self.tx.store(), self.quota.store(), self.quota.name())
    }

    /// Counts one use, as [`Quota::allow`].
    pub fn allow(&self, key: impl AsKey) -> Result<Allowance> {
        self.allow_n(key, 1)
    }

    /// Counts `n` uses in every window or in none, as [`Quota::allow_n`].
    pub fn allow_n(&self, key: impl AsKey, n: u64) -> Result<Allowance> {
        self.check()?;
        let op = self.quota.allow_op(&key.key_bytes(), n)?;
        self.tx.run_kind(op)
    }

    /// Gives one use back, as [`Quota::refund`].
    pub fn refund(&self, key: impl AsKey) -> Result<Allowance> {
        self.refund_n(key, 1)
    }

    /// Gives `n` uses back, as [`Quota::refund_n`].
    pub fn refund_n(&self, key: impl AsKey, n: u64) -> Result<Allowance> {
        self.check()?;
        let op = self.quota.refund_op(&key.key_bytes(), n)?;
        self.tx.run_kind(op)
    }

    /// The answer one use would get now, as the transaction sees it.
    pub fn peek(&self, key: impl AsKey) -> Result<Allowance> {
        self.check()?;
        let op = self.quota.peek_op(&key.key_bytes())?;
        self.tx.run_kind(op)
    }

    /// Forgets the key, as [`Quota::reset`].
    pub fn reset(&self, key: impl AsKey) -> Result<()> {
        self.check()?;
        let op = self.quota.reset_op(&key.key_bytes())?;
        self.tx.run_kind(op)
    }
}

/// The answers of a once inside a transaction.
pub struct TxOnce<'t, 'a, 'c, T> {
    tx: &'t Tx<'a, 'c>,
    once: &'t Once<T>,
}

impl<T: Serialize + DeserializeOwned + Send + 'static> TxOnce<'_, '_, '_, T> {
    fn raw(&self) -> Result<&RawOnce> {
        let raw = self.once.raw();
        same_store(self.tx.store(), raw.store(), raw.name())?;
        Ok(raw)
    }

    /// The answer kept for the key, as the transaction sees it.
    pub fn get(&self, key: impl AsKey) -> Result<Option<T>> {
        let t = self.raw()?.target(&key.key_bytes())?;
        let cell = self.tx.run_kind(|mut on| on.read(&t))?;
        cell.map(|c| decode::<T>(&c.value).map_err(|e| t.name(e))).transpose()
    }

    /// Forgets the answer kept for the key; says whether one was kept.
    pub fn delete(&self, key: impl AsKey) -> Result<bool> {
        let t = self.raw()?.target(&key.key_bytes())?;
        self.tx.run_kind(|on| on.delete(&t))
    }
}

/// The raw answer of a once, for a binding's transaction.
pub(crate) fn once_answer(cell: Option<Cell>) -> Option<Raw> {
    cell.map(|c| c.value)
}
