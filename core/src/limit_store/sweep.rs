//! The limit store's sweep, which runs in the writer, and the recount,
//! which runs on a reader.
//!
//! The sweep holds the store's one writer, so it must cost what it
//! deletes, not what the store holds: it finds this store's expired rows
//! through the expiry index and moves the count by how many it deleted.
//! It used to count every row before and after (two scans of 1,000,000
//! rows in the writer's transaction, every durable write of the store
//! waiting behind them).
//!
//! Why the count can drift, and only upward. Every write of the limit store
//! (an update, the sweep, a recount's correction) moves the count in the
//! same transaction as the rows it changes, whichever handle or process
//! makes it, so a crash part-way (the process killed, the power lost)
//! rolls back both or neither: a crash cannot drift it. What does drift
//! it: the store's background maintenance, in every process that opens the
//! file (whether or not it opened a limit store), and the refusal path of a
//! full store (`commit.rs`) delete expired rows of every name through
//! `storage::sweep_expired`, which knows nothing of the count. Each such
//! row leaves the count one too high. Nothing adds a row without moving
//! the count, so the count never falls below the rows there are: a bound
//! judged on it may refuse a key early (the full path counts exactly
//! before refusing) but never lets the store grow past its bound.
//!
//! The recount makes it exact again without holding the writer: on a
//! reader, in one snapshot, it counts the rows and reads the count and the
//! recount's generation. The count's excess at that snapshot is what
//! non-counting deletes took; every write after the snapshot moved rows and
//! count together, so taking that excess off the count as it is when the
//! correction runs is right however many writes landed in between. Only
//! taking the same excess off twice would be wrong (two handles or two
//! processes recounting at once), so the correction writes only if the
//! generation is still the one its snapshot read, and moves it on.

use crate::error::Result;
use crate::group_commit::WriteCtx;
use crate::maintain::SWEEP_BATCH;
use crate::raw::Raw;
use crate::storage::{self, Cell};
use crate::values::{Target, WriteOptions};

use super::commit::{count_on, set_count};
use super::{Shared, Swept};

/// What a sweep weighs in the writer's group: it goes alone.
pub(crate) const SWEEP_WEIGHT: usize = 8 << 20;
/// What a recount's correction weighs: two point reads and two writes.
pub(crate) const CORRECT_WEIGHT: usize = 256;
/// A sweep starts a recount in the background if none ran for this long
/// on the store's clock (ms), and at a handle's first sweep.
pub(crate) const RECOUNT_EVERY: i64 = 10 * 60 * 1000;

/// Batches of expired rows one sweep deletes at most: the bound on its
/// hold of the writer. More rows wait for the next sweep.
const SWEEP_ROUNDS: usize = 10;

/// Removes this store's expired rows (up to the bound) and moves the count
/// by what went. `entries` is the count after: exact but for rows others
/// deleted since the last recount (see the module's docs).
pub(crate) fn sweep(sh: &Shared, w: &mut WriteCtx<'_>) -> Result<Swept> {
    let mut removed = 0;
    for _ in 0..SWEEP_ROUNDS {
        let n = storage::sweep_expired_in(w.conn, sh.core.id, w.now, SWEEP_BATCH)?;
        removed += n;
        if n < SWEEP_BATCH {
            break;
        }
    }
    let stored = count_on(w.conn, &sh.count, w.now)?;
    let entries = stored.saturating_sub(removed);
    if entries != stored {
        set_count(sh, w, entries)?;
    }
    sh.watch.lock().unwrap_or_else(|p| p.into_inner()).full_until = None;
    Ok(Swept { removed, entries })
}

/// What a recount saw in one snapshot.
pub(crate) struct Seen {
    /// Entry rows there are.
    real: usize,
    /// What the count said.
    stored: usize,
    /// The recount's generation.
    generation: i64,
}

/// The recount's generation: how many corrections were made.
fn generation_on(conn: &rusqlite::Connection, recount: &Target, now: i64) -> Result<i64> {
    match recount.read(conn, now)? {
        None => Ok(0),
        Some(Cell { value: Raw::Int(n), .. }) => Ok(n),
        Some(_) => Err(crate::error::Error::corrupt(
            "the limit store's recount row does not hold a generation",
        )),
    }
}

/// How many of the store's rows are its own bookkeeping (the count, the
/// recount's generation), not entries.
pub(crate) fn bookkeeping_rows(conn: &rusqlite::Connection, sh: &Shared, now: i64) -> Result<usize> {
    let mut n = 0;
    for t in [&sh.count, &sh.recount] {
        n += usize::from(storage::meta(conn, sh.core.id, t.path(), now)?.is_some());
    }
    Ok(n)
}

/// Counts the entry rows on a reader, in one snapshot with the count.
/// A scan of every row of the store: never in the writer.
pub(crate) fn seen_on(conn: &rusqlite::Connection, sh: &Shared, now: i64) -> Result<Seen> {
    storage::in_snapshot(conn, || {
        let all = storage::bucket_rows(conn, sh.core.id)?;
        let real = all.saturating_sub(bookkeeping_rows(conn, sh, now)?);
        Ok(Seen {
            real,
            stored: count_on(conn, &sh.count, now)?,
            generation: generation_on(conn, &sh.recount, now)?,
        })
    })
}

/// Takes the snapshot's excess off the count, unless another recount
/// already did (the generation moved). Two point reads and, only when
/// the count was off, two writes: a short hold of the writer.
pub(crate) fn correct(sh: &Shared, w: &mut WriteCtx<'_>, seen: &Seen) -> Result<usize> {
    let stored = count_on(w.conn, &sh.count, w.now)?;
    if seen.stored == seen.real || generation_on(w.conn, &sh.recount, w.now)? != seen.generation {
        return Ok(stored);
    }
    // Negative only if something added rows without counting them, which
    // nothing does; corrected all the same.
    let excess = seen.stored as i64 - seen.real as i64;
    let exact = (stored as i64 - excess).max(0) as usize;
    set_count(sh, w, exact)?;
    sh.recount
        .op_set(w, &Raw::Int(seen.generation + 1), WriteOptions::default())?;
    Ok(exact)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use crate::limit_store::{Change, LimitEntry, LimitStore};
    use crate::store::{Options, Store};

    use super::*;

    /// Two recounts whose snapshots both saw the same excess: the second
    /// correction must not take it off again, or the count would fall
    /// below the entries there are and the bound would let the store grow
    /// past it.
    #[test]
    fn two_recounts_of_one_excess_correct_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with(dir.path(), Options::new().test_clock(SystemTime::UNIX_EPOCH)).unwrap();
        let ls = LimitStore::open(&store).unwrap();
        let now = store.clock().now_millis();
        let keys: Vec<String> = (0..5).map(|i| format!("k{i}")).collect();
        ls.update(&keys, |_, _| {
            (0..5)
                .map(|i| {
                    let expires_at = if i < 3 { now + 1000 } else { now + 600_000 };
                    Change::Put(LimitEntry {
                        value: "1".into(),
                        expires_at,
                    })
                })
                .collect()
        })
        .unwrap();
        store.clock().advance(Duration::from_secs(2)).unwrap();
        assert_eq!(store.maintain().unwrap().expired, 3);
        let sh = &ls.shared;
        let seen = || store.inner.readers.with(|c| seen_on(c, sh, now)).unwrap();
        let (first, second) = (seen(), seen());
        assert_eq!((first.stored, first.real), (5, 2));
        for s in [first, second] {
            let op = sh.clone();
            let n = store
                .inner
                .writer
                .call(CORRECT_WEIGHT, move |w| correct(&op, w, &s))
                .unwrap();
            assert_eq!(n, 2);
        }
        assert_eq!(ls.entries().unwrap(), 2);
    }
}
