//! What the inspector (`tinystore kv`) reads of a store on PostgreSQL:
//! names with their rows, and the counts of `stats`. Plain `SELECT`s on
//! the database's clock; nothing is written. Keys and values are read by
//! [`super::cells`], as the store reads them.

use super::errors::{self, Sent};
use super::pool::Pool;
use crate::error::Result;

/// Every name: id, name, kind and its rows (expired ones included), by name.
pub(crate) async fn names(pool: &Pool) -> Result<Vec<(i64, String, String, i64)>> {
    let c = pool.connect_raw().await?;
    let rows = c
        .query(
            "SELECT n.id, n.name, n.kind, count(c.path) FROM tinystore_names n
             LEFT JOIN tinystore_cells c ON c.bucket = n.id GROUP BY n.id ORDER BY n.name",
            &[],
        )
        .await
        .map_err(|e| errors::failed(&pool.shown, &e, Sent::No))?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect())
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
