//! Transactions (KV-16): `tx` writes several handles all or nothing; `view`
//! reads one snapshot for at most [`crate::VIEW_LIMIT`]. The other kinds'
//! handles inside a transaction are in `tx_kinds.rs`.
//!
//! A `tx` holds the write connection alone, in the caller's thread, for as
//! long as its closure runs: keep it short. Its writes run the same
//! functions a group runs, inline. Handles borrow the transaction, so a
//! handle cannot outlive it.
//!
//! On a PostgreSQL store a `tx` is a `SERIALIZABLE` transaction and a view
//! a `REPEATABLE READ READ ONLY` one, each on a connection of its own
//! ([`crate::postgres::tx`]); the buckets' calls in them make the same
//! decisions as on kv.db, and so do counters, quotas and once's answers
//! (`tx_kinds.rs`).

use std::cell::RefCell;

use crate::binding_tx::BindingTx;
use crate::bucket::{Bucket, typed};
use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::in_tx::InTx;
use crate::key::AsKey;
use crate::open_views::{view_expired, view_past_limit};
use crate::postgres::tx::PgTx;
use crate::raw::{MAX_VALUE, Raw};
use crate::store::Store;
use crate::values::pg_in_tx;
use crate::values::{
    self, Created, Entry, Expiry, ListOptions, PAGE_HOLD, Page, RawBucket, Target, Version, WriteOptions,
};
use rusqlite::Connection;

/// An open transaction: see [`Store::tx`].
pub struct Tx<'a, 'c> {
    store: &'a Store,
    on: TxOn<'a, 'c>,
}

/// What a transaction runs on.
enum TxOn<'a, 'c> {
    /// The store's write connection to kv.db.
    Sqlite(RefCell<&'a mut WriteCtx<'c>>),
    /// A connection to PostgreSQL of its own.
    Postgres(&'a PgTx),
}

/// An open read snapshot: see [`Store::view`].
pub struct View<'a> {
    store: &'a Store,
    on: ViewOn<'a>,
    now: i64,
}

/// What a view reads.
enum ViewOn<'a> {
    Sqlite(&'a Connection),
    Postgres(&'a PgTx),
}

impl Store {
    /// Runs `f` in one transaction: every write in it commits together, or,
    /// if `f` returns an error or panics, none does (a panic goes on to the
    /// caller once the transaction rolled back, and the store keeps
    /// writing). Buckets join with `tx.with`, durable counters with
    /// `tx.counters`, quotas with `tx.quota` and once answers with `tx.once`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = tinystore::Store::open(dir.path())?;
    /// let stock = store.bucket::<i64>("stock").open()?;
    /// let orders = store.bucket::<String>("orders").open()?;
    /// stock.set("apples", &1)?;
    /// store.tx(|tx| {
    ///     let left = tx.with(&stock).get("apples")?.unwrap_or(0);
    ///     tx.with(&stock).set("apples", &(left - 1))?;
    ///     tx.with(&orders).set("o-1", &"apples".to_string())?;
    ///     Ok(())
    /// })?;
    /// assert_eq!(stock.get("apples")?, Some(0));
    /// # Ok::<(), tinystore::Error>(())
    /// ```
    pub fn tx<R>(&self, f: impl FnOnce(&Tx<'_, '_>) -> Result<R>) -> Result<R> {
        self.inner.check_open()?;
        if self.inner.postgres().is_some() {
            if self.inner.writer.held_here() {
                return Err(crate::error::nested_tx_error());
            }
            let ptx = PgTx::begin(self, self.test_clock_millis(), false)?;
            let tx = Tx {
                store: self,
                on: TxOn::Postgres(&ptx),
            };
            // A panic drops the connection mid-transaction: PostgreSQL rolls back.
            return match self.inner.writer.marked_in_tx(|| f(&tx)) {
                Ok(r) => ptx.commit().map(|()| r),
                Err(e) => {
                    ptx.rollback();
                    Err(e)
                }
            };
        }
        self.inner.writer.exclusive(|ctx| {
            let tx = Tx {
                store: self,
                on: TxOn::Sqlite(RefCell::new(ctx)),
            };
            f(&tx)
        })
    }

    /// Runs `f` on one read snapshot: every read in it sees the file as it
    /// was at its first read, for at most [`crate::VIEW_LIMIT`]; a read
    /// after that is `Limit`. A view cannot write. It reads on one of the
    /// store's reader connections.
    pub fn view<R>(&self, f: impl FnOnce(&View<'_>) -> Result<R>) -> Result<R> {
        self.inner.check_open()?;
        let now = self.inner.clock.now_millis();
        if self.inner.postgres().is_some() {
            let ptx = PgTx::begin(self, self.test_clock_millis(), true)?;
            let r = f(&View {
                store: self,
                on: ViewOn::Postgres(&ptx),
                now,
            });
            ptx.rollback();
            return r;
        }
        self.inner.readers.with(|conn| {
            crate::storage::in_snapshot(conn, || {
                f(&View {
                    store: self,
                    on: ViewOn::Sqlite(conn),
                    now,
                })
            })
        })
    }

    /// Runs `f` on the transaction of `session`, on this thread: what
    /// [`crate::aio::AsyncStore::tx`] runs once the writer's turn came. The
    /// thread is marked inside a `tx` while it runs, as in [`Store::tx`].
    pub(crate) fn tx_in_session<R>(&self, session: &BindingTx, f: impl FnOnce(&Tx<'_, '_>) -> Result<R>) -> Result<R> {
        let mut f = Some(f);
        self.inner.writer.marked_in_tx(|| {
            let on_pg = session.pg(|ptx| match f.take() {
                Some(f) => f(&Tx {
                    store: self,
                    on: TxOn::Postgres(ptx),
                }),
                None => Err(Error::closed()),
            });
            if let Some(r) = on_pg {
                return r;
            }
            session.run(|ctx| match f.take() {
                Some(f) => f(&Tx {
                    store: self,
                    on: TxOn::Sqlite(RefCell::new(ctx)),
                }),
                None => Err(Error::closed()),
            })
        })
    }

    /// The test clock, passed to PostgreSQL; `None` lets its clock judge.
    fn test_clock_millis(&self) -> Option<i64> {
        let clock = &self.inner.clock;
        clock.is_manual().then(|| clock.now_millis())
    }
}

fn same_store(a: &Store, b: &RawBucket) -> Result<()> {
    crate::in_tx::same_store(a, b.store(), b.name())
}

impl<'a, 'c> Tx<'a, 'c> {
    /// The bucket inside this transaction.
    pub fn with<'t, T>(&'t self, bucket: &'t Bucket<T>) -> TxBucket<'t, 'a, 'c, T>
    where
        T: Send + 'static,
    {
        TxBucket { tx: self, bucket }
    }

    /// Runs `f` with the transaction's write context, for a bucket's call
    /// on kv.db; a bucket's call on PostgreSQL takes [`Tx::pg`] instead.
    pub(crate) fn run<R>(&self, f: impl FnOnce(&mut WriteCtx<'_>) -> Result<R>) -> Result<R> {
        self.run_kind(|on| match on {
            InTx::Sqlite(w) => f(w),
            InTx::Postgres(_) => Err(crate::postgres::unsupported("this call inside a transaction")),
        })
    }

    /// Runs `f` on what the transaction runs on: kv.db's write context or
    /// the PostgreSQL transaction. The other kinds' calls take this.
    pub(crate) fn run_kind<R>(&self, f: impl FnOnce(InTx<'_, '_>) -> Result<R>) -> Result<R> {
        let ctx = match &self.on {
            TxOn::Sqlite(ctx) => ctx,
            TxOn::Postgres(p) => return f(InTx::Postgres(p)),
        };
        let mut ctx = ctx
            .try_borrow_mut()
            .map_err(|_| Error::invalid("a transaction is already busy"))?;
        f(InTx::Sqlite(&mut ctx))
    }

    /// The PostgreSQL transaction, on a PostgreSQL store.
    fn pg(&self) -> Option<&PgTx> {
        match &self.on {
            TxOn::Sqlite(_) => None,
            TxOn::Postgres(p) => Some(p),
        }
    }

    /// The store of this transaction.
    pub fn store(&self) -> &Store {
        self.store
    }
}

/// A bucket inside a transaction.
pub struct TxBucket<'t, 'a, 'c, T> {
    tx: &'t Tx<'a, 'c>,
    bucket: &'t Bucket<T>,
}

impl<T: Send + 'static> TxBucket<'_, '_, '_, T> {
    fn target(&self, key: impl AsKey) -> Result<Target> {
        let raw = self.bucket.raw();
        same_store(self.tx.store, raw)?;
        Target::new(&raw.core, &raw.branch, &key.key_bytes())
    }

    /// The value of a live key, as this transaction sees it.
    pub fn get(&self, key: impl AsKey) -> Result<Option<T>> {
        Ok(self.entry(key)?.map(|e| e.value))
    }

    /// The value with its version and expiry.
    pub fn entry(&self, key: impl AsKey) -> Result<Option<Entry<T>>> {
        let t = self.target(key)?;
        let _held = t.hold_now(MAX_VALUE, "a read")?;
        let entry = match self.tx.pg() {
            Some(p) => pg_in_tx::entry(p, &t)?,
            None => self.tx.run(|w| t.read(w.conn, w.now))?.map(|c| t.entry(c)),
        };
        entry
            .map(|e| typed(&*self.bucket.codec, e).map_err(|e| t.name(e)))
            .transpose()
    }

    /// Whether a live key is there.
    pub fn has(&self, key: impl AsKey) -> Result<bool> {
        Ok(self.entry(key)?.is_some())
    }

    /// Writes a value.
    pub fn set(&self, key: impl AsKey, value: &T) -> Result<Version> {
        self.set_with(key, value, WriteOptions::default())
    }

    /// Writes a value with a call's own expiry or version check.
    pub fn set_with(&self, key: impl AsKey, value: &T, opts: WriteOptions) -> Result<Version> {
        let t = self.target(key)?;
        let mut held = t.hold_now(MAX_VALUE, "a write")?;
        let raw = self.bucket.codec.encode_row(value).map_err(|e| t.name(e))?;
        held.shrink_to(raw.encoded_len());
        if let Some(p) = self.tx.pg() {
            return pg_in_tx::set(p, &t, &raw, opts);
        }
        self.tx.run(|w| t.op_set(w, &raw, opts))
    }

    /// Writes a value if the key is absent; says whether it did.
    pub fn create(&self, key: impl AsKey, value: &T) -> Result<bool> {
        Ok(self.create_entry(key, value)?.written())
    }

    /// Writes a value if the key is absent, or gives the entry found: either
    /// way the key's version and expiry, as [`crate::KeyCall::create_entry`].
    pub fn create_entry(&self, key: impl AsKey, value: &T) -> Result<Created<T>> {
        let t = self.target(key)?;
        let mut held = t.hold_now(2 * MAX_VALUE, "a create")?;
        let raw: Raw = self.bucket.codec.encode_row(value).map_err(|e| t.name(e))?;
        held.shrink_to(raw.encoded_len() + MAX_VALUE);
        let created = match self.tx.pg() {
            Some(p) => pg_in_tx::create(p, &t, &raw, None)?,
            None => self.tx.run(|w| t.op_create(w, &raw, None))?,
        };
        created.try_map(|e| typed(&*self.bucket.codec, e).map_err(|e| t.name(e)))
    }

    /// Reads and deletes a key.
    pub fn take(&self, key: impl AsKey) -> Result<Option<T>> {
        let t = self.target(key)?;
        let _held = t.hold_now(MAX_VALUE, "a take")?;
        let codec = self.bucket.codec.clone();
        if let Some(p) = self.tx.pg() {
            return pg_in_tx::take(p, &t, None, |e| codec.decode_row(&e.value));
        }
        self.tx.run(|w| t.op_take(w, None, |e| codec.decode_row(&e.value)))
    }

    /// Deletes a key.
    pub fn delete(&self, key: impl AsKey) -> Result<bool> {
        let t = self.target(key)?;
        if let Some(p) = self.tx.pg() {
            return pg_in_tx::delete(p, &t, None);
        }
        self.tx.run(|w| t.op_delete(w, None))
    }

    /// Gives a live key a new expiry.
    pub fn expire(&self, key: impl AsKey, expiry: impl Into<Expiry>) -> Result<bool> {
        let t = self.target(key)?;
        let e = expiry.into();
        if let Some(p) = self.tx.pg() {
            return pg_in_tx::expire(p, &t, e, None);
        }
        self.tx.run(|w| t.op_expire(w, e, None))
    }

    /// Clears the branch; more than 10,000 keys is `Limit` inside a transaction.
    pub fn clear(&self) -> Result<()> {
        let raw = self.bucket.raw();
        same_store(self.tx.store, raw)?;
        if let Some(p) = self.tx.pg() {
            return pg_in_tx::clear(p, &raw.core, &raw.branch);
        }
        self.tx.run(|w| values::op_clear(&raw.core, &raw.branch, w, true))
    }
}

impl<'a> View<'a> {
    /// The bucket inside this snapshot, for reads.
    pub fn with<'v, T>(&'v self, bucket: &'v Bucket<T>) -> ViewBucket<'v, 'a, T>
    where
        T: Send + 'static,
    {
        ViewBucket { view: self, bucket }
    }
}

/// A bucket inside a read snapshot. It has no writes. A read after the
/// view has been open for [`crate::VIEW_LIMIT`] is `Limit`.
pub struct ViewBucket<'v, 'a, T> {
    view: &'v View<'a>,
    bucket: &'v Bucket<T>,
}

impl<T: Send + 'static> ViewBucket<'_, '_, T> {
    fn check(&self) -> Result<&RawBucket> {
        let raw = self.bucket.raw();
        same_store(self.view.store, raw)?;
        if view_past_limit(self.view.now, self.view.store.inner.clock.now_millis()) {
            return Err(view_expired().in_bucket(raw.name()));
        }
        Ok(raw)
    }

    /// The value of a live key in this snapshot. Renews nothing.
    pub fn get(&self, key: impl AsKey) -> Result<Option<T>> {
        Ok(self.entry(key)?.map(|e| e.value))
    }

    /// The value with its version and expiry in this snapshot.
    pub fn entry(&self, key: impl AsKey) -> Result<Option<Entry<T>>> {
        let raw = self.check()?;
        let t = Target::new(&raw.core, &raw.branch, &key.key_bytes())?;
        let _held = t.hold_now(MAX_VALUE, "a read")?;
        let entry = match &self.view.on {
            ViewOn::Sqlite(conn) => t.read(conn, self.view.now)?.map(|c| t.entry(c)),
            ViewOn::Postgres(p) => pg_in_tx::entry(p, &t)?,
        };
        match entry {
            Some(e) => Ok(Some(typed(&*self.bucket.codec, e).map_err(|e| t.name(e))?)),
            None => Ok(None),
        }
    }

    /// Whether a live key is there in this snapshot.
    pub fn has(&self, key: impl AsKey) -> Result<bool> {
        Ok(self.entry(key)?.is_some())
    }

    /// A page of the branch's own keys in this snapshot.
    pub fn list(&self, opts: &ListOptions) -> Result<Page<T>> {
        let raw = self.check()?;
        let _held = raw.hold_now(PAGE_HOLD)?;
        let page = match &self.view.on {
            ViewOn::Sqlite(conn) => values::list_on(&raw.core, &raw.branch, conn, self.view.now, opts)?,
            ViewOn::Postgres(p) => pg_in_tx::list(p, &raw.core, &raw.branch, opts)?,
        };
        let mut entries = Vec::with_capacity(page.entries.len());
        for e in page.entries {
            let k = e.key.0.clone();
            entries.push(typed(&*self.bucket.codec, e).map_err(|e| raw.named(&k, e))?);
        }
        Ok(Page {
            entries,
            next: page.next,
        })
    }

    /// Every key of the branch in this snapshot, page by page.
    pub fn all(&self) -> impl Iterator<Item = Result<Entry<T>>> + '_ {
        values::Pages::new(move |opts| self.list(opts))
    }
}
