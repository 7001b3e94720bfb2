//! Quotas, counters and rate limits on a PostgreSQL store. The rules are
//! the ones the SQLite path applies, called from here: a quota decides on
//! its row with [`QuotaCore::allow`] and [`QuotaCore::refund`], a counter
//! with [`decide_change`], a rate limit with [`Gcra::decide`]. The backend
//! only runs statements: a quota's or a counter's write is a transaction
//! on the key's locked row ([`cells::row_write`]), on the database's clock,
//! so racing servers count exactly and a quota's use counts in every
//! window or in none; a rate limit's `allow` is one statement. Inside a
//! caller's transaction ([`crate::postgres::tx`]) the same decisions run on
//! the row that transaction locks, and commit with the rest of it.

use std::sync::Arc;
use std::time::Instant;

use super::Allowance;
use super::counters::{How, decide_change};
use super::gcra::{Decision, Gcra};
use super::quota::{Decided, QuotaCore, Row, encode_row, parse_row};
use super::refusals::Refusals;
use crate::budget::Held;
use crate::clock::Clock;
use crate::error::Result;
use crate::group_commit::Ticket;
use crate::key::Branch;
use crate::postgres::cells::{self, Change, Found};
use crate::postgres::tx::PgTx;
use crate::postgres::{PgStore, Pool, SentFlag, limits};
use crate::raw::Raw;
use crate::values::on_postgres::{self as values, clock_of, pg_then};
use crate::values::{BucketCore, Target};

/// How many times an `allow` is asked again when the statement refused it
/// but its snapshot lagged a racer's commit, so the answer cannot be told.
const LAGGING_RETRIES: usize = 8;

/// Refuses a blocking write from inside a transaction of the store, as
/// on kv.db ([`crate::guards`]): it would write beside the transaction
/// instead of in it.
pub(super) fn refuse_inside_tx(core: &BucketCore) -> Result<()> {
    if core.store.inner.writer.held_here() {
        return Err(crate::error::inside_tx_error().in_bucket(&core.name));
    }
    Ok(())
}

// ---- quotas ----

/// What a write of a quota key does on its locked row: decide on the live
/// windows at the database's clock, write the row (or delete it when no
/// window is left).
fn quota_change<'a>(
    core: &'a QuotaCore,
    decide: &'a (impl Fn(&QuotaCore, &Row, i64) -> Decided + Sync),
) -> impl FnMut(i64, Option<&Found>) -> Result<(Change, Allowance)> + 'a {
    move |now, found| {
        let row = parse_row(found.filter(|f| f.live).map(|f| f.cell.clone()))?;
        let d = decide(core, &row, now);
        let change = match &d.write {
            None => Change::Keep,
            Some(new) => match encode_row(new)? {
                Some((value, expires)) => Change::Put { value, expires },
                None if found.is_some() => Change::Delete,
                None => Change::Keep,
            },
        };
        Ok((change, d.answer))
    }
}

/// One write of a quota key: a transaction of its own on the key's locked
/// row ([`quota_change`]), committed.
async fn quota_op(
    pool: &Pool,
    sent: &SentFlag,
    core: &QuotaCore,
    t: &Target,
    decide: &(impl Fn(&QuotaCore, &Row, i64) -> Decided + Sync),
) -> Result<Allowance> {
    let answer = cells::row_write(
        pool,
        sent,
        t.core.id,
        t.path(),
        clock_of(&t.core),
        quota_change(core, decide),
    )
    .await;
    answer.map(|(a, _)| a).map_err(|e| t.name(e))
}

/// A write of a quota key inside a caller's transaction: the same decision
/// on the row the transaction locks, at its clock; it commits with the rest.
pub(super) fn quota_write_in_tx(
    p: &PgTx,
    core: &QuotaCore,
    t: &Target,
    decide: impl Fn(&QuotaCore, &Row, i64) -> Decided + Sync,
) -> Result<Allowance> {
    p.write(t.core.id, t.path(), quota_change(core, &decide))
        .map(|(a, _)| a)
        .map_err(|e| t.name(e))
}

pub(super) fn quota_write(
    pg: &PgStore,
    core: &QuotaCore,
    t: &Target,
    decide: impl Fn(&QuotaCore, &Row, i64) -> Decided + Sync,
) -> Result<Allowance> {
    refuse_inside_tx(&t.core)?;
    pg.block(async |pool, sent| quota_op(pool, sent, core, t, &decide).await)
        .map_err(|e| t.name(e))
}

pub(super) fn quota_write_then(
    pg: &PgStore,
    core: Arc<QuotaCore>,
    t: Target,
    decide: impl Fn(&QuotaCore, &Row, i64) -> Decided + Send + Sync + 'static,
    done: impl FnOnce(Result<Allowance>) + Send + 'static,
) -> Result<Ticket> {
    let t2 = t.clone();
    let f =
        move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move { quota_op(&pool, &sent, &core, &t2, &decide).await };
    pg_then(pg, &t, Held::nothing(), f, done)
}

/// A quota key's row and the clock that judged it, counting nothing.
pub(super) fn quota_read(pg: &PgStore, t: &Target) -> Result<(Row, i64)> {
    let now = clock_of(&t.core);
    let found = pg
        .block(async |pool, _| cells::get(pool, t.core.id, t.path(), now).await)
        .map_err(|e| t.name(e))?;
    // No row: no window has started, and the clock decides nothing.
    let (cell, now) = found.map_or((None, 0), |(c, now)| (Some(c), now));
    Ok((parse_row(cell).map_err(|e| t.name(e))?, now))
}

// ---- counters and the deletes every kind shares ----

/// What a change of a counter does on its locked row: combine the live
/// value (a missing or expired one is 0, and gets the ttl), write it if it
/// changed ([`decide_change`]).
fn counter_decide(t: &Target, how: How, n: i64) -> impl FnMut(i64, Option<&Found>) -> Result<(Change, i64)> + '_ {
    move |now, found| {
        let live = match found.filter(|f| f.live) {
            Some(f) => Some((f.cell.value.as_int()?, f.cell.expires)),
            None => None,
        };
        let (new, write) = decide_change(live, t.core.ttl, now, how, n)?;
        let change = match write {
            Some(expires) => Change::Put {
                value: Raw::Int(new),
                expires,
            },
            None => Change::Keep,
        };
        Ok((change, new))
    }
}

async fn counter_op(pool: &Pool, sent: &SentFlag, t: &Target, how: How, n: i64) -> Result<i64> {
    let (new, _) = cells::row_write(
        pool,
        sent,
        t.core.id,
        t.path(),
        clock_of(&t.core),
        counter_decide(t, how, n),
    )
    .await
    .map_err(|e| t.name(e))?;
    Ok(new)
}

/// A change of a counter inside a caller's transaction on PostgreSQL: the
/// same decision on the row the transaction locks; it commits with the rest.
pub(crate) fn op_change_on_postgres(t: &Target, p: &PgTx, how: How, n: i64) -> Result<i64> {
    let (new, _) = p
        .write(t.core.id, t.path(), counter_decide(t, how, n))
        .map_err(|e| t.name(e))?;
    Ok(new)
}

pub(super) fn counter_change(pg: &PgStore, t: &Target, how: How, n: i64) -> Result<i64> {
    refuse_inside_tx(&t.core)?;
    pg.block(async |pool, sent| counter_op(pool, sent, t, how, n).await)
        .map_err(|e| t.name(e))
}

pub(super) fn counter_change_then(
    pg: &PgStore,
    t: Target,
    how: How,
    n: i64,
    done: impl FnOnce(Result<i64>) + Send + 'static,
) -> Result<Ticket> {
    let t2 = t.clone();
    let f = move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move { counter_op(&pool, &sent, &t2, how, n).await };
    pg_then(pg, &t, Held::nothing(), f, done)
}

/// A counter's value: 0 when it is missing or expired.
pub(super) fn counter_get(pg: &PgStore, t: &Target) -> Result<i64> {
    let now = clock_of(&t.core);
    let found = pg
        .block(async |pool, _| cells::get(pool, t.core.id, t.path(), now).await)
        .map_err(|e| t.name(e))?;
    match found {
        Some((cell, _)) => cell.value.as_int().map_err(|e| t.name(e)),
        None => Ok(0),
    }
}

/// Deletes the key; says whether a live one was there.
pub(super) fn counter_delete(pg: &PgStore, t: &Target) -> Result<bool> {
    refuse_inside_tx(&t.core)?;
    pg.block(async |pool, sent| values::delete(pool, sent, t, None).await)
        .map_err(|e| t.name(e))
}

pub(super) fn counter_delete_then(
    pg: &PgStore,
    t: Target,
    done: impl FnOnce(Result<bool>) + Send + 'static,
) -> Result<Ticket> {
    let t2 = t.clone();
    let f = move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move { values::delete(&pool, &sent, &t2, None).await };
    pg_then(pg, &t, Held::nothing(), f, done)
}

/// Forgets a quota key.
pub(super) fn delete(pg: &PgStore, t: &Target) -> Result<()> {
    counter_delete(pg, t).map(|_| ())
}

pub(super) fn delete_then(pg: &PgStore, t: Target, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<Ticket> {
    counter_delete_then(pg, t, move |r| done(r.map(|_| ())))
}

/// Clears a branch and every branch under it, in one statement (whose
/// errors name the branch).
pub(super) fn clear(pg: &PgStore, core: &BucketCore, branch: &Branch) -> Result<()> {
    refuse_inside_tx(core)?;
    pg.block(async |pool, sent| values::clear(pool, sent, core, branch).await)
}

pub(super) fn clear_then(
    pg: &PgStore,
    core: Arc<BucketCore>,
    branch: Branch,
    done: impl FnOnce(Result<()>) + Send + 'static,
) -> Result<Ticket> {
    let f =
        move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move { values::clear(&pool, &sent, &core, &branch).await };
    pg.spawn(f, done)?;
    Ok(Ticket::finished())
}

// ---- rate limits ----

/// The store's test clock in nanoseconds, passed to every statement; `None`
/// lets the database's clock judge.
fn given_nanos(clock: &Clock) -> Option<i64> {
    clock.is_manual().then(|| clock.now_millis().saturating_mul(1_000_000))
}

/// A rate limit key: its name's id and its path.
pub(super) type RateKey<'a> = (i64, &'a [u8]);

/// One `allow` of `n` requests: refused from memory when the key was seen
/// full, else one statement, whose answer the GCRA tells from the `due` it
/// returns.
pub(super) fn rate_allow(
    pg: &PgStore,
    refusals: &Refusals,
    clock: &Clock,
    key: RateKey<'_>,
    gcra: &Gcra,
    n: u64,
) -> Result<Decision> {
    let given = given_nanos(clock);
    if let Some(d) = refusals.refuses(key.1, given, gcra, n) {
        return Ok(d);
    }
    let cost = gcra.interval.saturating_mul(n as i64);
    let mut last = None;
    for _ in 0..LAGGING_RETRIES {
        let sent_at = Instant::now();
        let seen =
            pg.block(async |pool, sent| limits::rate_allow(pool, sent, key, given, cost, gcra.tolerance()).await)?;
        let d = match seen.passed {
            // It started from max(due, now) = due - cost, as decide does.
            Some(due) => gcra.decide(due - cost, seen.now, n),
            None => gcra.decide(seen.snapshot, seen.now, n),
        };
        debug_assert!(seen.passed.is_none() || (d.ok && Some(d.due) == seen.passed));
        if seen.passed.is_none() && d.ok {
            // Refused on a row newer than the snapshot: ask again.
            last = Some(seen.now);
            continue;
        }
        refusals.saw(key.1, gcra, (d.due, seen.now), sent_at, given);
        return Ok(d);
    }
    // Still lagging: refused, by the least `due` that refuses.
    let now = last.expect("at least one statement ran");
    Ok(gcra.decide(now.saturating_add(gcra.tolerance()) - cost + 1, now, n))
}

/// The key's state now, counting nothing.
pub(super) fn rate_peek(pg: &PgStore, clock: &Clock, key: RateKey<'_>, gcra: &Gcra) -> Result<Decision> {
    let given = given_nanos(clock);
    let (now, due) = pg.block(async |pool, _| limits::rate_peek(pool, key, given).await)?;
    Ok(gcra.peek(due, now))
}

/// Forgets the key, in the database and in this process's memory.
pub(super) fn rate_reset(pg: &PgStore, refusals: &Refusals, key: RateKey<'_>) -> Result<()> {
    refusals.forget(key.1);
    pg.block(async |pool, sent| limits::delete(pool, sent, key).await)?;
    // A refusal seen while the delete was in flight is as old as the reset.
    refusals.forget(key.1);
    Ok(())
}
