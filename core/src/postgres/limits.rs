//! The statements of rate limits on PostgreSQL. Quotas and counters need
//! none of their own: each of their writes is [`super::cells::row_write`]
//! on the key's locked row, the rule deciding in the core. A rate limit's
//! `allow` is one statement instead ([`super::sql::RATE_ALLOW`]), so that a
//! hot key costs one round trip and no lock held across one; what it
//! answers is decided in the core on what the statement returns.

use tokio_postgres::{Client, Statement};

use super::SentFlag;
use super::errors::{self, Sent};
use super::pool::Pool;
use super::sql;
use crate::error::Result;

/// The prepared statements of rate limits, one set per connection.
pub(crate) struct Statements {
    rate_allow: Statement,
    rate_peek: Statement,
}

pub(crate) async fn prepare(c: &Client) -> std::result::Result<Statements, tokio_postgres::Error> {
    let (rate_allow, rate_peek) = futures_util::try_join!(c.prepare(sql::RATE_ALLOW), c.prepare(sql::RATE_PEEK))?;
    Ok(Statements { rate_allow, rate_peek })
}

/// What one `allow` statement saw and did.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RateSeen {
    /// The clock that judged it (ns).
    pub now: i64,
    /// The key's new `due` when the request passed.
    pub passed: Option<i64>,
    /// The key's `due` in the statement's snapshot (0: none). After a
    /// refusal it may lag a racer that committed meanwhile.
    pub snapshot: i64,
}

/// One `allow` of `cost` ns against `tolerance` ns ahead of now, `now` being
/// the store's test clock (ns) or `None` for the database's.
pub(crate) async fn rate_allow(
    pool: &Pool,
    sent: &SentFlag,
    (bucket, path): (i64, &[u8]),
    now: Option<i64>,
    cost: i64,
    tolerance: i64,
) -> Result<RateSeen> {
    let c = pool.shared().await?;
    sent.commit_sent();
    let r = c
        .client
        .query_one(&c.st.limits.rate_allow, &[&bucket, &path, &now, &cost, &tolerance])
        .await;
    match r {
        Ok(r) => Ok(RateSeen {
            now: r.get(0),
            passed: r.get(1),
            snapshot: r.get::<_, Option<i64>>(2).unwrap_or(0),
        }),
        Err(e) => {
            if e.as_db_error().is_none() {
                pool.drop_shared(&c).await;
            }
            Err(errors::failed(&pool.shown, &e, Sent::Commit))
        }
    }
}

/// The clock (ns) and a key's `due` (0: none), counting nothing.
pub(crate) async fn rate_peek(pool: &Pool, (bucket, path): (i64, &[u8]), now: Option<i64>) -> Result<(i64, i64)> {
    let c = pool.shared().await?;
    let r = c
        .client
        .query_one(&c.st.limits.rate_peek, &[&bucket, &path, &now])
        .await
        .map_err(|e| errors::failed(&pool.shown, &e, Sent::No))?;
    Ok((r.get(0), r.get::<_, Option<i64>>(1).unwrap_or(0)))
}

/// Deletes a key's row, dead or live, in one statement that commits by itself.
pub(crate) async fn delete(pool: &Pool, sent: &SentFlag, (bucket, path): (i64, &[u8])) -> Result<()> {
    let c = pool.shared().await?;
    sent.commit_sent();
    c.client
        .execute(&c.st.delete, &[&bucket, &path])
        .await
        .map_err(|e| errors::failed(&pool.shown, &e, Sent::Commit))?;
    Ok(())
}
