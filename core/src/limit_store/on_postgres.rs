//! The limit store on a PostgreSQL store, shared by every server: the same
//! protocol and rules as on kv.db (`commit.rs` decides: the version check,
//! what a change adds or removes, the bound, the events), on the rows of
//! `tinystore_limits` and the count of `tinystore_limit_counts`
//! ([`crate::postgres::limit_rows`], which only runs the statements).
//!
//! An update's write is one transaction that locks the keys' rows, so two
//! servers' updates of one key count as if they ran one at a time; the
//! clock is the database's (or the store's test clock), so every server
//! judges expiry alike. A new key whose row a racer inserted first, or a
//! deadlock with another server's update or sweep, writes nothing and runs
//! `apply` again, as a version that moved does.

use crate::error::{ErrorKind, Result};
use crate::postgres::limit_rows::{self, LimitRow, UpdateTx};
use crate::postgres::{Pool, SentFlag};
use crate::storage::SWEEP_BATCH;
use crate::values::{Target, clock_of};

use super::commit::{
    Outcome, Step, count_after, filling, fits_again, over_bound, refuse_full, refused_lately, steps_of, tally,
};
use super::{Change, LimitEntry, Seen, Shared};

fn paths(targets: &[Target]) -> Vec<Vec<u8>> {
    targets.iter().map(|t| t.path().to_vec()).collect()
}

fn seen_of(row: Option<&LimitRow>) -> Seen {
    match row {
        None => (None, None),
        Some(r) => (
            Some(LimitEntry {
                value: r.value.clone(),
                expires_at: r.expires,
            }),
            Some(r.version),
        ),
    }
}

/// The row of each path among `rows`, in the paths' order.
fn in_order<'r>(paths: &[Vec<u8>], rows: &'r [LimitRow]) -> Vec<Option<&'r LimitRow>> {
    paths.iter().map(|p| rows.iter().find(|r| r.path == *p)).collect()
}

/// The clock and the live entries of `paths`, with their versions.
async fn read_paths(pool: &Pool, sh: &Shared, paths: &[Vec<u8>]) -> Result<(i64, Vec<Seen>)> {
    let (now, rows) = limit_rows::read(pool, sh.core.id, paths, clock_of(&sh.core)).await?;
    Ok((now, in_order(paths, &rows).into_iter().map(seen_of).collect()))
}

/// The live entries of `targets` and the clock that judged them.
pub(super) async fn read(pool: &Pool, sh: &Shared, targets: &[Target]) -> Result<(i64, Vec<Seen>)> {
    read_paths(pool, sh, &paths(targets)).await
}

/// Checks every key is at the version read, then writes all of them, in
/// one transaction.
pub(super) async fn commit(
    pool: &Pool,
    sent: &SentFlag,
    sh: &Shared,
    keys: &[Vec<u8>],
    targets: &[Target],
    seen: &[Option<i64>],
    changes: &[Change],
) -> Result<Outcome> {
    let p = paths(targets);
    match commit_once(pool, sent, sh, keys, &p, seen, changes).await {
        // A deadlock with another server's update or sweep, which
        // PostgreSQL broke by rolling this one back: nothing was written.
        Err(e) if e.kind() == ErrorKind::Conflict => {
            let (now, fresh) = read_paths(pool, sh, &p).await?;
            Ok(Outcome::Changed { now, fresh })
        }
        r => r,
    }
}

async fn commit_once(
    pool: &Pool,
    sent: &SentFlag,
    sh: &Shared,
    keys: &[Vec<u8>],
    p: &[Vec<u8>],
    seen: &[Option<i64>],
    changes: &[Change],
) -> Result<Outcome> {
    let (tx, now, rows, unlocked_count) = UpdateTx::begin(pool, sh.core.id, p, clock_of(&sh.core)).await?;
    let found = in_order(p, &rows);
    let fresh: Vec<Seen> = found.iter().map(|r| seen_of(r.filter(|r| r.expires > now))).collect();
    if fresh.iter().zip(seen).any(|((_, v), s)| v != s) {
        tx.rollback().await?;
        return Ok(Outcome::Changed { now, fresh });
    }
    let steps = steps_of(changes, now);
    // Rows as they are (live or expired, not yet swept): a put over one adds none.
    let mut row: Vec<bool> = found.iter().map(Option::is_some).collect();
    let mut moved = tally(&steps, &row);
    let mut count = unlocked_count;
    let mut events = Vec::new();
    if moved.0 > 0 {
        // Adding rows: the bound is judged on a count no other update moves meanwhile.
        count = tx.lock_count().await?;
        if over_bound(sh, count, moved) {
            let recently = refused_lately(sh, now);
            let mut swept = false;
            if !recently {
                // Full, as the count says: remove this store's expired rows
                // (its count moved with them) and look again.
                let (gone, after) = tx.sweep_own(now, SWEEP_BATCH as i64).await?;
                swept = !gone.is_empty();
                count = after;
                for (there, path) in row.iter_mut().zip(p) {
                    *there &= !gone.contains(path);
                }
                moved = tally(&steps, &row);
                filling(sh, now, count, &mut events);
            }
            if recently || over_bound(sh, count, moved) {
                // What the sweep removed stays removed; nothing else was written.
                match swept {
                    true => tx.commit(sent).await?,
                    false => tx.rollback().await?,
                }
                return Ok(refuse_full(sh, now, keys, &steps, &row, events));
            }
            fits_again(sh);
        }
    }
    let mut entries = Vec::with_capacity(p.len());
    for (((s, &there), path), (old, _)) in steps.iter().zip(&row).zip(p).zip(fresh) {
        match s {
            Step::Keep => entries.push(old),
            Step::Delete => {
                if there {
                    tx.delete(path).await?;
                }
                entries.push(None);
            }
            Step::Put(e) => {
                if there {
                    tx.update(path, e.expires_at, &e.value).await?;
                } else if !tx.insert(path, e.expires_at, &e.value).await? {
                    // Another server inserted the key since the read.
                    tx.rollback().await?;
                    let (now, fresh) = read_paths(pool, sh, p).await?;
                    return Ok(Outcome::Changed { now, fresh });
                }
                entries.push(Some(e.clone()));
            }
        }
    }
    let after = count_after(sh, now, count, moved, &mut events);
    if after != count {
        tx.move_count(after as i64 - count as i64).await?;
    }
    tx.commit(sent).await?;
    Ok(Outcome::Written { entries, events })
}

/// The store's own sweep: its expired rows, batch by batch, each with the
/// count moved. Answers the rows removed and the count after.
pub(super) async fn sweep(pool: &Pool, sent: &SentFlag, sh: &Shared, rounds: usize) -> Result<(usize, usize)> {
    let r = limit_rows::sweep(pool, sent, sh.core.id, clock_of(&sh.core), SWEEP_BATCH as i64, rounds).await?;
    fits_again(sh);
    Ok(r)
}
