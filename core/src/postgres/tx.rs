//! A caller's transaction on PostgreSQL: `tx` (all or nothing, across
//! buckets) and `view` (one read snapshot), each on one connection held
//! from its start to its end.
//!
//! A `tx` runs at `SERIALIZABLE`: another server's transaction that
//! changes what this one read or wrote makes one of them fail with
//! `Conflict` and write nothing, so transactions behave as if they ran one
//! at a time, as they do on kv.db. A view is `REPEATABLE READ READ ONLY`.
//! Both read the clock once, when they begin, and judge every key on it.
//! Writes lock the key's row and let the core decide on it (the same
//! decisions as a write of its own, [`super::cells::Change`]); nothing
//! commits until the caller's closure returns.

use std::cell::Cell as Flag;

use super::cells::{self, Change, Found};
use super::errors::{self, Sent};
use super::pool::Owned;
use super::{PgStore, SentFlag};
use crate::error::{Error, Result};
use crate::storage::{Cell, ScanRow};

const BEGIN_TX: &str = "BEGIN ISOLATION LEVEL SERIALIZABLE";
const BEGIN_VIEW: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/// One open transaction or view.
pub(crate) struct PgTx {
    store: crate::Store,
    held: Option<Owned>,
    /// The clock every read and write of the transaction judges keys on.
    pub(crate) now: i64,
    /// A statement failed: PostgreSQL refuses the rest of the transaction.
    broken: Flag<bool>,
}

fn broken_error() -> Error {
    Error::new(
        crate::ErrorKind::Io,
        "a statement of this transaction failed before, so PostgreSQL refuses the rest of it; it rolls back \
         and nothing of it is written",
    )
}

impl PgTx {
    fn pg(&self) -> &PgStore {
        self.store.inner.postgres().expect("a PostgreSQL store")
    }

    /// Begins a transaction (`read_only`: a view), on the store's test
    /// clock `clock` or the database's.
    pub(crate) fn begin(store: &crate::Store, clock: Option<i64>, read_only: bool) -> Result<PgTx> {
        let pg = store.inner.postgres().expect("a PostgreSQL store");
        let held = pg.block(async |pool, _| {
            let held = pool.exclusive_owned().await?;
            let c = &held.conn;
            let fail = |e| errors::failed(&pool.shown, &e, Sent::No);
            let args: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&clock];
            let (_, now) = futures_util::try_join!(
                c.client.batch_execute(if read_only { BEGIN_VIEW } else { BEGIN_TX }),
                c.client.query_one(&c.st.now, &args),
            )
            .map_err(fail)?;
            Ok((held, now.get::<_, i64>(0)))
        })?;
        Ok(PgTx {
            store: store.clone(),
            now: held.1,
            held: Some(held.0),
            broken: Flag::new(false),
        })
    }

    /// Runs statements on the transaction's connection, within the deadline.
    fn on<T>(&self, f: impl AsyncFnOnce(&super::Pool, &super::pool::Conn) -> Result<T>) -> Result<T> {
        if self.broken.get() {
            return Err(broken_error());
        }
        let conn = &self.held.as_ref().expect("held until it ends").conn;
        let r = self.pg().block(async |pool, _| f(pool, conn).await);
        // Only statements fail here, and PostgreSQL refuses the rest of a
        // transaction after one did.
        if r.is_err() {
            self.broken.set(true);
        }
        r
    }

    /// A live row as the transaction sees it.
    pub(crate) fn get(&self, bucket: i64, path: &[u8]) -> Result<Option<Cell>> {
        let now = Some(self.now);
        self.on(async |pool, c| Ok(cells::get_on(pool, c, bucket, path, now).await?.map(|(cell, _)| cell)))
    }

    /// Live rows with paths in `(after, hi)`, as [`cells::scan`].
    pub(crate) fn scan(
        &self,
        bucket: i64,
        range: (&[u8], &[u8]),
        limit: usize,
        max_bytes: usize,
    ) -> Result<(Vec<ScanRow>, bool)> {
        let now = Some(self.now);
        self.on(async |pool, c| cells::scan_on(pool, c, bucket, range, now, limit, max_bytes).await)
    }

    /// A write that reads its key first: locks the row, lets `decide`
    /// choose on `(now, row)`, applies the change. Returns what `decide`
    /// returned and, for a `Put`, the new version. Nothing commits yet.
    pub(crate) fn write<R>(
        &self,
        bucket: i64,
        path: &[u8],
        mut decide: impl FnMut(i64, Option<&Found>) -> Result<(Change, R)>,
    ) -> Result<(R, Option<i64>)> {
        let now = self.now;
        let row = self.on(async |pool, c| {
            c.client
                .query_opt(&c.st.lock, &[&bucket, &path])
                .await
                .map_err(|e| errors::failed(&pool.shown, &e, Sent::No))
        })?;
        let found = row.as_ref().map(|r| {
            let cell = cells::cell_of(r);
            let live = cell.expires.is_none_or(|e| e > now);
            Found { cell, live }
        });
        // A refusal of the core's rules sends nothing: the transaction goes on.
        let (change, out) = decide(now, found.as_ref())?;
        let exists = found.is_some();
        let version = self.on(async |pool, c| {
            let fail = |e| errors::failed(&pool.shown, &e, Sent::No);
            match &change {
                Change::Keep => Ok(None),
                Change::Put { value, expires } => {
                    let (int, bytes) = cells::columns(value);
                    let st = if exists { &c.st.update } else { &c.st.insert };
                    let r = c
                        .client
                        .query_opt(st, &[&bucket, &path, expires, &int, &bytes])
                        .await
                        .map_err(fail)?;
                    match r {
                        Some(r) => Ok(Some(r.get::<_, i64>(0))),
                        None => Err(Error::conflict(
                            "another transaction created the key meanwhile; nothing of this transaction was \
                             written: run it again",
                        )),
                    }
                }
                Change::Delete => c
                    .client
                    .execute(&c.st.delete, &[&bucket, &path])
                    .await
                    .map(|_| None)
                    .map_err(fail),
                Change::Expires(e) => c
                    .client
                    .execute(&c.st.set_expires, &[&bucket, &path, e])
                    .await
                    .map(|_| None)
                    .map_err(fail),
            }
        });
        Ok((out, version?))
    }

    /// Deletes every row with a path in `[lo, hi)`.
    pub(crate) fn clear(&self, bucket: i64, lo: &[u8], hi: &[u8]) -> Result<()> {
        self.on(async |pool, c| {
            c.client
                .execute(&c.st.subtree_delete, &[&bucket, &lo, &hi])
                .await
                .map(|_| ())
                .map_err(|e| errors::failed(&pool.shown, &e, Sent::No))
        })
    }

    /// Commits; a `COMMIT` sent and not answered is `OutcomeUnknown`.
    pub(crate) fn commit(mut self) -> Result<()> {
        if self.broken.get() {
            return Err(broken_error());
        }
        let held = self.held.take().expect("held until it ends");
        let done = self.pg().block(async |pool, sent: &SentFlag| {
            sent.commit_sent();
            held.conn
                .client
                .execute(&held.conn.st.commit, &[])
                .await
                .map_err(|e| errors::failed(&pool.shown, &e, Sent::Commit))
        });
        if done.is_ok() {
            self.pg().pool().give_back(held);
        }
        done.map(|_| ())
    }

    /// Rolls back; the connection goes back to the pool if it answered.
    pub(crate) fn rollback(mut self) {
        let held = self.held.take().expect("held until it ends");
        let done = self.pg().block(async |_, _| {
            held.conn
                .client
                .execute(&held.conn.st.rollback, &[])
                .await
                .map_err(|_| Error::closed())
        });
        if done.is_ok() {
            self.pg().pool().give_back(held);
        }
    }
}
