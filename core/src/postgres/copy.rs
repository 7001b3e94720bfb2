//! The statements of a copy of a whole store (`crate::moving`) on
//! PostgreSQL: the export reads every name and live row in one `REPEATABLE
//! READ READ ONLY` transaction on the database's clock, read once; the
//! import writes them in one transaction into a store that holds no name,
//! then raises the version sequence above every version of the source.
//!
//! A limit store's entries are in `tinystore_limits` and its count in
//! `tinystore_limit_counts`, not in `tinystore_cells`: the export reads
//! them as the rows kv.db keeps for it (each entry's JSON text as bytes,
//! at the same path, and the count row), and the import writes such rows
//! back to the limit store's tables, so a copy carries a limit store
//! between either kind of store.
//!
//! Each runs on one connection held across several calls of the store's
//! deadline (one page of rows each), so that a large store is not bound by
//! one deadline while no statement waits longer than one.

use tokio_postgres::Client;

use super::errors::{self, Sent};
use super::pool::{Owned, Pool};
use super::{PgStore, sql};
use crate::error::{Error, Result};
use crate::raw::Raw;
use crate::storage::{Cell, Kind, ScanRow};

/// Rows read or written per call.
const PAGE_ROWS: usize = 1_000;
/// Bytes of values written per call, at most (a page of large values).
const PAGE_BYTES: usize = 4 << 20;

const EXPORT_BEGIN: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
const NOW: &str = "SELECT tinystore_now(NULL)";
/// At least every version the sequence gave: `last_value` of a sequence
/// that never gave one is its start, 1, which no row holds either.
const TOP_VERSION: &str = "SELECT last_value FROM tinystore_versions";
/// No other store registers a name while the import decides that the
/// target holds none and writes its own.
const NAMES_LOCK: &str = "LOCK TABLE tinystore_names IN SHARE ROW EXCLUSIVE MODE";
const NAMES_HELD: &str = "SELECT name FROM tinystore_names ORDER BY name LIMIT 4";
const NAMES_COUNT: &str = "SELECT count(*) FROM tinystore_names";
const NAME_ADD: &str = "INSERT INTO tinystore_names (name, kind) VALUES ($1, $2) RETURNING id";
/// A page of rows in one statement, their versions and expiries as given.
const CELLS_ADD: &str = "INSERT INTO tinystore_cells (bucket, path, version, expires, int_value, bytes_value)
    SELECT $1::bigint, * FROM unnest($2::bytea[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bytea[])";
/// A page of a limit store's live entries after `$2`, in path order.
const LIMITS_SCAN: &str = "SELECT path, version, expires, value FROM tinystore_limits
    WHERE store = $1 AND path > $2 AND expires > $3 ORDER BY path LIMIT $4";
/// A page of a limit store's entries in one statement, as given.
const LIMITS_ADD: &str = "INSERT INTO tinystore_limits (store, path, version, expires, value)
    SELECT $1::bigint, * FROM unnest($2::bytea[], $3::bigint[], $4::bigint[], $5::text[])";
/// A limit store's count of entries.
const LIMIT_COUNT_SET: &str = "INSERT INTO tinystore_limit_counts (store, entries) VALUES ($1, $2)";
/// Every later `nextval` gives a version above `$1`.
const VERSIONS_RAISE: &str =
    "SELECT setval('tinystore_versions', greatest($1::bigint, (SELECT last_value FROM tinystore_versions)))";

/// What an export reads: every name (name, kind, its live rows in path
/// order) and the top of the versions.
pub(crate) struct Exported {
    pub names: Vec<(String, String, Vec<ScanRow>)>,
    pub top_version: i64,
}

fn fail(pool: &Pool, sent: Sent) -> impl Fn(tokio_postgres::Error) -> Error + '_ {
    move |e| errors::failed(&pool.shown, &e, sent)
}

fn client(owned: &Owned) -> &Client {
    &owned.conn.client
}

/// Reads every name and live row of the store, in one snapshot.
pub(crate) fn export(pg: &PgStore) -> Result<Exported> {
    let (owned, names, top_version, now) = pg.block(async |pool, _| {
        let owned = pool.exclusive_owned().await?;
        let c = client(&owned);
        let f = fail(pool, Sent::No);
        c.batch_execute(EXPORT_BEGIN).await.map_err(&f)?;
        let now: i64 = c.query_one(NOW, &[]).await.map_err(&f)?.get(0);
        let top: i64 = c.query_one(TOP_VERSION, &[]).await.map_err(&f)?.get(0);
        let names: Vec<(i64, String, String)> = c
            .query(sql::NAME_LIST, &[])
            .await
            .map_err(&f)?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        Ok((owned, names, top, now))
    })?;
    let mut owned = Some(owned);
    let mut out = Vec::with_capacity(names.len());
    for (id, name, kind) in names {
        let limit_store = kind == Kind::LimitStore.as_str();
        let mut rows = Vec::new();
        loop {
            let held = owned.take().expect("held between pages");
            let after = rows.last().map_or(Vec::new(), |r: &ScanRow| r.path.clone());
            let (held, page) = pg.block(async move |pool, _| {
                let page = if limit_store {
                    client(&held)
                        .query(LIMITS_SCAN, &[&id, &after, &now, &(PAGE_ROWS as i64)])
                        .await
                } else {
                    client(&held)
                        .query(
                            sql::CELL_SCAN,
                            &[&id, &after, &ALL_PATHS, &Some(now), &(PAGE_ROWS as i64)],
                        )
                        .await
                };
                Ok((held, page.map_err(fail(pool, Sent::No))?))
            })?;
            owned = Some(held);
            let full = page.len() == PAGE_ROWS;
            rows.extend(page.iter().map(|r| ScanRow {
                path: r.get(0),
                cell: match limit_store {
                    true => Cell {
                        version: r.get(1),
                        expires: Some(r.get(2)),
                        value: Raw::Bytes(r.get::<_, String>(3).into_bytes()),
                    },
                    false => Cell {
                        version: r.get(1),
                        expires: r.get(2),
                        value: match (r.get::<_, Option<i64>>(3), r.get::<_, Option<Vec<u8>>>(4)) {
                            (Some(i), _) => Raw::Int(i),
                            (None, Some(b)) => Raw::Bytes(b),
                            (None, None) => Raw::Null,
                        },
                    },
                },
            }));
            if !full {
                break;
            }
        }
        if limit_store {
            with_count_row(&mut rows, top_version);
        }
        out.push((name, kind, rows));
    }
    let held = owned.take().expect("held to the end");
    pg.block(async move |pool, _| {
        // A read-only transaction: ending it cannot lose anything.
        client(&held)
            .batch_execute(sql::ROLLBACK)
            .await
            .map_err(fail(pool, Sent::No))?;
        pool.give_back(held);
        Ok(())
    })?;
    Ok(Exported {
        names: out,
        top_version,
    })
}

/// Adds the count row kv.db keeps beside a limit store's entries, in path
/// order. It counts the entries read (what `crate::moving` writes anyway)
/// and takes the top version, as a row that no caller reads by version.
fn with_count_row(rows: &mut Vec<ScanRow>, top_version: i64) {
    let count = ScanRow {
        path: crate::limit_count::count_path().to_vec(),
        cell: Cell {
            version: top_version,
            expires: None,
            value: Raw::Int(rows.len() as i64),
        },
    };
    let at = rows.partition_point(|r| r.path < count.path);
    rows.insert(at, count);
}

/// An entry row of `tinystore_limits`: path, version, expiry, JSON text.
type LimitColumns<'r> = (&'r [u8], i64, i64, &'r str);

/// A limit store's rows as kv.db keeps them (its entries and its count
/// row), as the columns of `tinystore_limits`: the count row is left out
/// (the import writes the number of entries), and each entry must be JSON
/// text with an expiry.
fn limit_columns<'r>(name: &str, rows: &'r [ScanRow]) -> Result<Vec<LimitColumns<'r>>> {
    let count = crate::limit_count::count_path();
    let bad = || {
        Error::corrupt(format!(
            "a row of the limit store {name:?} is not an entry of JSON text with an expiry; nothing was written"
        ))
        .in_bucket(name)
    };
    rows.iter()
        .filter(|r| r.path != count)
        .map(|r| match (&r.cell.value, r.cell.expires) {
            (Raw::Bytes(b), Some(expires)) => {
                let text = std::str::from_utf8(b).map_err(|_| bad())?;
                Ok((r.path.as_slice(), r.cell.version, expires, text))
            }
            _ => Err(bad()),
        })
        .collect()
}

/// Every path of a name sorts below this: a path starts with `01` (an
/// owner) or `02` (a key at the root).
const ALL_PATHS: &[u8] = &[0x03];

/// The names the store holds, a few of them, and how many: nothing is
/// written. For the refusal of a target that is not empty.
pub(crate) fn names_held(pg: &PgStore) -> Result<(i64, Vec<String>)> {
    pg.block(async |pool, _| {
        let c = pool.connect_raw().await?;
        let f = fail(pool, Sent::No);
        let n: i64 = c.query_one(NAMES_COUNT, &[]).await.map_err(&f)?.get(0);
        let some = c.query(NAMES_HELD, &[]).await.map_err(&f)?;
        Ok((n, some.iter().map(|r| r.get(0)).collect()))
    })
}

/// Writes `names` (name, kind, rows) into a store that holds no name, and
/// raises the sequence to at least `top_version`, in one transaction.
/// `refuse` makes the error for a store found holding names (`count`, a
/// few of them); then nothing is written.
pub(crate) fn import(
    pg: &PgStore,
    names: &[(&str, &str, &[ScanRow])],
    top_version: i64,
    refuse: impl FnOnce(i64, Vec<String>) -> Error,
) -> Result<()> {
    let (owned, held) = pg.block(async |pool, _| {
        let owned = pool.exclusive_owned().await?;
        let c = client(&owned);
        let f = fail(pool, Sent::No);
        c.batch_execute(sql::BEGIN).await.map_err(&f)?;
        c.batch_execute(NAMES_LOCK).await.map_err(&f)?;
        let n: i64 = c.query_one(NAMES_COUNT, &[]).await.map_err(&f)?.get(0);
        let some: Vec<String> = c
            .query(NAMES_HELD, &[])
            .await
            .map_err(&f)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        Ok((owned, (n, some)))
    })?;
    if held.0 > 0 {
        // Dropping the connection rolls the transaction back.
        drop(owned);
        return Err(refuse(held.0, held.1));
    }
    let mut owned = Some(owned);
    for &(name, kind, rows) in names {
        let c = owned.take().expect("held between pages");
        let (c, id) = pg.block(async move |pool, _| {
            let id: i64 = client(&c)
                .query_one(NAME_ADD, &[&name, &kind])
                .await
                .map_err(fail(pool, Sent::No))?
                .get(0);
            Ok((c, id))
        })?;
        owned = Some(c);
        if kind == Kind::LimitStore.as_str() {
            let entries = limit_columns(name, rows)?;
            owned = Some(import_limit_store(
                pg,
                owned.take().expect("held between pages"),
                id,
                &entries,
            )?);
            continue;
        }
        let mut rest = rows;
        while !rest.is_empty() {
            let mut take = 0;
            let mut bytes = 0;
            while take < rest.len() && take < PAGE_ROWS && (take == 0 || bytes < PAGE_BYTES) {
                bytes += rest[take].cell.value.encoded_len() + rest[take].path.len();
                take += 1;
            }
            let (page, after) = rest.split_at(take);
            rest = after;
            let c = owned.take().expect("held between pages");
            owned = Some(pg.block(async move |pool, _| {
                let paths: Vec<&[u8]> = page.iter().map(|r| r.path.as_slice()).collect();
                let versions: Vec<i64> = page.iter().map(|r| r.cell.version).collect();
                let expires: Vec<Option<i64>> = page.iter().map(|r| r.cell.expires).collect();
                let (ints, bytes): (Vec<Option<i64>>, Vec<Option<&[u8]>>) =
                    page.iter().map(|r| super::cells::columns(&r.cell.value)).unzip();
                client(&c)
                    .execute(CELLS_ADD, &[&id, &paths, &versions, &expires, &ints, &bytes])
                    .await
                    .map_err(fail(pool, Sent::No))?;
                Ok(c)
            })?);
        }
    }
    let c = owned.take().expect("held to the end");
    pg.block(async move |pool, sent| {
        // The sequence moves outside the transaction: raised and then not
        // committed, it leaves a gap, which versions allow.
        client(&c)
            .query_one(VERSIONS_RAISE, &[&top_version])
            .await
            .map_err(fail(pool, Sent::No))?;
        sent.commit_sent();
        client(&c)
            .batch_execute(sql::COMMIT)
            .await
            .map_err(fail(pool, Sent::Commit))?;
        pool.give_back(c);
        Ok(())
    })
}

/// Writes a limit store's entries (path, version, expiry, JSON text) into
/// its table a page a statement, and its count, on the import's
/// transaction.
fn import_limit_store(pg: &PgStore, owned: Owned, store: i64, entries: &[LimitColumns<'_>]) -> Result<Owned> {
    let mut owned = Some(owned);
    for page in entries.chunks(PAGE_ROWS) {
        let c = owned.take().expect("held between pages");
        owned = Some(pg.block(async move |pool, _| {
            let paths: Vec<&[u8]> = page.iter().map(|e| e.0).collect();
            let versions: Vec<i64> = page.iter().map(|e| e.1).collect();
            let expires: Vec<i64> = page.iter().map(|e| e.2).collect();
            let values: Vec<&str> = page.iter().map(|e| e.3).collect();
            client(&c)
                .execute(LIMITS_ADD, &[&store, &paths, &versions, &expires, &values])
                .await
                .map_err(fail(pool, Sent::No))?;
            Ok(c)
        })?);
    }
    let c = owned.take().expect("held to the count");
    let n = entries.len() as i64;
    pg.block(async move |pool, _| {
        client(&c)
            .execute(LIMIT_COUNT_SET, &[&store, &n])
            .await
            .map_err(fail(pool, Sent::No))?;
        Ok(c)
    })
}
