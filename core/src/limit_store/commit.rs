//! The limit store's update, as a function of the writer's group: the
//! check-and-write of several keys, judged against the bound on the count
//! of entries (`count.rs`), which it moves by the rows it adds or removes
//! in the same transaction.

use crate::clock::from_millis;
use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::key::show_key;
use crate::raw::Raw;
use crate::storage::SWEEP_BATCH;
use crate::storage::{self, Cell};
use crate::values::{Expiry, Target, WriteOptions};

use super::{Change, FULL_LOG_EVERY, LimitEntry, LimitEvent, MAX_LIMIT_VALUE, Shared};
use crate::limit_count::{count_on, set_count, uncount_swept};

/// After a full store refused a key, new keys are refused without another
/// sweep for this long (ms).
const FULL_RECHECK: i64 = 1000;

/// What one update's write did.
pub(crate) enum Outcome {
    /// Every key written.
    Written {
        entries: Vec<Option<LimitEntry>>,
        events: Vec<LimitEvent>,
    },
    /// A key changed since the read: the entries and versions now.
    Changed {
        now: i64,
        fresh: Vec<(Option<LimitEntry>, Option<i64>)>,
    },
    /// Nothing of the update was written.
    Refused { error: Error, events: Vec<LimitEvent> },
}

/// An entry and its version from a live row.
pub(crate) fn cell_entry(cell: Option<Cell>) -> Result<(Option<LimitEntry>, Option<i64>)> {
    let Some(cell) = cell else { return Ok((None, None)) };
    let bad = || Error::corrupt("a limit store row is not an entry of JSON text with an expiry");
    let Raw::Bytes(b) = cell.value else { return Err(bad()) };
    let value = String::from_utf8(b).map_err(|_| bad())?;
    let expires_at = cell.expires.ok_or_else(bad)?;
    Ok((Some(LimitEntry { value, expires_at }), Some(cell.version)))
}

/// Refuses bad changes before anything is queued: one a key, values of
/// JSON text within the size limit.
pub(crate) fn check_changes(sh: &Shared, keys: &[Vec<u8>], changes: &[Change]) -> Result<()> {
    let name = &sh.core.name;
    if changes.len() != keys.len() {
        return Err(Error::invalid(format!(
            "apply answered {} changes for {} keys: give one a key",
            changes.len(),
            keys.len()
        ))
        .in_bucket(name));
    }
    for (k, c) in keys.iter().zip(changes) {
        let Change::Put(e) = c else { continue };
        if e.value.len() > MAX_LIMIT_VALUE {
            return Err(Error::limit(format!(
                "the value is {} bytes of JSON, over the limit store's {MAX_LIMIT_VALUE} bytes (4 KB); nothing was written",
                e.value.len()
            ))
            .at(name, show_key(k)));
        }
        if serde_json::from_str::<serde::de::IgnoredAny>(&e.value).is_err() {
            return Err(Error::invalid("the value is not JSON text; nothing was written").at(name, show_key(k)));
        }
    }
    Ok(())
}

fn log_every() -> i64 {
    FULL_LOG_EVERY.as_millis() as i64
}

/// The threshold of the `limit-store-filling` warning: 80% of the bound.
fn filling_at(max: usize) -> usize {
    max.saturating_mul(4).div_ceil(5)
}

/// Adds the filling warning, at most once a minute per handle.
pub(crate) fn filling(sh: &Shared, now: i64, entries: usize, events: &mut Vec<LimitEvent>) {
    if entries < filling_at(sh.max_entries) {
        return;
    }
    let mut watch = sh.watch.lock().unwrap_or_else(|p| p.into_inner());
    if watch.last_filling.is_none_or(|t| now - t >= log_every()) {
        watch.last_filling = Some(now);
        events.push(LimitEvent::Filling {
            entries,
            max_entries: sh.max_entries,
        });
    }
}

/// What the write does to one key.
pub(crate) enum Step {
    Keep,
    Delete,
    Put(LimitEntry),
}

/// The steps of `changes` at `now`: an entry written already expired is a delete.
pub(crate) fn steps_of(changes: &[Change], now: i64) -> Vec<Step> {
    changes
        .iter()
        .map(|c| match c {
            Change::Keep => Step::Keep,
            Change::Delete => Step::Delete,
            Change::Put(e) if e.expires_at <= now => Step::Delete,
            Change::Put(e) => Step::Put(e.clone()),
        })
        .collect()
}

/// The rows `steps` add and remove, given which keys have a row now (live
/// or expired, not yet swept: a put over one adds none).
pub(crate) fn tally(steps: &[Step], rows: &[bool]) -> (usize, usize) {
    let mut added = 0usize;
    let mut removed = 0usize;
    for (s, &row) in steps.iter().zip(rows) {
        match (s, row) {
            (Step::Put(_), false) => added += 1,
            (Step::Delete, true) => removed += 1,
            _ => {}
        }
    }
    (added, removed)
}

/// Whether adding `added` and removing `removed` rows to `count` passes
/// the bound.
pub(crate) fn over_bound(sh: &Shared, count: usize, (added, removed): (usize, usize)) -> bool {
    added > 0 && (count + added).saturating_sub(removed) > sh.max_entries
}

/// Whether a full store refused a new key within [`FULL_RECHECK`] of `now`:
/// new keys are then refused without another sweep.
pub(crate) fn refused_lately(sh: &Shared, now: i64) -> bool {
    let watch = sh.watch.lock().unwrap_or_else(|p| p.into_inner());
    watch.full_until.is_some_and(|t| now < t)
}

/// The refusal of an update that would pass the bound: names the first new
/// key, and gives the `limit-store-full` error at most once a minute.
pub(crate) fn refuse_full(
    sh: &Shared,
    now: i64,
    keys: &[Vec<u8>],
    steps: &[Step],
    rows: &[bool],
    mut events: Vec<LimitEvent>,
) -> Outcome {
    let mut watch = sh.watch.lock().unwrap_or_else(|p| p.into_inner());
    watch.full_until = Some(now + FULL_RECHECK);
    if watch.last_full.is_none_or(|t| now - t >= log_every()) {
        watch.last_full = Some(now);
        events.push(LimitEvent::Full {
            max_entries: sh.max_entries,
        });
    }
    let new_key = steps
        .iter()
        .zip(rows)
        .position(|(s, &row)| matches!(s, Step::Put(_)) && !row)
        .unwrap_or(0);
    let error = Error::limit(format!(
        "the limit store is full ({} entries) and holds no entry for this key, so it is unavailable; \
         keys it holds keep counting. Nothing was written",
        sh.max_entries
    ))
    .at(&sh.core.name, show_key(&keys[new_key]));
    Outcome::Refused { error, events }
}

/// An update that fits after all: new keys are looked at again.
pub(crate) fn fits_again(sh: &Shared) {
    sh.watch.lock().unwrap_or_else(|p| p.into_inner()).full_until = None;
}

/// The count after a write from `count`, and the warning when it crossed 80%.
pub(crate) fn count_after(
    sh: &Shared,
    now: i64,
    count: usize,
    (added, removed): (usize, usize),
    events: &mut Vec<LimitEvent>,
) -> usize {
    let after = (count + added).saturating_sub(removed);
    let at = filling_at(sh.max_entries);
    if count < at && after >= at {
        filling(sh, now, after, events);
    }
    after
}

/// Checks every key is at the version read, then writes all of them.
pub(crate) fn commit(
    sh: &Shared,
    w: &mut WriteCtx<'_>,
    keys: &[Vec<u8>],
    targets: &[Target],
    seen: &[Option<i64>],
    changes: &[Change],
) -> Result<Outcome> {
    let id = sh.core.id;
    let mut fresh = Vec::with_capacity(targets.len());
    let mut changed = false;
    for (t, s) in targets.iter().zip(seen) {
        let (e, v) = cell_entry(t.read(w.conn, w.now)?)?;
        changed |= v != *s;
        fresh.push((e, v));
    }
    if changed {
        return Ok(Outcome::Changed { now: w.now, fresh });
    }
    let steps = steps_of(changes, w.now);
    // Rows as they are (live or expired, not yet swept): a put over one adds none.
    let rows = |w: &WriteCtx<'_>| -> Result<Vec<bool>> {
        targets
            .iter()
            .map(|t| Ok(storage::meta(w.conn, id, t.path(), w.now)?.is_some()))
            .collect()
    };
    let mut row = rows(w)?;
    let mut moved = tally(&steps, &row);
    let mut count = count_on(w.conn, id, w.now)?;
    let mut events = Vec::new();
    if over_bound(sh, count, moved) {
        let recently = refused_lately(sh, w.now);
        if !recently {
            // Full, as the count says: remove expired rows (of every name,
            // moving each limit store's count by its own) and look again.
            let swept = storage::sweep_expired(w.conn, w.now, SWEEP_BATCH)?;
            uncount_swept(w, &swept)?;
            count = count_on(w.conn, id, w.now)?;
            row = rows(w)?;
            moved = tally(&steps, &row);
            filling(sh, w.now, count, &mut events);
        }
        if recently || over_bound(sh, count, moved) {
            return Ok(refuse_full(sh, w.now, keys, &steps, &row, events));
        }
        fits_again(sh);
    }
    let mut entries = Vec::with_capacity(targets.len());
    for ((t, s), (&there, (old, _))) in targets.iter().zip(&steps).zip(row.iter().zip(fresh)) {
        match s {
            Step::Keep => entries.push(old),
            Step::Delete => {
                if there {
                    t.op_delete(w, None)?;
                }
                entries.push(None);
            }
            Step::Put(e) => {
                let value = Raw::Bytes(e.value.clone().into_bytes());
                let opts = WriteOptions {
                    expiry: Some(Expiry::At(from_millis(e.expires_at))),
                    if_version: None,
                };
                t.op_set(w, &value, opts)?;
                entries.push(Some(e.clone()));
            }
        }
    }
    let after = count_after(sh, w.now, count, moved, &mut events);
    if after != count {
        set_count(w, id, after)?;
    }
    Ok(Outcome::Written { entries, events })
}
