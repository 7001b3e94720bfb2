//! The storage layer: every statement on kv.db, behind the few operations
//! the handles need. A second backend (PostgreSQL) would implement these.
//!
//! Functions here take a connection and run inside whatever transaction the
//! caller holds: a group's savepoint, a `tx`, or none for a plain read.

pub mod direct_statements;
pub mod file;
pub mod revisions;
pub mod sql;
pub mod write_lock_turns;

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Error, Result};
use crate::raw::{Raw, SPILL_OVER};

/// The kinds of handle a name can hold (KV-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A bucket of values.
    Values,
    /// Counters.
    Counters,
    /// A rate limit.
    RateLimit,
    /// A quota.
    Quota,
    /// Answers of `once`.
    Once,
    /// Typed settings.
    Config,
    /// A web framework's limit store (its rows are keyed by SHA-256).
    LimitStore,
}

impl Kind {
    /// The kind as the file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Values => "values",
            Kind::Counters => "counters",
            Kind::RateLimit => "rate_limit",
            Kind::Quota => "quota",
            Kind::Once => "once",
            Kind::Config => "config",
            Kind::LimitStore => "limit_store",
        }
    }

    /// A kind from the file's spelling.
    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "values" => Kind::Values,
            "counters" => Kind::Counters,
            "rate_limit" => Kind::RateLimit,
            "quota" => Kind::Quota,
            "once" => Kind::Once,
            "config" => Kind::Config,
            "limit_store" => Kind::LimitStore,
            _ => return None,
        })
    }

    /// The kind in words, for messages.
    pub fn words(self) -> &'static str {
        match self {
            Kind::Values => "a bucket of values",
            Kind::Counters => "counters",
            Kind::RateLimit => "a rate limit",
            Kind::Quota => "a quota",
            Kind::Once => "a once",
            Kind::Config => "a config",
            Kind::LimitStore => "a limit store",
        }
    }
}

/// A live row with its value.
#[derive(Clone, Debug)]
pub struct Cell {
    /// The revision that wrote the value.
    pub version: i64,
    /// When it expires, in ms on the store's clock.
    pub expires: Option<i64>,
    /// The value.
    pub value: Raw,
}

/// A row as a write sees it.
#[derive(Clone, Copy, Debug)]
pub struct CellMeta {
    /// The revision that wrote it.
    pub version: i64,
    /// Its expiry.
    pub expires: Option<i64>,
    /// Its spilled row, if any.
    pub spill: Option<i64>,
    /// Whether it is live: not expired, not hidden by a clear.
    pub live: bool,
}

/// Finds a handle's name: its id and kind.
pub fn find_bucket(conn: &Connection, name: &str) -> Result<Option<(i64, String)>> {
    let mut st = conn.prepare_cached(sql::BUCKET_FIND)?;
    Ok(st.query_row([name], |r| Ok((r.get(0)?, r.get(1)?))).optional()?)
}

/// Registers a name with its kind, or finds it; refuses another kind (KV-2).
pub fn register_bucket(conn: &Connection, name: &str, kind: Kind) -> Result<i64> {
    conn.prepare_cached(sql::BUCKET_INSERT)?
        .execute(params![name, kind.as_str()])?;
    let (id, found) = find_bucket(conn, name)?.ok_or_else(|| Error::corrupt("a name vanished"))?;
    check_kind(name, &found, kind)?;
    Ok(id)
}

/// Refuses a name that holds another kind of handle.
pub fn check_kind(name: &str, found: &str, want: Kind) -> Result<()> {
    if found == want.as_str() {
        return Ok(());
    }
    let held = Kind::parse(found).map(Kind::words).unwrap_or(found);
    Err(Error::invalid(format!(
        "the name {name:?} holds {held}, so it cannot open as {}",
        want.words()
    ))
    .in_bucket(name))
}

/// Every handle's name: id, name and kind.
pub fn list_buckets(conn: &Connection) -> Result<Vec<(i64, String, String)>> {
    let mut st = conn.prepare_cached(sql::BUCKET_LIST)?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Runs `read` in one read transaction on `conn`, so that all its
/// statements see one snapshot.
pub fn in_snapshot<T>(conn: &Connection, read: impl FnOnce() -> Result<T>) -> Result<T> {
    run_tx_statement(conn, sql::BEGIN_READ)?;
    let out = read();
    // A read transaction has nothing to commit; ending it cannot lose data.
    let _ = run_tx_statement(conn, sql::COMMIT);
    out
}

/// Runs one of the writer's transaction statements ([`sql::BEGIN_WRITE`],
/// [`sql::COMMIT`], [`sql::ROLLBACK`]) through the statement cache.
pub fn run_tx_statement(conn: &Connection, statement: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(statement)?.execute([]).map(|_| ())
}

/// Reads a live row with its value.
pub fn get(conn: &Connection, bucket: i64, path: &[u8], now: i64) -> Result<Option<Cell>> {
    let mut st = conn.prepare_cached(sql::CELL_GET)?;
    let mut rows = st.query(params![bucket, path, now])?;
    match rows.next()? {
        None => Ok(None),
        Some(r) => Ok(Some(Cell {
            version: r.get(0)?,
            expires: r.get(1)?,
            value: Raw::from_sql(r.get_ref(2)?)?,
        })),
    }
}

/// [`get`] on a reader, through the statement of [`sql::CELL_GET_INLINE`]
/// (or [`sql::CELL_GET_UNMARKED`]) it holds (`st`, prepared on `conn`). A value that spilled is read again
/// with [`sql::CELL_GET`], whose one statement sees the row and its spill
/// in one snapshot.
pub fn get_with(
    st: &mut direct_statements::DirectStatement,
    conn: &Connection,
    bucket: i64,
    path: &[u8],
    now: i64,
) -> Result<Option<Cell>> {
    use direct_statements::Param;
    let (found, _) = st.run(&[Param::Int(bucket), Param::Blob(path), Param::Int(now)], |row| {
        Ok(match row {
            None => Some(None),
            Some(r) if r.opt_int(3).is_none() => Some(Some(Cell {
                version: r.int(0),
                expires: r.opt_int(1),
                value: r.raw(2)?,
            })),
            Some(_) => None, // spilled
        })
    })?;
    match found {
        Some(cell) => Ok(cell),
        None => get(conn, bucket, path, now),
    }
}

/// Whether any clear mark exists in the file.
pub fn any_marks(conn: &Connection) -> Result<bool> {
    Ok(conn.prepare_cached(sql::MARKS_ANY)?.query_row([], |r| r.get(0))?)
}

/// Whether a live row is there: its version and expiry.
pub fn has(conn: &Connection, bucket: i64, path: &[u8], now: i64) -> Result<Option<(i64, Option<i64>)>> {
    let mut st = conn.prepare_cached(sql::CELL_HAS)?;
    Ok(st
        .query_row(params![bucket, path, now], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// The row as a write sees it, live or not.
pub fn meta(conn: &Connection, bucket: i64, path: &[u8], now: i64) -> Result<Option<CellMeta>> {
    let mut st = conn.prepare_cached(sql::CELL_META)?;
    Ok(st
        .query_row(params![bucket, path, now], |r| {
            Ok(CellMeta {
                version: r.get(0)?,
                expires: r.get(1)?,
                spill: r.get(2)?,
                live: r.get(3)?,
            })
        })
        .optional()?)
}

/// Writes a row, spilling a large value, and frees the spill it replaces.
pub fn put(
    conn: &Connection,
    bucket: i64,
    path: &[u8],
    version: i64,
    expires: Option<i64>,
    value: &Raw,
    old_spill: Option<i64>,
) -> Result<()> {
    value.check_size()?;
    if let Some(id) = old_spill {
        conn.prepare_cached(sql::SPILL_DELETE)?.execute([id])?;
    }
    let (inline, spill) = match value {
        Raw::Bytes(b) if b.len() > SPILL_OVER => {
            conn.prepare_cached(sql::SPILL_INSERT)?.execute([b])?;
            (&Raw::Null, Some(conn.last_insert_rowid()))
        }
        v => (v, None),
    };
    conn.prepare_cached(sql::CELL_UPSERT)?
        .execute(params![bucket, path, version, expires, inline, spill])?;
    Ok(())
}

/// Whether writing `value` takes more than one statement: a value kept in
/// a row of its own is inserted before its cell.
pub fn spills(value: &Raw) -> bool {
    matches!(value, Raw::Bytes(b) if b.len() > SPILL_OVER)
}

/// What expiry a `set` gives, decided without reading the row first.
#[derive(Clone, Copy, Debug)]
pub enum SetExpiry {
    /// This expiry, whatever the row had.
    Give(Option<i64>),
    /// A live row keeps its own; otherwise this one.
    KeepLiveElse(Option<i64>),
}

/// Writes an inline value (one that does not spill) in one statement, with
/// no read before it, through `stmt`: [`sql::CELL_SET`] for
/// [`SetExpiry::Give`], [`sql::CELL_SET_KEEPING_EXPIRY`] for
/// [`SetExpiry::KeepLiveElse`]. Returns false, having changed nothing, when
/// the row holds a spilled value, or, keeping a live key's expiry, when the
/// row is not live: the caller then replaces it with [`put`].
pub fn set_inline(
    stmt: &mut direct_statements::DirectStatement,
    bucket: i64,
    path: &[u8],
    version: i64,
    expiry: SetExpiry,
    value: &Raw,
    now: i64,
) -> Result<bool> {
    debug_assert!(!spills(value), "a spilling value is written with put");
    value.check_size()?;
    use direct_statements::Param;
    let (expires, keep_at) = match expiry {
        SetExpiry::Give(e) => (e, None),
        SetExpiry::KeepLiveElse(e) => (e, Some(Param::Int(now))),
    };
    let params = [
        Param::Int(bucket),
        Param::Blob(path),
        Param::Int(version),
        Param::opt(expires),
        Param::raw(value),
    ];
    let ((), changed) = match keep_at {
        None => stmt.run(&params, |_| Ok(()))?,
        Some(now) => {
            let [a, b, c, d, e] = params;
            stmt.run(&[a, b, c, d, e, now], |_| Ok(()))?
        }
    };
    Ok(changed == 1)
}

/// Deletes a row and its spill.
pub fn delete(conn: &Connection, bucket: i64, path: &[u8], spill: Option<i64>) -> Result<()> {
    conn.prepare_cached(sql::CELL_DELETE)?.execute(params![bucket, path])?;
    if let Some(id) = spill {
        conn.prepare_cached(sql::SPILL_DELETE)?.execute([id])?;
    }
    Ok(())
}

/// Gives a row a new expiry, keeping its value and version.
pub fn set_expiry(conn: &Connection, bucket: i64, path: &[u8], expires: Option<i64>) -> Result<()> {
    conn.prepare_cached(sql::CELL_EXPIRE)?
        .execute(params![bucket, path, expires])?;
    Ok(())
}

/// Renews a row only if it still has the version and expiry a read saw.
pub fn renew(
    conn: &Connection,
    bucket: i64,
    path: &[u8],
    seen_version: i64,
    seen_expires: Option<i64>,
    until: i64,
) -> Result<bool> {
    let n = conn
        .prepare_cached(sql::CELL_RENEW)?
        .execute(params![bucket, path, seen_version, seen_expires, until])?;
    Ok(n > 0)
}

/// One row of a scan.
#[derive(Debug)]
pub struct ScanRow {
    /// The full path.
    pub path: Vec<u8>,
    /// The row.
    pub cell: Cell,
}

/// Live rows with paths in `(after, hi)`, in path order, at most `limit`,
/// stopping before the row whose value would pass `max_bytes` (the first row
/// always comes, so a page is never empty while rows remain).
pub fn scan(
    conn: &Connection,
    bucket: i64,
    after: &[u8],
    hi: &[u8],
    now: i64,
    limit: usize,
    max_bytes: usize,
) -> Result<(Vec<ScanRow>, bool)> {
    let mut st = conn.prepare_cached(sql::CELL_SCAN)?;
    let mut rows = st.query(params![bucket, after, hi, now, (limit + 1) as i64])?;
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while let Some(r) = rows.next()? {
        let value = Raw::from_sql(r.get_ref(3)?)?;
        let size = value.encoded_len();
        if out.len() == limit || (!out.is_empty() && bytes + size > max_bytes) {
            return Ok((out, true));
        }
        bytes += size;
        out.push(ScanRow {
            path: r.get(0)?,
            cell: Cell {
                version: r.get(1)?,
                expires: r.get(2)?,
                value,
            },
        });
    }
    Ok((out, false))
}

/// How many rows a subtree holds, counting at most `bound`.
pub fn count_subtree(conn: &Connection, bucket: i64, lo: &[u8], hi: &[u8], bound: usize) -> Result<usize> {
    let n: i64 = conn
        .prepare_cached(sql::SUBTREE_COUNT)?
        .query_row(params![bucket, lo, hi, bound as i64], |r| r.get(0))?;
    Ok(n as usize)
}

/// Deletes a subtree's rows and their spills.
pub fn delete_subtree(conn: &Connection, bucket: i64, lo: &[u8], hi: &[u8]) -> Result<usize> {
    conn.prepare_cached(sql::SUBTREE_SPILLS)?
        .execute(params![bucket, lo, hi])?;
    Ok(conn
        .prepare_cached(sql::SUBTREE_DELETE)?
        .execute(params![bucket, lo, hi])?)
}

/// Hides every row of a subtree at or before `revision`.
pub fn mark_cleared(conn: &Connection, bucket: i64, lo: &[u8], hi: &[u8], revision: i64) -> Result<()> {
    conn.prepare_cached(sql::MARK_UPSERT)?
        .execute(params![bucket, lo, hi, revision])?;
    Ok(())
}

/// Rows deleted per transaction by a sweep: a bound on how long one sweep
/// holds the writer.
pub const SWEEP_BATCH: usize = 10_000;

/// Deletes up to `batch` rows hidden by clear marks, and the marks that have
/// none left. Returns how many rows went.
pub fn sweep_cleared(conn: &Connection, batch: usize) -> Result<usize> {
    let marks: Vec<(i64, Vec<u8>, Vec<u8>, i64)> = conn
        .prepare_cached(sql::MARKS)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut done = 0;
    for (bucket, lo, hi, cleared) in marks {
        if done >= batch {
            break;
        }
        let rows: Vec<(Vec<u8>, Option<i64>)> = conn
            .prepare_cached(sql::MARKED_ROWS)?
            .query_map(params![bucket, lo, hi, cleared, (batch - done) as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let n = rows.len();
        for (path, spill) in rows {
            delete(conn, bucket, &path, spill)?;
        }
        done += n;
        if done < batch {
            // Fewer than asked: none left under this mark.
            conn.prepare_cached(sql::MARK_DELETE)?
                .execute(params![bucket, lo, cleared])?;
        }
    }
    Ok(done)
}

/// Deletes up to `batch` expired rows of every name, oldest first. Returns
/// how many went of each name, as (bucket id, rows), so that a handle that
/// keeps a count of its rows (the limit store) moves it in the same
/// transaction.
pub fn sweep_expired(conn: &Connection, now: i64, batch: usize) -> Result<Vec<(i64, usize)>> {
    let rows: Vec<(i64, Vec<u8>, Option<i64>)> = conn
        .prepare_cached(sql::EXPIRED_ROWS)?
        .query_map(params![now, batch as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut buckets = Vec::with_capacity(rows.len());
    for (bucket, path, spill) in rows {
        delete(conn, bucket, &path, spill)?;
        buckets.push(bucket);
    }
    buckets.sort_unstable();
    Ok(buckets.chunk_by(|a, b| a == b).map(|run| (run[0], run.len())).collect())
}

/// [`sweep_expired`] of one name's rows (`bucket`): for a limit store,
/// whose stored count moves by what its own sweep deletes.
pub fn sweep_expired_in(conn: &Connection, bucket: i64, now: i64, batch: usize) -> Result<usize> {
    let rows: Vec<(Vec<u8>, Option<i64>)> = conn
        .prepare_cached(sql::EXPIRED_IN_BUCKET)?
        .query_map(params![bucket, now, batch as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (path, spill) in &rows {
        delete(conn, bucket, path, *spill)?;
    }
    Ok(rows.len())
}

/// How many expired rows wait for a sweep.
pub fn count_expired(conn: &Connection, now: i64) -> Result<usize> {
    let n: i64 = conn
        .prepare_cached(sql::EXPIRED_COUNT)?
        .query_row([now], |r| r.get(0))?;
    Ok(n as usize)
}

/// Counts of the file's rows: cells, spilled values, clear marks, names.
pub fn stats(conn: &Connection) -> Result<(usize, usize, usize, usize)> {
    Ok(conn.prepare_cached(sql::STATS)?.query_row([], |r| {
        Ok((
            r.get::<_, i64>(0)? as usize,
            r.get::<_, i64>(1)? as usize,
            r.get::<_, i64>(2)? as usize,
            r.get::<_, i64>(3)? as usize,
        ))
    })?)
}

/// How many rows, live or not, a handle holds.
pub fn bucket_rows(conn: &Connection, bucket: i64) -> Result<usize> {
    let n: i64 = conn
        .prepare_cached(sql::BUCKET_ROWS)?
        .query_row([bucket], |r| r.get(0))?;
    Ok(n as usize)
}

/// Who holds the run of a key for `once`, and until when (real ms).
pub fn run_holder(conn: &Connection, bucket: i64, path: &[u8]) -> Result<Option<(String, i64)>> {
    let mut st = conn.prepare_cached(sql::RUN_FIND)?;
    Ok(st
        .query_row(params![bucket, path], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Claims the run of a key for `holder` until `until` (real ms).
pub fn run_claim(conn: &Connection, bucket: i64, path: &[u8], holder: &str, until: i64) -> Result<()> {
    conn.prepare_cached(sql::RUN_CLAIM)?
        .execute(params![bucket, path, holder, until])?;
    Ok(())
}

/// Lets go of the run of a key, if `holder` still holds it.
pub fn run_release(conn: &Connection, bucket: i64, path: &[u8], holder: &str) -> Result<()> {
    conn.prepare_cached(sql::RUN_RELEASE)?
        .execute(params![bucket, path, holder])?;
    Ok(())
}

/// Renews every run `holder` holds until `until` (real ms); says how many.
pub fn runs_renew(conn: &Connection, holder: &str, until: i64) -> Result<usize> {
    Ok(conn.prepare_cached(sql::RUNS_RENEW)?.execute(params![holder, until])?)
}

/// Deletes the runs whose lease ended before `now` (real ms); says how many.
pub fn runs_sweep(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.prepare_cached(sql::RUNS_SWEEP)?.execute([now])?)
}

/// The latest expiry of a handle's rows, in ms (i64::MAX if a row never
/// expires, 0 if it has none).
pub fn bucket_last_expiry(conn: &Connection, bucket: i64) -> Result<i64> {
    Ok(conn
        .prepare_cached(sql::BUCKET_LAST_EXPIRY)?
        .query_row([bucket], |r| r.get(0))?)
}

/// The file's revision: at least every version it holds or ever gave.
pub fn revision(conn: &Connection) -> Result<i64> {
    Ok(conn.prepare_cached(sql::REVISION_GET)?.query_row([], |r| r.get(0))?)
}

/// Raises the file's revision to at least `top`, so that no later write
/// takes a version at or below it.
pub fn raise_revision(conn: &Connection, top: i64) -> Result<()> {
    conn.prepare_cached(sql::REVISION_RAISE)?.execute([top])?;
    Ok(())
}
