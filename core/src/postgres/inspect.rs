//! What the inspector (`tinystore kv`) reads of a store on PostgreSQL:
//! names with their rows, and the counts of `stats`. Plain `SELECT`s on
//! the database's clock; nothing is written. Keys and values are read by
//! [`super::cells`], as the store reads them. A limit store's rows are in
//! tables of their own (`tinystore_limits`, `tinystore_limit_counts`),
//! read here as the rows kv.db keeps for it: its entries and its count.

use super::errors::{self, Sent};
use super::pool::Pool;
use crate::error::Result;
use crate::raw::Raw;
use crate::storage::{Cell, Kind, ScanRow};

const NAMES: &str = "SELECT n.id, n.name, n.kind, count(c.path) FROM tinystore_names n
    LEFT JOIN tinystore_cells c ON c.bucket = n.id GROUP BY n.id ORDER BY n.name";
/// The rows of each limit store: its entries and its count row. Sent only
/// when there is a limit store, so that a database at a schema older than
/// its tables is read too.
const LIMIT_ROWS: &str = "SELECT n.id, (SELECT count(*) FROM tinystore_limits l WHERE l.store = n.id)
    + (SELECT count(*) FROM tinystore_limit_counts k WHERE k.store = n.id)
    FROM tinystore_names n WHERE n.kind = $1";
/// A page of a limit store's live entries with paths in `($2, $3)`.
const LIMIT_SCAN: &str = "SELECT path, version, expires, value FROM tinystore_limits
    WHERE store = $1 AND path > $2 AND path < $3 AND expires > tinystore_now(NULL) ORDER BY path LIMIT $4";
const LIMIT_COUNT: &str = "SELECT entries FROM tinystore_limit_counts WHERE store = $1";

/// Every name: id, name, kind and its rows (expired ones included), by name.
pub(crate) async fn names(pool: &Pool) -> Result<Vec<(i64, String, String, i64)>> {
    let c = pool.connect_raw().await?;
    let f = |e: tokio_postgres::Error| errors::failed(&pool.shown, &e, Sent::No);
    let mut names: Vec<(i64, String, String, i64)> = c
        .query(NAMES, &[])
        .await
        .map_err(f)?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    let limit_store = Kind::LimitStore.as_str();
    if names.iter().any(|n| n.2 == limit_store) {
        for r in c.query(LIMIT_ROWS, &[&limit_store]).await.map_err(f)? {
            let (id, rows): (i64, i64) = (r.get(0), r.get(1));
            if let Some(n) = names.iter_mut().find(|n| n.0 == id) {
                n.3 = rows;
            }
        }
    }
    Ok(names)
}

/// A limit store's live rows with paths in `(after, hi)`, in path order,
/// at most `limit`, as kv.db keeps them: each entry's JSON text as bytes,
/// and the count row, whose count has no version here (0). Answers whether
/// there are more.
pub(crate) async fn limit_scan(
    pool: &Pool,
    store: i64,
    (after, hi): (&[u8], &[u8]),
    limit: usize,
) -> Result<(Vec<ScanRow>, bool)> {
    let c = pool.connect_raw().await?;
    let f = |e: tokio_postgres::Error| errors::failed(&pool.shown, &e, Sent::No);
    let most = limit.saturating_add(1).min(i64::MAX as usize) as i64;
    use tokio_postgres::types::ToSql;
    let scan: [&(dyn ToSql + Sync); 4] = [&store, &after, &hi, &most];
    let of_store: [&(dyn ToSql + Sync); 1] = [&store];
    let (entries, count) =
        futures_util::try_join!(c.query(LIMIT_SCAN, &scan), c.query_opt(LIMIT_COUNT, &of_store)).map_err(f)?;
    let mut rows: Vec<ScanRow> = entries
        .iter()
        .map(|r| ScanRow {
            path: r.get(0),
            cell: Cell {
                version: r.get(1),
                expires: Some(r.get(2)),
                value: Raw::Bytes(r.get::<_, String>(3).into_bytes()),
            },
        })
        .collect();
    let path = crate::limit_count::count_path();
    if let Some(count) = count
        && path > after
        && path < hi
    {
        let at = rows.partition_point(|r| r.path.as_slice() < path);
        let cell = Cell {
            version: 0,
            expires: None,
            value: Raw::Int(count.get(0)),
        };
        rows.insert(
            at,
            ScanRow {
                path: path.to_vec(),
                cell,
            },
        );
    }
    let more = rows.len() > limit;
    rows.truncate(limit);
    Ok((rows, more))
}

/// What `stats` shows: the bytes of the tables and indexes, the rows, the
/// names and the rows expired and waiting for the sweep.
pub(crate) struct Counts {
    pub bytes: i64,
    pub rows: i64,
    pub names: i64,
    pub expired: i64,
}

pub(crate) async fn counts(pool: &Pool) -> Result<Counts> {
    let c = pool.connect_raw().await?;
    let r = c
        .query_one(
            "SELECT pg_total_relation_size('tinystore_cells') + pg_total_relation_size('tinystore_names'),
                (SELECT count(*) FROM tinystore_cells), (SELECT count(*) FROM tinystore_names),
                (SELECT count(*) FROM tinystore_cells WHERE expires <= tinystore_now(NULL))",
            &[],
        )
        .await
        .map_err(|e| errors::failed(&pool.shown, &e, Sent::No))?;
    Ok(Counts {
        bytes: r.get(0),
        rows: r.get(1),
        names: r.get(2),
        expired: r.get(3),
    })
}
