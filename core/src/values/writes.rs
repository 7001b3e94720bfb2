//! The write calls of [`RawBucket`], each in its blocking form and its
//! completion form (`*_then`), with what a write costs the group and the
//! clear of a branch. Kept apart from the reads because every call here
//! hands a [`Target`]'s write to the writer and holds the memory of its
//! value until the write is answered.

use super::{BucketCore, CLEAR_BOUND, Created, Entry, Expiry, RawBucket, Target, Version, WriteOptions};
use crate::budget::Held;
use crate::error::{Error, Result};
use crate::group_commit::{Isolation, Ticket, WriteCtx};
use crate::key::Branch;
use crate::raw::{MAX_VALUE, Raw};
use crate::storage;

use super::on_postgres::{self, pg_then};
use crate::postgres::{Pool, SentFlag};
use std::sync::Arc;

/// What a write of one key carries to the writer: the bytes of its value
/// (how groups are bounded) and whether it needs a savepoint.
fn cost(value: Option<&Raw>) -> (usize, Isolation) {
    (value.map_or(0, Raw::encoded_len), Isolation::Savepoint)
}

/// A `set`'s cost: an inline value is written in one statement, or, when it
/// replaces a spilled one, in a savepoint the write opens itself.
fn set_cost(value: &Raw) -> (usize, Isolation) {
    match storage::spills(value) {
        true => (value.encoded_len(), Isolation::Savepoint),
        false => (value.encoded_len(), Isolation::OneStatement),
    }
}

/// Clears a branch and every branch under it. Small branches are deleted in
/// this write; larger ones are hidden by a mark at a new revision, which
/// hides every row written before it, and deleted by maintenance.
pub(crate) fn op_clear(core: &BucketCore, branch: &Branch, w: &mut WriteCtx<'_>, in_tx: bool) -> Result<()> {
    let named = |e: Error| e.at(&core.name, branch.show_with(None));
    branch.check(&core.name)?;
    let (lo, hi) = branch.subtree();
    let n = storage::count_subtree(w.conn, core.id, &lo, &hi, CLEAR_BOUND + 1).map_err(named)?;
    if n <= CLEAR_BOUND {
        storage::delete_subtree(w.conn, core.id, &lo, &hi).map_err(named)?;
        return Ok(());
    }
    if in_tx {
        return Err(named(Error::limit(format!(
            "a clear of more than {CLEAR_BOUND} keys cannot run inside a transaction"
        ))));
    }
    let version = w.next_version();
    storage::mark_cleared(w.conn, core.id, &lo, &hi, version).map_err(named)
}

impl RawBucket {
    /// This bucket's PostgreSQL store for a blocking write, which is
    /// refused from inside a transaction of the store as on kv.db
    /// ([`crate::guards`]): the caller would write beside its own
    /// transaction instead of in it.
    fn pg_blocking_write(&self) -> Result<Option<&crate::postgres::PgStore>> {
        let pg = self.pg();
        if pg.is_some() && self.core.store.inner.writer.held_here() {
            return Err(crate::error::inside_tx_error().in_bucket(self.name()));
        }
        Ok(pg)
    }

    /// Every write of a key changes at most one row of cells, and a value
    /// that spills adds a row before it: only that write needs a savepoint.
    /// `held` is the memory budget the write holds until it is answered.
    fn write<T: Send + 'static>(
        &self,
        t: Target,
        (weight, isolation): (usize, Isolation),
        held: Held,
        op: impl FnOnce(&Target, &mut WriteCtx<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let _held = held;
        // The writer's own errors (closed, cancelled, outcome unknown) name
        // the key too; an op's errors already do.
        self.core.store.inner.writer.call_with(
            weight,
            isolation,
            t,
            move |t: &Target, w: &mut WriteCtx<'_>| op(t, w),
            |t, e| t.name(e),
        )
    }

    fn write_then<T: Send + 'static>(
        &self,
        t: Target,
        (weight, isolation): (usize, Isolation),
        held: Held,
        op: impl FnOnce(&Target, &mut WriteCtx<'_>) -> Result<T> + Send + 'static,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<Ticket> {
        self.core
            .store
            .inner
            .writer
            .submit_with(weight, isolation, t, op, move |t, r| {
                drop(held);
                done(r.map_err(|e| t.name(e)))
            })
            .map_err(|(e, t)| t.name(e))
    }

    /// Writes `value`, durably, and returns its version.
    pub fn set(&self, key: &[u8], value: Raw, opts: WriteOptions) -> Result<Version> {
        let held = self.core.store.inner.hold(value.encoded_len());
        self.set_held(key, value, opts, held)
    }

    /// [`RawBucket::set`] holding memory the caller took before it made the value.
    pub(crate) fn set_held(&self, key: &[u8], value: Raw, opts: WriteOptions, held: Held) -> Result<Version> {
        let t = self.target(key)?;
        if let Some(pg) = self.pg_blocking_write()? {
            let _held = held;
            return pg
                .block(async |pool, sent| on_postgres::set(pool, sent, &t, &value, opts).await)
                .map_err(|e| t.name(e));
        }
        self.write(t, set_cost(&value), held, move |t, w| t.op_set(w, &value, opts))
    }

    /// The completion form of [`RawBucket::set`]: returns at once, and `done`
    /// gets the result on the writer thread once the write is durable.
    pub fn set_then(
        &self,
        key: &[u8],
        value: Raw,
        opts: WriteOptions,
        done: impl FnOnce(Result<Version>) + Send + 'static,
    ) -> Result<Ticket> {
        let held = self.core.store.inner.hold(value.encoded_len());
        self.set_then_held(key, value, opts, held, done)
    }

    /// [`RawBucket::set_then`] holding memory the caller took before it made the value.
    pub(crate) fn set_then_held(
        &self,
        key: &[u8],
        value: Raw,
        opts: WriteOptions,
        held: Held,
        done: impl FnOnce(Result<Version>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        if let Some(pg) = self.pg() {
            let t2 = t.clone();
            let f = move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move {
                on_postgres::set(&pool, &sent, &t2, &value, opts).await
            };
            return pg_then(pg, &t, held, f, done);
        }
        self.write_then(t, set_cost(&value), held, move |t, w| t.op_set(w, &value, opts), done)
    }

    /// Writes `value` only if the key is absent.
    pub fn create(&self, key: &[u8], value: Raw, expiry: Option<Expiry>) -> Result<Created<Raw>> {
        // Its own value, and the largest, for the value it may find.
        let held = self.core.store.inner.hold(value.encoded_len() + MAX_VALUE);
        self.create_held(key, value, expiry, held)
    }

    /// [`RawBucket::create`] holding memory the caller took before it made the value.
    pub(crate) fn create_held(
        &self,
        key: &[u8],
        value: Raw,
        expiry: Option<Expiry>,
        held: Held,
    ) -> Result<Created<Raw>> {
        let t = self.target(key)?;
        if let Some(pg) = self.pg_blocking_write()? {
            let _held = held;
            return pg
                .block(async |pool, sent| on_postgres::create(pool, sent, &t, &value, expiry).await)
                .map_err(|e| t.name(e));
        }
        self.write(t, cost(Some(&value)), held, move |t, w| t.op_create(w, &value, expiry))
    }

    /// The completion form of [`RawBucket::create`].
    pub fn create_then(
        &self,
        key: &[u8],
        value: Raw,
        expiry: Option<Expiry>,
        done: impl FnOnce(Result<Created<Raw>>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        let held = self.core.store.inner.hold(value.encoded_len() + MAX_VALUE);
        if let Some(pg) = self.pg() {
            let t2 = t.clone();
            let f = move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move {
                on_postgres::create(&pool, &sent, &t2, &value, expiry).await
            };
            return pg_then(pg, &t, held, f, done);
        }
        self.write_then(
            t,
            cost(Some(&value)),
            held,
            move |t, w| t.op_create(w, &value, expiry),
            done,
        )
    }

    /// Reads and deletes a key in one write. `check` runs inside the write:
    /// an error from it (a value the caller cannot decode) keeps the value.
    pub fn take(
        &self,
        key: &[u8],
        if_version: Option<Version>,
        check: impl FnOnce(&Entry<Raw>) -> Result<()> + Send + 'static,
    ) -> Result<Option<Entry<Raw>>> {
        let t = self.target(key)?;
        let held = self.core.store.inner.hold(MAX_VALUE);
        if let Some(pg) = self.pg_blocking_write()? {
            let _held = held;
            let decode = |e: Entry<Raw>| {
                check(&e)?;
                Ok(e)
            };
            return pg
                .block(async |pool, sent| on_postgres::take(pool, sent, &t, if_version, decode).await)
                .map_err(|e| t.name(e));
        }
        self.write(t, cost(None), held, move |t, w| {
            t.op_take(w, if_version, |e| {
                check(&e)?;
                Ok(e)
            })
        })
    }

    /// The completion form of [`RawBucket::take`].
    pub fn take_then(
        &self,
        key: &[u8],
        if_version: Option<Version>,
        check: impl FnOnce(&Entry<Raw>) -> Result<()> + Send + 'static,
        done: impl FnOnce(Result<Option<Entry<Raw>>>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        let held = self.core.store.inner.hold(MAX_VALUE);
        if let Some(pg) = self.pg() {
            let t2 = t.clone();
            let f = move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move {
                let decode = |e: Entry<Raw>| {
                    check(&e)?;
                    Ok(e)
                };
                on_postgres::take(&pool, &sent, &t2, if_version, decode).await
            };
            return pg_then(pg, &t, held, f, done);
        }
        self.write_then(
            t,
            cost(None),
            held,
            move |t, w| {
                t.op_take(w, if_version, |e| {
                    check(&e)?;
                    Ok(e)
                })
            },
            done,
        )
    }

    /// Deletes a key; says whether a live key was there.
    pub fn delete(&self, key: &[u8], if_version: Option<Version>) -> Result<bool> {
        let t = self.target(key)?;
        if let Some(pg) = self.pg_blocking_write()? {
            return pg
                .block(async |pool, sent| on_postgres::delete(pool, sent, &t, if_version).await)
                .map_err(|e| t.name(e));
        }
        self.write(t, cost(None), Held::nothing(), move |t, w| t.op_delete(w, if_version))
    }

    /// The completion form of [`RawBucket::delete`].
    pub fn delete_then(
        &self,
        key: &[u8],
        if_version: Option<Version>,
        done: impl FnOnce(Result<bool>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        if let Some(pg) = self.pg() {
            let t2 = t.clone();
            let f = move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move {
                on_postgres::delete(&pool, &sent, &t2, if_version).await
            };
            return pg_then(pg, &t, Held::nothing(), f, done);
        }
        self.write_then(
            t,
            cost(None),
            Held::nothing(),
            move |t, w| t.op_delete(w, if_version),
            done,
        )
    }

    /// Gives a live key a new expiry, keeping its value and version; says
    /// whether a live key was there.
    pub fn expire(&self, key: &[u8], expiry: Expiry, if_version: Option<Version>) -> Result<bool> {
        let t = self.target(key)?;
        if let Some(pg) = self.pg_blocking_write()? {
            return pg
                .block(async |pool, sent| on_postgres::expire(pool, sent, &t, expiry, if_version).await)
                .map_err(|e| t.name(e));
        }
        self.write(t, cost(None), Held::nothing(), move |t, w| {
            t.op_expire(w, expiry, if_version)
        })
    }

    /// The completion form of [`RawBucket::expire`].
    pub fn expire_then(
        &self,
        key: &[u8],
        expiry: Expiry,
        if_version: Option<Version>,
        done: impl FnOnce(Result<bool>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        if let Some(pg) = self.pg() {
            let t2 = t.clone();
            let f = move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move {
                on_postgres::expire(&pool, &sent, &t2, expiry, if_version).await
            };
            return pg_then(pg, &t, Held::nothing(), f, done);
        }
        self.write_then(
            t,
            cost(None),
            Held::nothing(),
            move |t, w| t.op_expire(w, expiry, if_version),
            done,
        )
    }

    /// Removes this branch and every branch under it, for every reader at once.
    pub fn clear(&self) -> Result<()> {
        let inner = &self.core.store.inner;
        inner.check_open()?;
        if let Some(pg) = self.pg_blocking_write()? {
            let named = |e: Error| e.at(&self.core.name, self.branch.show_with(None));
            return pg
                .block(async |pool, sent| on_postgres::clear(pool, sent, &self.core, &self.branch).await)
                .map_err(named);
        }
        let (core, branch) = (self.core.clone(), self.branch.clone());
        inner
            .writer
            .call(0, move |w: &mut WriteCtx<'_>| op_clear(&core, &branch, w, false))
    }

    /// The completion form of [`RawBucket::clear`].
    pub fn clear_then(&self, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<Ticket> {
        let inner = &self.core.store.inner;
        inner.check_open()?;
        let (core, branch) = (self.core.clone(), self.branch.clone());
        if let Some(pg) = self.pg() {
            let (c2, b2) = (core.clone(), branch.clone());
            let f = move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move {
                on_postgres::clear(&pool, &sent, &c2, &b2).await
            };
            let named = move |r: Result<()>| done(r.map_err(|e| e.at(&core.name, branch.show_with(None))));
            pg.spawn(f, named)?;
            return Ok(Ticket::finished());
        }
        inner
            .writer
            .submit(0, move |w: &mut WriteCtx<'_>| op_clear(&core, &branch, w, false), done)
    }
}
