//! The operations the handles need, on PostgreSQL: point reads, the common
//! `set` in one statement, `take` as `DELETE ... RETURNING`, the writes that
//! read a key first as a transaction on its locked row, range scans, the
//! clear of a branch and the expiry sweep. No rule of keys, versions or
//! expiry is decided here: the core passes them in, or decides on what a
//! locked row holds ([`row_write`]).

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::SentFlag;
use super::errors::{self, Sent};
use super::pool::{Conn, Pool};
use crate::error::{Error, Result};
use crate::raw::Raw;
use crate::storage::{Cell, ScanRow};

/// How many times a write that lost a race for an absent key runs again.
const RACE_RETRIES: usize = 8;

fn value_of(r: &Row, int: usize, bytes: usize) -> Raw {
    match (r.get::<_, Option<i64>>(int), r.get::<_, Option<Vec<u8>>>(bytes)) {
        (Some(i), _) => Raw::Int(i),
        (None, Some(b)) => Raw::Bytes(b),
        (None, None) => Raw::Null,
    }
}

pub(crate) fn columns(v: &Raw) -> (Option<i64>, Option<&[u8]>) {
    match v {
        Raw::Null => (None, None),
        Raw::Int(i) => (Some(*i), None),
        Raw::Bytes(b) => (None, Some(b.as_slice())),
    }
}

pub(crate) fn cell_of(r: &Row) -> Cell {
    Cell {
        version: r.get(0),
        expires: r.get(1),
        value: value_of(r, 2, 3),
    }
}

fn fail(pool: &Pool, sent: Sent) -> impl Fn(tokio_postgres::Error) -> Error + '_ {
    move |e| errors::failed(&pool.shown, &e, sent)
}

/// A name's id and the kind it holds, registering it with `kind` if it is new.
pub(crate) async fn register(pool: &Pool, name: &str, kind: &str) -> Result<(i64, String)> {
    let c = pool.shared().await?;
    if let Some(r) = c
        .client
        .query_opt(&c.st.name_find, &[&name])
        .await
        .map_err(fail(pool, Sent::No))?
    {
        return Ok((r.get(0), r.get(1)));
    }
    c.client
        .execute(&c.st.name_insert, &[&name, &kind])
        .await
        .map_err(fail(pool, Sent::No))?;
    let r = c
        .client
        .query_one(&c.st.name_find, &[&name])
        .await
        .map_err(fail(pool, Sent::No))?;
    Ok((r.get(0), r.get(1)))
}

/// Every name: id, name and kind, by name.
pub(crate) async fn names(pool: &Pool) -> Result<Vec<(i64, String, String)>> {
    let c = pool.shared().await?;
    let rows = c
        .client
        .query(&c.st.name_list, &[])
        .await
        .map_err(fail(pool, Sent::No))?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect())
}

/// A live row and the clock that judged it. `now` is the store's test
/// clock, or `None` for the database's.
pub(crate) async fn get(pool: &Pool, bucket: i64, path: &[u8], now: Option<i64>) -> Result<Option<(Cell, i64)>> {
    get_on(pool, &*pool.shared().await?, bucket, path, now).await
}

/// [`get`] on a given connection: a transaction's.
pub(crate) async fn get_on(
    pool: &Pool,
    c: &Conn,
    bucket: i64,
    path: &[u8],
    now: Option<i64>,
) -> Result<Option<(Cell, i64)>> {
    let r = c
        .client
        .query_opt(&c.st.get, &[&bucket, &path, &now])
        .await
        .map_err(fail(pool, Sent::No))?;
    Ok(r.as_ref().map(|r| (cell_of(r), r.get(4))))
}

/// A live row's version and expiry, and the clock that judged it.
pub(crate) async fn has(
    pool: &Pool,
    bucket: i64,
    path: &[u8],
    now: Option<i64>,
) -> Result<Option<(i64, Option<i64>, i64)>> {
    let c = pool.shared().await?;
    let r = c
        .client
        .query_opt(&c.st.has, &[&bucket, &path, &now])
        .await
        .map_err(fail(pool, Sent::No))?;
    Ok(r.map(|r| (r.get(0), r.get(1), r.get(2))))
}

/// The expiry of the common `set`, as its one statement applies it: a
/// time, or a span from the clock, or (with `keep_live`) a live key's own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SetExpiry {
    pub at: Option<i64>,
    pub span: Option<i64>,
    pub keep_live: bool,
}

/// The common `set`: one statement that commits by itself.
pub(crate) async fn set(
    pool: &Pool,
    sent: &SentFlag,
    bucket: i64,
    path: &[u8],
    value: &Raw,
    expiry: SetExpiry,
    now: Option<i64>,
) -> Result<i64> {
    let c = pool.shared().await?;
    let (int, bytes) = columns(value);
    sent.commit_sent();
    let r = c
        .client
        .query_one(
            &c.st.set,
            &[
                &bucket,
                &path,
                &now,
                &int,
                &bytes,
                &expiry.at,
                &expiry.span,
                &expiry.keep_live,
            ],
        )
        .await;
    match r {
        Ok(r) => Ok(r.get(0)),
        Err(e) => {
            if e.as_db_error().is_none() {
                pool.drop_shared(&c).await;
            }
            Err(errors::failed(&pool.shown, &e, Sent::Commit))
        }
    }
}

/// What a write decided on a key's locked row.
#[derive(Debug)]
pub(crate) enum Change {
    /// Nothing to write.
    Keep,
    /// A new value with a new version and this expiry.
    Put { value: Raw, expires: Option<i64> },
    /// The row goes.
    Delete,
    /// A new expiry, value and version kept.
    Expires(Option<i64>),
}

/// A key's row as a write finds it.
pub(crate) struct Found {
    pub cell: Cell,
    pub live: bool,
}

/// One write that reads its key first: a transaction that locks the row,
/// reads the clock, lets `decide` choose on `(now, row)`, applies the
/// change and commits. Returns what `decide` returned and, for a `Put`,
/// the new version. A racer that created the absent key first makes the
/// whole write run again, on the row it wrote.
pub(crate) async fn row_write<R>(
    pool: &Pool,
    sent: &SentFlag,
    bucket: i64,
    path: &[u8],
    now: Option<i64>,
    mut decide: impl FnMut(i64, Option<&Found>) -> Result<(Change, R)>,
) -> Result<(R, Option<i64>)> {
    let held = pool.exclusive().await?;
    for _ in 0..RACE_RETRIES {
        match row_write_once(pool, held.conn(), sent, bucket, path, now, &mut decide).await {
            Ok(Some(done)) => {
                held.release();
                return Ok(done);
            }
            Ok(None) => continue,
            Err(e) => return Err(e), // the connection is dropped with `held`
        }
    }
    Err(Error::new(
        crate::ErrorKind::Io,
        format!("a write lost the race for an absent key {RACE_RETRIES} times in a row; nothing was written"),
    ))
}

async fn row_write_once<R>(
    pool: &Pool,
    c: &Conn,
    sent: &SentFlag,
    bucket: i64,
    path: &[u8],
    now: Option<i64>,
    decide: &mut impl FnMut(i64, Option<&Found>) -> Result<(Change, R)>,
) -> Result<Option<(R, Option<i64>)>> {
    let f = fail(pool, Sent::No);
    // One round trip: the lock is granted before the clock is read.
    let (key, clock): ([&(dyn ToSql + Sync); 2], [&(dyn ToSql + Sync); 1]) = ([&bucket, &path], [&now]);
    let (_, row, clock) = futures_util::try_join!(
        c.client.execute(&c.st.begin, &[]),
        c.client.query_opt(&c.st.lock, &key),
        c.client.query_one(&c.st.now, &clock),
    )
    .map_err(&f)?;
    let now: i64 = clock.get(0);
    let found = row.as_ref().map(|r| {
        let cell = cell_of(r);
        let live = cell.expires.is_none_or(|e| e > now);
        Found { cell, live }
    });
    let (change, out) = match decide(now, found.as_ref()) {
        Ok(d) => d,
        Err(e) => {
            c.client.execute(&c.st.rollback, &[]).await.map_err(&f)?;
            return Err(e);
        }
    };
    let write = async {
        match &change {
            Change::Keep => Ok(None),
            Change::Put { value, expires } => {
                let (int, bytes) = columns(value);
                let st = if found.is_some() { &c.st.update } else { &c.st.insert };
                let r = c.client.query_opt(st, &[&bucket, &path, expires, &int, &bytes]).await?;
                Ok(Some(r.map(|r| r.get::<_, i64>(0))))
            }
            Change::Delete => c.client.execute(&c.st.delete, &[&bucket, &path]).await.map(|_| None),
            Change::Expires(e) => c
                .client
                .execute(&c.st.set_expires, &[&bucket, &path, e])
                .await
                .map(|_| None),
        }
    };
    sent.commit_sent();
    // The change and the COMMIT go together; the COMMIT's answer says
    // whether both happened.
    let (version, commit) = futures_util::join!(write, c.client.execute(&c.st.commit, &[]));
    let version = match version {
        Ok(v) => v,
        // The change failed, so the COMMIT rolled back: nothing was written.
        Err(e) if e.as_db_error().is_some() => return Err(errors::failed(&pool.shown, &e, Sent::No)),
        Err(e) => return Err(errors::failed(&pool.shown, &e, Sent::Commit)),
    };
    commit.map_err(|e| errors::failed(&pool.shown, &e, Sent::Commit))?;
    match version {
        // An absent key that a racer wrote first: run again on its row.
        Some(None) => Ok(None),
        Some(Some(v)) => Ok(Some((out, Some(v)))),
        None => Ok(Some((out, None))),
    }
}

/// What `take` found.
pub(crate) enum Taken {
    /// The live row, now deleted (what `check` made of it is the caller's).
    Row,
    /// No live row at the version asked for (or at all).
    Missing,
}

/// `take`: deletes the live row and returns it, in a transaction so that
/// `check` (a caller that must decode the value) can keep it.
pub(crate) async fn take(
    pool: &Pool,
    sent: &SentFlag,
    bucket: i64,
    path: &[u8],
    if_version: Option<i64>,
    now: Option<i64>,
    check: impl FnOnce(&Cell) -> Result<()>,
) -> Result<Taken> {
    let held = pool.exclusive().await?;
    let c = held.conn();
    let f = fail(pool, Sent::No);
    let args: [&(dyn ToSql + Sync); 4] = [&bucket, &path, &now, &if_version];
    let (_, row) = futures_util::try_join!(
        c.client.execute(&c.st.begin, &[]),
        c.client.query_opt(&c.st.take, &args),
    )
    .map_err(&f)?;
    let Some(row) = row else {
        c.client.execute(&c.st.rollback, &[]).await.map_err(&f)?;
        held.release();
        return Ok(Taken::Missing);
    };
    let cell = cell_of(&row);
    if let Err(e) = check(&cell) {
        c.client.execute(&c.st.rollback, &[]).await.map_err(&f)?;
        held.release();
        return Err(e);
    }
    sent.commit_sent();
    c.client
        .execute(&c.st.commit, &[])
        .await
        .map_err(|e| errors::failed(&pool.shown, &e, Sent::Commit))?;
    held.release();
    Ok(Taken::Row)
}

/// Renews an idle key if nothing wrote it since it was read; says whether it did.
pub(crate) async fn renew(
    pool: &Pool,
    sent: &SentFlag,
    bucket: i64,
    path: &[u8],
    version: i64,
    expires: Option<i64>,
    until: i64,
) -> Result<bool> {
    let c = pool.shared().await?;
    sent.commit_sent();
    let n = c
        .client
        .execute(&c.st.renew, &[&bucket, &path, &version, &expires, &until])
        .await
        .map_err(fail(pool, Sent::Commit))?;
    Ok(n == 1)
}

/// Live rows with paths in `(after, hi)`, at most `limit`, stopping before
/// the row whose value would pass `max_bytes` (the first row always comes);
/// and whether more may follow.
pub(crate) async fn scan(
    pool: &Pool,
    bucket: i64,
    (after, hi): (&[u8], &[u8]),
    now: Option<i64>,
    limit: usize,
    max_bytes: usize,
) -> Result<(Vec<ScanRow>, bool)> {
    scan_on(pool, &*pool.shared().await?, bucket, (after, hi), now, limit, max_bytes).await
}

/// [`scan`] on a given connection: a transaction's.
pub(crate) async fn scan_on(
    pool: &Pool,
    c: &Conn,
    bucket: i64,
    (after, hi): (&[u8], &[u8]),
    now: Option<i64>,
    limit: usize,
    max_bytes: usize,
) -> Result<(Vec<ScanRow>, bool)> {
    let rows = c
        .client
        .query(&c.st.scan, &[&bucket, &after, &hi, &now, &((limit + 1) as i64)])
        .await
        .map_err(fail(pool, Sent::No))?;
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for r in &rows {
        let value = value_of(r, 3, 4);
        let size = value.encoded_len();
        if out.len() == limit || (!out.is_empty() && bytes + size > max_bytes) {
            return Ok((out, true));
        }
        bytes += size;
        out.push(ScanRow {
            path: r.get(0),
            cell: Cell {
                version: r.get(1),
                expires: r.get(2),
                value,
            },
        });
    }
    Ok((out, false))
}

/// Deletes every row with a path in `[lo, hi)`, in one statement.
pub(crate) async fn clear(pool: &Pool, sent: &SentFlag, bucket: i64, lo: &[u8], hi: &[u8]) -> Result<u64> {
    let c = pool.shared().await?;
    sent.commit_sent();
    c.client
        .execute(&c.st.subtree_delete, &[&bucket, &lo, &hi])
        .await
        .map_err(fail(pool, Sent::Commit))
}

/// Deletes expired rows in batches of `batch`, in whichever process holds
/// the sweep lock; `None` when another process holds it.
pub(crate) async fn sweep(pool: &Pool, now: Option<i64>, batch: i64, most: usize) -> Result<Option<usize>> {
    let held = pool.exclusive().await?;
    let c = held.conn();
    let f = fail(pool, Sent::No);
    let got: bool = c
        .client
        .query_one(&c.st.try_lock, &[&super::sql::SWEEP_LOCK])
        .await
        .map_err(&f)?
        .get(0);
    if !got {
        held.release();
        return Ok(None);
    }
    let mut total = 0usize;
    while total < most {
        let n = c.client.execute(&c.st.sweep, &[&now, &batch]).await.map_err(&f)? as usize;
        total += n;
        if n < batch as usize {
            break;
        }
    }
    // The limit stores' rows, each store's count moved by its own.
    total += super::limit_rows::sweep_all(pool, c, now, batch, most).await?;
    c.client
        .query_one(&c.st.unlock, &[&super::sql::SWEEP_LOCK])
        .await
        .map_err(&f)?;
    held.release();
    Ok(Some(total))
}
