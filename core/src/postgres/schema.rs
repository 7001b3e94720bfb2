//! The tables, created on open under an advisory lock so that processes
//! opening a new database at once do not race, and the schema-version row:
//! a database at a newer schema than this build writes is refused before
//! anything is written to it (the counterpart of a newer kv.db), and one at
//! an older schema gets the migration steps it lacks, in the same
//! transaction as the new version row.

use super::errors::{self, Sent};
use super::pool::Pool;
use super::sql;
use crate::error::{Error, Result};

/// The refusal of a database at a newer schema than this build reads.
fn newer(pool: &Pool, v: i32) -> Error {
    Error::invalid(format!(
        "the database at {} has TinyStore schema version {v}, newer than this build reads ({}); upgrade \
         TinyStore to open it. It was left as it was",
        pool.shown,
        sql::SCHEMA_VERSION
    ))
}

/// Refuses a schema whose `tinystore_*` relations no store made: another
/// application's tables under our names (the counterpart of a file of
/// another application), or a version table of another shape. Such a
/// schema is left as it was: nothing here writes.
async fn refuse_foreign(pool: &Pool, c: &tokio_postgres::Client, schema: &str) -> Result<()> {
    let fail = |e: tokio_postgres::Error| errors::failed(&pool.shown, &e, Sent::No);
    let shape = c.query_one(sql::SCHEMA_TABLE_SHAPE, &[]).await.map_err(fail)?;
    let (has_table, our_shape): (bool, bool) = (shape.get(0), shape.get(1));
    if has_table && our_shape {
        return Ok(());
    }
    let names: Option<String> = c.query_one(sql::SCHEMA_OUR_NAMES, &[]).await.map_err(fail)?.get(0);
    let Some(names) = names else { return Ok(()) };
    let why = if has_table {
        "whose tinystore_schema is not a TinyStore version table"
    } else {
        "with no tinystore_schema version table"
    };
    Err(Error::invalid(format!(
        "the schema {schema} at {} holds {names}, {why}: they belong to another application; it was left as it \
         was (open the store in a schema of its own, with ?schema=NAME)",
        pool.shown
    )))
}

/// Checks, writing nothing, that the schema holds a store this build reads.
pub(crate) async fn check(pool: &Pool, schema: &str) -> Result<()> {
    let c = &pool.connect_raw().await?;
    let fail = |e: tokio_postgres::Error| errors::failed(&pool.shown, &e, Sent::No);
    let table: Option<String> = c
        .query_one("SELECT to_regclass('tinystore_schema')::text", &[])
        .await
        .map_err(fail)?
        .get(0);
    if table.is_none() {
        return Err(Error::invalid(format!(
            "there is no TinyStore store at {} in the schema {schema}; nothing was created",
            pool.shown
        )));
    }
    refuse_foreign(pool, c, schema).await?;
    let found: Option<i32> = c
        .query_opt(sql::SCHEMA_READ, &[])
        .await
        .map_err(fail)?
        .map(|r| r.get(0));
    match found {
        Some(v) if v > sql::SCHEMA_VERSION => Err(newer(pool, v)),
        _ => Ok(()),
    }
}

pub(crate) async fn create(pool: &Pool, schema: &str) -> Result<()> {
    // Its statements name tables this may be about to create: a connection
    // without the prepared statements of the others.
    let c = &pool.connect_raw().await?;
    let fail = |e: tokio_postgres::Error| errors::failed(&pool.shown, &e, Sent::No);
    c.batch_execute("BEGIN").await.map_err(fail)?;
    c.execute("SELECT pg_advisory_xact_lock($1)", &[&sql::SCHEMA_LOCK])
        .await
        .map_err(fail)?;
    // The schema's name was checked when the location was parsed.
    c.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
        .await
        .map_err(fail)?;
    if let Err(e) = refuse_foreign(pool, c, schema).await {
        let _ = c.batch_execute("ROLLBACK").await;
        return Err(e);
    }
    c.batch_execute(sql::SCHEMA_TABLE).await.map_err(fail)?;
    let found: Option<i32> = c
        .query_opt(sql::SCHEMA_READ, &[])
        .await
        .map_err(fail)?
        .map(|r| r.get(0));
    if let Some(v) = found
        && v > sql::SCHEMA_VERSION
    {
        let _ = c.batch_execute("ROLLBACK").await;
        return Err(newer(pool, v));
    }
    // Every version's statements are idempotent and run on every open, so
    // that a database any earlier build made gains what it lacks.
    c.batch_execute(sql::SCHEMA_V1).await.map_err(fail)?;
    c.batch_execute(sql::SCHEMA_V2).await.map_err(fail)?;
    c.batch_execute(super::once::SCHEMA_V3).await.map_err(fail)?;
    c.batch_execute(super::limit_rows::SCHEMA_V4).await.map_err(fail)?;
    c.batch_execute(super::clock::SCHEMA_V5).await.map_err(fail)?;
    c.execute(super::clock::MARK_RAISE, &[&super::clock::MARK_LOCK])
        .await
        .map_err(fail)?;
    c.execute(sql::SCHEMA_WRITE, &[&sql::SCHEMA_VERSION])
        .await
        .map_err(fail)?;
    c.batch_execute("COMMIT").await.map_err(fail)?;
    Ok(())
}
