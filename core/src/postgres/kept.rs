//! The one write of kept config on PostgreSQL: a config's changed fields
//! and its stamp row, in one transaction, so that every server reads all
//! of an update or none of it. The other servers learn of it by reading the
//! stamp (`config/watch.rs`), a point read like any other.

use super::SentFlag;
use super::cells::{SetExpiry, columns};
use super::errors::{self, Sent};
use super::pool::Pool;
use crate::error::Result;
use crate::raw::Raw;

/// Writes each row (`Some` value: `set` as its one statement does it;
/// `None`: delete) of name `bucket`, in one transaction. `now` is the
/// store's test clock, or `None` for the database's.
pub(crate) async fn write_rows(
    pool: &Pool,
    sent: &SentFlag,
    bucket: i64,
    rows: &[(Vec<u8>, Option<Raw>)],
    expiry: SetExpiry,
    now: Option<i64>,
) -> Result<()> {
    let held = pool.exclusive().await?;
    let c = held.conn();
    let fail = |sent| move |e: tokio_postgres::Error| errors::failed(&pool.shown, &e, sent);
    let writes = rows.iter().map(|(path, value)| async move {
        let path = path.as_slice();
        match value {
            Some(v) => {
                let (int, bytes) = columns(v);
                let args: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
                    &bucket,
                    &path,
                    &now,
                    &int,
                    &bytes,
                    &expiry.at,
                    &expiry.span,
                    &expiry.keep_live,
                ];
                c.client.execute(&c.st.set, &args).await
            }
            None => c.client.execute(&c.st.delete, &[&bucket, &path]).await,
        }
    });
    // BEGIN and every row in one round trip; COMMIT only once all of them
    // were applied.
    let (begin, written) = futures_util::join!(
        c.client.execute(&c.st.begin, &[]),
        futures_util::future::try_join_all(writes)
    );
    if let Err(e) = begin.and(written.map(|_| 0)) {
        if e.as_db_error().is_some() && c.client.execute(&c.st.rollback, &[]).await.is_ok() {
            held.release();
        }
        return Err(fail(Sent::No)(e));
    }
    sent.commit_sent();
    c.client.execute(&c.st.commit, &[]).await.map_err(fail(Sent::Commit))?;
    held.release();
    Ok(())
}
