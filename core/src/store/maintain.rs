//! Maintenance: flushing what memory holds, idle renewals, and deleting
//! cleared and expired rows in bounded batches (KV-17).
//!
//! An ordinary store runs this on a background thread: memory and renewals
//! every second, sweeps every minute and every ten seconds while the last
//! sweep stopped at its bound. A manual store runs it only in `maintain()`.
//!
//! The expired sweep deletes rows of every name, limit stores' included,
//! whether or not this process opened them: it moves each limit store's
//! count of entries by the rows it deleted, in the same transaction.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{StoreInner, pause};
use crate::error::Result;
use crate::group_commit::WriteCtx;
use crate::storage::{self, SWEEP_BATCH};

/// Transactions per sweep; more rows wait for the next one.
const SWEEP_ROUNDS: usize = 10;
/// Pending renewals held in memory; past this a read asks again next time.
const RENEWALS_BOUND: usize = 100_000;

/// What one maintenance pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Maintenance {
    /// Keys of counters and rate limits written from memory.
    pub flushed: usize,
    /// Idle keys whose renewal was written.
    pub renewed: usize,
    /// Rows deleted because a clear hid them.
    pub cleared: usize,
    /// Expired rows deleted.
    pub expired: usize,
    /// Whether rows were left for the next pass (a sweep reached its bound).
    pub more: bool,
}

/// Something holding state in memory that must reach the file: counters
/// with `flush_every`, rate limits. Registered with the store, which calls
/// it every second, on `maintain` and on close.
pub(crate) trait Flush: Send + Sync {
    /// Writes what changed. `force` writes now; otherwise only when this
    /// flusher's period has passed. Returns how many keys were written.
    fn flush(&self, store: &StoreInner, force: bool) -> Result<usize>;
}

/// A renewal asked for by a read: bound to what the read saw.
#[derive(Clone, Copy, Debug)]
struct Renewal {
    version: i64,
    seen: Option<i64>,
    until: i64,
}

/// Renewals waiting for the next flush.
#[derive(Default)]
pub(crate) struct Renewals {
    pending: Mutex<HashMap<(i64, Vec<u8>), Renewal>>,
}

impl Renewals {
    /// Asks for `path` to be renewed to `until`, if it still has `version`
    /// and expiry `seen` when the flush runs.
    pub fn ask(&self, bucket: i64, path: Vec<u8>, version: i64, seen: Option<i64>, until: i64) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if p.len() >= RENEWALS_BOUND && !p.contains_key(&(bucket, path.clone())) {
            return; // asked again by the next read
        }
        p.insert((bucket, path), Renewal { version, seen, until });
    }

    fn take(&self) -> Vec<((i64, Vec<u8>), Renewal)> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.drain().collect()
    }

    fn give_back(&self, batch: Vec<((i64, Vec<u8>), Renewal)>) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for (k, r) in batch {
            p.entry(k).or_insert(r);
        }
    }
}

/// Writes pending renewals in one grouped write; a failed flush keeps them.
pub(crate) fn flush_renewals(store: &StoreInner) -> Result<usize> {
    let batch = store.renewals.take();
    if batch.is_empty() {
        return Ok(0);
    }
    let keep = batch.clone();
    if let Some(pg) = store.postgres() {
        // Each renewal is its own statement, all of them in flight at once.
        let r = pg.block(async |pool, sent| {
            let renew = batch.iter().map(|((bucket, path), r)| {
                crate::postgres::cells::renew(pool, sent, *bucket, path, r.version, r.seen, r.until)
            });
            let done = futures_util::future::try_join_all(renew).await?;
            Ok(done.into_iter().filter(|&renewed| renewed).count())
        });
        if r.is_err() {
            store.renewals.give_back(keep);
        }
        return r;
    }
    let r = store.writer.call(batch.len() * 16, move |w: &mut WriteCtx<'_>| {
        let mut n = 0;
        for ((bucket, path), r) in &batch {
            if storage::renew(w.conn, *bucket, path, r.version, r.seen, r.until)? {
                n += 1;
            }
        }
        Ok(n)
    });
    if r.is_err() {
        store.renewals.give_back(keep);
    }
    r
}

/// Flushes every registered flusher.
pub(crate) fn flush_memory(store: &StoreInner, force: bool) -> Result<usize> {
    let mut total = 0;
    let mut first_err = None;
    for f in store.flushers() {
        match f.flush(store, force) {
            Ok(n) => total += n,
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(total),
    }
}

/// One maintenance pass.
pub(crate) fn run(store: &StoreInner, sweep: bool) -> Result<Maintenance> {
    end_views_past_bound(store);
    if let Some(pg) = store.postgres() {
        return run_on_postgres(store, pg, sweep);
    }
    let mut m = Maintenance {
        flushed: flush_memory(store, true)?,
        renewed: flush_renewals(store)?,
        ..Maintenance::default()
    };
    if sweep {
        for _ in 0..SWEEP_ROUNDS {
            let n = store.writer.call(SWEEP_BATCH, |w: &mut WriteCtx<'_>| {
                storage::sweep_cleared(w.conn, SWEEP_BATCH)
            })?;
            m.cleared += n;
            if n < SWEEP_BATCH {
                break;
            }
        }
        let mut left = true;
        for _ in 0..SWEEP_ROUNDS {
            let n = store.writer.call(SWEEP_BATCH, |w: &mut WriteCtx<'_>| {
                let swept = storage::sweep_expired(w.conn, w.now, SWEEP_BATCH)?;
                crate::limit_count::uncount_swept(w, &swept)?;
                Ok(swept.iter().map(|&(_, n)| n).sum::<usize>())
            })?;
            m.expired += n;
            if n < SWEEP_BATCH {
                left = false;
                break;
            }
        }
        m.more = left;
    }
    Ok(m)
}

/// One maintenance pass of a PostgreSQL store: the renewals reads asked
/// for, then, since a clear deletes its rows at once, only expired rows are
/// left to sweep, by one process at a time (the others find the sweep lock
/// held and skip the round).
fn run_on_postgres(store: &StoreInner, pg: &crate::postgres::PgStore, sweep: bool) -> Result<Maintenance> {
    let mut m = Maintenance {
        renewed: flush_renewals(store)?,
        ..Maintenance::default()
    };
    if !sweep {
        return Ok(m);
    }
    raise_clock_mark(store)?;
    let now = store.clock.is_manual().then(|| store.clock.now_millis());
    // Batches of a thousand rows on the `expires` index, within one call's deadline.
    let most = SWEEP_BATCH;
    let swept = pg.block(async |pool, _| crate::postgres::cells::sweep(pool, now, 1_000, most).await)?;
    m.expired = swept.unwrap_or(0);
    m.more = m.expired >= most;
    Ok(m)
}

/// Raises the high-water mark of a PostgreSQL store's clock to the
/// server's clock (`crate::postgres::clock`), so that a server clock that
/// steps back gives again at most the times since the last round. A test
/// clock's times never raise it; a store in a directory keeps its own.
fn raise_clock_mark(store: &StoreInner) -> Result<()> {
    match store.postgres() {
        Some(pg) if !store.clock.is_manual() => crate::postgres::clock::raise(pg),
        _ => Ok(()),
    }
}

/// Ends the views past their bound, read or not, so that an idle one does
/// not hold back checkpoints ([`crate::open_views`]); on PostgreSQL, the
/// bindings' transactions past theirs ([`crate::postgres::held`]).
fn end_views_past_bound(store: &StoreInner) {
    let now = store.clock.now_millis();
    if let Some(pg) = store.postgres() {
        pg.held.end_past_bound(now);
        return;
    }
    store.views.end_past_bound(&store.readers, now);
}

/// Starts the background thread of an ordinary store. It holds the store
/// weakly, so dropping the last handle still closes the store.
pub(crate) fn start_background(inner: &Arc<StoreInner>) {
    let weak = Arc::downgrade(inner);
    let every = inner.sweep_every;
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let stop2 = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("tinystore-maintain".into())
        .spawn(move || {
            let mut next_sweep = Instant::now() + every;
            let mut failing = false;
            while !pause(&stop2, every.min(Duration::from_secs(1))) {
                let Some(store) = weak.upgrade() else { return };
                if store.check_open().is_err() {
                    return;
                }
                let sweep = Instant::now() >= next_sweep;
                end_views_past_bound(&store);
                let res = flush_memory(&store, false)
                    .and_then(|_| flush_renewals(&store))
                    .and_then(|_| raise_clock_mark(&store))
                    .and_then(|_| if sweep { run(&store, true).map(Some) } else { Ok(None) });
                match res {
                    Ok(m) => {
                        if failing {
                            log::info!(store = store.log_id; "tinystore: maintenance of {} works again", store.dir.display());
                            failing = false;
                        }
                        if let Some(m) = m {
                            let wait = if m.more {
                                every.min(Duration::from_secs(10))
                            } else {
                                every
                            };
                            next_sweep = Instant::now() + wait;
                        }
                    }
                    Err(e) => {
                        if !failing {
                            log::warn!(store = store.log_id; "tinystore: maintenance of {} failed: {e}", store.dir.display());
                            failing = true;
                        }
                        if sweep {
                            next_sweep = Instant::now() + every.min(Duration::from_secs(10));
                        }
                    }
                }
            }
        });
    match spawned {
        Ok(handle) => inner.set_background(handle, stop),
        Err(e) => log::error!(store = inner.log_id; "tinystore: no background maintenance thread: {e}"),
    }
}
