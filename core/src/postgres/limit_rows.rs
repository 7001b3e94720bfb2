//! The statements of the limit store on PostgreSQL: its entries in
//! `tinystore_limits`, shared by every server, and the count of each limit
//! store's entries in `tinystore_limit_counts`, moved in the same
//! transaction as the rows it counts. The rules (versions, the bound, the
//! events) are the core's (`crate::limit_store`); these only run statements.
//!
//! An update is one transaction: the keys' rows locked (`FOR UPDATE`) and
//! the clock read after the locks were granted, then, when the core found
//! every key at the version read, the writes, the count moved, `COMMIT`. A
//! key that had no row is inserted `ON CONFLICT DO NOTHING`: a racer that
//! inserted it first makes the update run `apply` again, as a version that
//! moved does.
//!
//! The statements are prepared on each connection the first time a limit
//! store uses it ([`statements`]), not when it opens: a connection of the
//! inspector or of a copy may be to a database at a schema older than the
//! limit store's tables, where preparing them would fail.

use tokio_postgres::{Client, Row, Statement};

use super::SentFlag;
use super::errors::{self, Sent};
use super::pool::{Conn, Pool};
use crate::error::Result;

/// The schema's version 4: the limit store's entries and counts. Idempotent.
pub const SCHEMA_V4: &str = "
CREATE TABLE IF NOT EXISTS tinystore_limits (
    store bigint NOT NULL,
    path bytea NOT NULL,
    version bigint NOT NULL,
    expires bigint NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (store, path)) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02);
CREATE INDEX IF NOT EXISTS tinystore_limits_expires ON tinystore_limits (expires);
CREATE TABLE IF NOT EXISTS tinystore_limit_counts (
    store bigint PRIMARY KEY,
    entries bigint NOT NULL);
";

/// The clock and the live rows of some keys.
const READ: &str = "WITH n AS (SELECT tinystore_now($3) AS now)
    SELECT n.now, l.path, l.version, l.expires, l.value FROM n LEFT JOIN tinystore_limits l
    ON l.store = $1 AND l.path = ANY($2) AND l.expires > n.now";
/// The rows of some keys, dead or live, locked for the transaction.
const LOCK: &str = "SELECT path, version, expires, value FROM tinystore_limits
    WHERE store = $1 AND path = ANY($2) ORDER BY path FOR UPDATE";
const COUNT: &str = "SELECT entries FROM tinystore_limit_counts WHERE store = $1";
const COUNT_LOCK: &str = "SELECT entries FROM tinystore_limit_counts WHERE store = $1 FOR UPDATE";
/// Makes the count row of a limit store, once.
const COUNT_MAKE: &str = "INSERT INTO tinystore_limit_counts (store, entries) VALUES ($1, 0) ON CONFLICT DO NOTHING";
/// Moves the count by `$2` rows, never below zero.
const COUNT_MOVE: &str = "INSERT INTO tinystore_limit_counts AS c (store, entries) VALUES ($1, greatest($2::bigint, 0))
    ON CONFLICT (store) DO UPDATE SET entries = greatest(c.entries + $2::bigint, 0)";
const INSERT: &str = "INSERT INTO tinystore_limits (store, path, version, expires, value)
    VALUES ($1, $2, nextval('tinystore_versions'), $3, $4) ON CONFLICT DO NOTHING RETURNING version";
const UPDATE: &str = "UPDATE tinystore_limits SET version = nextval('tinystore_versions'), expires = $3, value = $4
    WHERE store = $1 AND path = $2";
const DELETE: &str = "DELETE FROM tinystore_limits WHERE store = $1 AND path = $2";
/// A batch of one limit store's expired rows, its count moved by as many,
/// in one statement; answers the paths deleted and the count after.
const SWEEP_OWN: &str = "WITH gone AS (
    DELETE FROM tinystore_limits WHERE store = $1 AND path = ANY (ARRAY(
        SELECT path FROM tinystore_limits WHERE store = $1 AND expires <= (SELECT tinystore_now($2))
        ORDER BY expires LIMIT $3))
    RETURNING path),
up AS (
    UPDATE tinystore_limit_counts SET entries = greatest(entries - (SELECT count(*) FROM gone), 0)
    WHERE store = $1 RETURNING entries)
SELECT coalesce(array_agg(gone.path), '{}'), (SELECT entries FROM up) FROM gone";
/// A batch of every limit store's expired rows, each count moved by its
/// own, in one statement: the store's maintenance. Answers the rows deleted.
const SWEEP_ALL: &str = "WITH gone AS (
    DELETE FROM tinystore_limits WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM tinystore_limits WHERE expires <= (SELECT tinystore_now($1)) ORDER BY expires LIMIT $2))
    RETURNING store),
per AS (SELECT store, count(*) AS n FROM gone GROUP BY store),
up AS (
    UPDATE tinystore_limit_counts c SET entries = greatest(c.entries - per.n, 0) FROM per
    WHERE c.store = per.store RETURNING 1)
SELECT coalesce(sum(n), 0)::bigint FROM per";

/// The prepared statements of the limit store, one set per connection.
pub(crate) struct Statements {
    read: Statement,
    lock: Statement,
    count: Statement,
    count_lock: Statement,
    count_make: Statement,
    count_move: Statement,
    insert: Statement,
    update: Statement,
    delete: Statement,
    sweep_own: Statement,
    sweep_all: Statement,
}

async fn prepare(c: &Client) -> std::result::Result<Statements, tokio_postgres::Error> {
    let texts = [
        READ, LOCK, COUNT, COUNT_LOCK, COUNT_MAKE, COUNT_MOVE, INSERT, UPDATE, DELETE, SWEEP_OWN, SWEEP_ALL,
    ];
    let st = futures_util::future::try_join_all(texts.iter().map(|t| c.prepare(t))).await?;
    let mut st = st.into_iter();
    let mut next = || st.next().expect("one statement per text");
    Ok(Statements {
        read: next(),
        lock: next(),
        count: next(),
        count_lock: next(),
        count_make: next(),
        count_move: next(),
        insert: next(),
        update: next(),
        delete: next(),
        sweep_own: next(),
        sweep_all: next(),
    })
}

/// The limit store's statements on `c`, prepared at its first use there.
async fn statements<'c>(pool: &Pool, c: &'c Conn) -> Result<&'c Statements> {
    c.limit_st
        .get_or_try_init(|| prepare(&c.client))
        .await
        .map_err(fail(pool, Sent::No))
}

/// One entry row as a statement found it.
#[derive(Clone, Debug)]
pub(crate) struct LimitRow {
    pub path: Vec<u8>,
    pub version: i64,
    pub expires: i64,
    pub value: String,
}

fn row_of(r: &Row, from: usize) -> Option<LimitRow> {
    let path: Option<Vec<u8>> = r.get(from);
    Some(LimitRow {
        path: path?,
        version: r.get(from + 1),
        expires: r.get(from + 2),
        value: r.get(from + 3),
    })
}

fn fail(pool: &Pool, sent: Sent) -> impl Fn(tokio_postgres::Error) -> crate::Error + '_ {
    move |e| errors::failed(&pool.shown, &e, sent)
}

/// Makes the count row of the limit store `store` if it has none.
pub(crate) async fn make_count(pool: &Pool, store: i64) -> Result<()> {
    let c = pool.shared().await?;
    let st = statements(pool, &c).await?;
    c.client
        .execute(&st.count_make, &[&store])
        .await
        .map_err(fail(pool, Sent::No))?;
    Ok(())
}

/// The clock and the live rows among `paths` of `store`, on the test clock
/// `now` or the database's.
pub(crate) async fn read(pool: &Pool, store: i64, paths: &[Vec<u8>], now: Option<i64>) -> Result<(i64, Vec<LimitRow>)> {
    let c = pool.shared().await?;
    let st = statements(pool, &c).await?;
    let rows = c
        .client
        .query(&st.read, &[&store, &paths, &now])
        .await
        .map_err(fail(pool, Sent::No))?;
    let clock = rows.first().map_or(0, |r| r.get(0));
    Ok((clock, rows.iter().filter_map(|r| row_of(r, 1)).collect()))
}

/// The count of `store`'s entries (0 before its first).
pub(crate) async fn count(pool: &Pool, store: i64) -> Result<usize> {
    let c = pool.shared().await?;
    let st = statements(pool, &c).await?;
    let r = c
        .client
        .query_opt(&st.count, &[&store])
        .await
        .map_err(fail(pool, Sent::No))?;
    Ok(r.map_or(0, |r| r.get::<_, i64>(0).max(0) as usize))
}

/// One update's transaction, on a connection of its own. The core drives
/// it: [`UpdateTx::begin`], then the writes it decided, then
/// [`UpdateTx::commit`]; dropped without a commit, its connection goes
/// with it and PostgreSQL rolls it back.
pub(crate) struct UpdateTx<'p> {
    pool: &'p Pool,
    held: super::pool::Held<'p>,
    store: i64,
}

impl<'p> UpdateTx<'p> {
    /// Begins: locks the rows of `paths` (dead or live), then reads the
    /// clock and the count (one round trip). Answers the clock, the rows
    /// and the count as the transaction began.
    pub(crate) async fn begin(
        pool: &'p Pool,
        store: i64,
        paths: &[Vec<u8>],
        now: Option<i64>,
    ) -> Result<(UpdateTx<'p>, i64, Vec<LimitRow>, usize)> {
        let held = pool.exclusive().await?;
        let c = held.conn();
        let st = statements(pool, c).await?;
        use tokio_postgres::types::ToSql;
        let lock: [&(dyn ToSql + Sync); 2] = [&store, &paths];
        let (clock_args, count_args): ([&(dyn ToSql + Sync); 1], [&(dyn ToSql + Sync); 1]) = ([&now], [&store]);
        let (_, rows, clock, count) = futures_util::try_join!(
            c.client.execute(&c.st.begin, &[]),
            c.client.query(&st.lock, &lock),
            c.client.query_one(&c.st.now, &clock_args),
            c.client.query_opt(&st.count, &count_args),
        )
        .map_err(fail(pool, Sent::No))?;
        let rows = rows.iter().filter_map(|r| row_of(r, 0)).collect();
        let count = count.map_or(0, |r| r.get::<_, i64>(0).max(0) as usize);
        Ok((UpdateTx { pool, held, store }, clock.get(0), rows, count))
    }

    fn c(&self) -> &Conn {
        self.held.conn()
    }

    /// The statements of this transaction's connection, prepared by `begin`.
    async fn st(&self) -> Result<&Statements> {
        statements(self.pool, self.c()).await
    }

    /// Locks the count row, for an update that adds rows: the bound is
    /// judged on the count no other update can move meanwhile.
    pub(crate) async fn lock_count(&self) -> Result<usize> {
        let r = self
            .c()
            .client
            .query_opt(&self.st().await?.count_lock, &[&self.store])
            .await
            .map_err(fail(self.pool, Sent::No))?;
        Ok(r.map_or(0, |r| r.get::<_, i64>(0).max(0) as usize))
    }

    /// Deletes a batch of the store's expired rows and moves its count by
    /// as many; answers the paths deleted and the count after.
    pub(crate) async fn sweep_own(&self, now: i64, batch: i64) -> Result<(Vec<Vec<u8>>, usize)> {
        sweep_own_on(self.pool, self.c(), self.store, Some(now), batch).await
    }

    /// Writes a new row; `false` when a racer inserted the key first.
    pub(crate) async fn insert(&self, path: &[u8], expires: i64, value: &str) -> Result<bool> {
        let r = self
            .c()
            .client
            .query_opt(&self.st().await?.insert, &[&self.store, &path, &expires, &value])
            .await
            .map_err(fail(self.pool, Sent::No))?;
        Ok(r.is_some())
    }

    /// Rewrites a row this transaction locked.
    pub(crate) async fn update(&self, path: &[u8], expires: i64, value: &str) -> Result<()> {
        self.c()
            .client
            .execute(&self.st().await?.update, &[&self.store, &path, &expires, &value])
            .await
            .map_err(fail(self.pool, Sent::No))?;
        Ok(())
    }

    pub(crate) async fn delete(&self, path: &[u8]) -> Result<()> {
        self.c()
            .client
            .execute(&self.st().await?.delete, &[&self.store, &path])
            .await
            .map_err(fail(self.pool, Sent::No))?;
        Ok(())
    }

    /// Moves the count by `delta` rows, never below zero.
    pub(crate) async fn move_count(&self, delta: i64) -> Result<()> {
        self.c()
            .client
            .execute(&self.st().await?.count_move, &[&self.store, &delta])
            .await
            .map_err(fail(self.pool, Sent::No))?;
        Ok(())
    }

    /// Commits; a `COMMIT` sent and not answered is `OutcomeUnknown`.
    pub(crate) async fn commit(self, sent: &SentFlag) -> Result<()> {
        sent.commit_sent();
        let c = self.c();
        c.client
            .execute(&c.st.commit, &[])
            .await
            .map_err(fail(self.pool, Sent::Commit))?;
        self.held.release();
        Ok(())
    }

    /// Rolls back and gives the connection back.
    pub(crate) async fn rollback(self) -> Result<()> {
        let c = self.c();
        c.client
            .execute(&c.st.rollback, &[])
            .await
            .map_err(fail(self.pool, Sent::No))?;
        self.held.release();
        Ok(())
    }
}

async fn sweep_own_on(
    pool: &Pool,
    c: &Conn,
    store: i64,
    now: Option<i64>,
    batch: i64,
) -> Result<(Vec<Vec<u8>>, usize)> {
    let st = statements(pool, c).await?;
    let r = c
        .client
        .query_one(&st.sweep_own, &[&store, &now, &batch])
        .await
        .map_err(fail(pool, Sent::Commit))?;
    let gone: Vec<Vec<u8>> = r.get(0);
    let after: Option<i64> = r.get(1);
    Ok((gone, after.unwrap_or(0).max(0) as usize))
}

/// The limit store's `sweep`: batches of its own expired rows, each a
/// statement that commits by itself with the count moved. Answers the rows
/// deleted and the count after.
pub(crate) async fn sweep(
    pool: &Pool,
    sent: &SentFlag,
    store: i64,
    now: Option<i64>,
    batch: i64,
    rounds: usize,
) -> Result<(usize, usize)> {
    let c = pool.shared().await?;
    sent.commit_sent();
    let mut removed = 0;
    for _ in 0..rounds {
        let (gone, _) = sweep_own_on(pool, &c, store, now, batch).await?;
        removed += gone.len();
        if gone.len() < batch as usize {
            break;
        }
    }
    let entries = count(pool, store).await?;
    Ok((removed, entries))
}

/// The maintenance's sweep of every limit store's expired rows, under the
/// sweep's advisory lock on `c`: batches until one is short or `most` went.
pub(crate) async fn sweep_all(pool: &Pool, c: &Conn, now: Option<i64>, batch: i64, most: usize) -> Result<usize> {
    let st = statements(pool, c).await?;
    let mut total = 0usize;
    while total < most {
        let r = c
            .client
            .query_one(&st.sweep_all, &[&now, &batch])
            .await
            .map_err(fail(pool, Sent::Commit))?;
        let n = r.get::<_, i64>(0) as usize;
        total += n;
        if n < batch as usize {
            break;
        }
    }
    Ok(total)
}
