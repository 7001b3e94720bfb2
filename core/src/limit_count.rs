//! The count of a limit store's entries, and everything that moves it.
//!
//! One row of the store's own name (key `COUNT_KEY`, at the root) holds how
//! many entry rows there are, so the bound is judged without counting rows.
//! Whatever adds or deletes entry rows moves it by as many, in the same
//! transaction: an update (`commit.rs`), the store's own sweep (`sweep.rs`),
//! and the sweeps of every name's expired rows, which are the store's
//! maintenance in any process that opens the file and a full store's
//! refusal path ([`uncount_swept`]). A crash rolls back rows and count
//! together, so nothing drifts it, and every process sees the same count.
//!
//! The row is found from the store's id alone, not from a handle: the
//! maintenance of a process that never opened this limit store deletes its
//! expired rows too, and must move its count all the same.

use std::sync::LazyLock;

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::key::Branch;
use crate::raw::Raw;
use crate::storage::{self, Cell, Kind};

/// The key of the row that holds the count of entries: never 32 bytes, so
/// never a key's digest.
pub(crate) const COUNT_KEY: &[u8] = b"#entries";

/// The count row's path: the same in every limit store, whatever its name.
static COUNT_PATH: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut path = Vec::new();
    // The name only names the store in an error, and a constant key at the
    // root has none.
    Branch::root()
        .path_into("the limit store's count", COUNT_KEY, &mut path)
        .expect("the count's key is a valid key at the root");
    path
});

/// The count row's path, for a copy of a store (`crate::moving`), which
/// carries a limit store's live entries and writes their number here.
pub(crate) fn count_path() -> &'static [u8] {
    &COUNT_PATH
}

/// The count of entries the file holds for the limit store `bucket`.
pub(crate) fn count_on(conn: &Connection, bucket: i64, now: i64) -> Result<usize> {
    match storage::get(conn, bucket, &COUNT_PATH, now)? {
        None => Ok(0),
        Some(Cell { value: Raw::Int(n), .. }) if n >= 0 => Ok(n as usize),
        Some(_) => Err(Error::corrupt("the limit store's count row does not hold a count")),
    }
}

/// Writes the count of entries of the limit store `bucket`.
pub(crate) fn set_count(w: &mut WriteCtx<'_>, bucket: i64, n: usize) -> Result<()> {
    let version = w.next_version();
    storage::put(w.conn, bucket, &COUNT_PATH, version, None, &Raw::Int(n as i64), None)
}

/// Moves the count of the limit store `bucket` down by `n` entry rows this
/// transaction deleted; answers the count after.
pub(crate) fn uncount(w: &mut WriteCtx<'_>, bucket: i64, n: usize) -> Result<usize> {
    let stored = count_on(w.conn, bucket, w.now)?;
    if n == 0 {
        return Ok(stored);
    }
    // Below zero only if rows were added without counting them, which
    // nothing does: a count of zero is then the nearest to the truth.
    let after = stored.saturating_sub(n);
    set_count(w, bucket, after)?;
    Ok(after)
}

/// Moves the count of every limit store among `swept` (bucket id, rows
/// deleted, as `storage::sweep_expired` answers) down by its rows deleted,
/// in the sweep's transaction. Other kinds of name keep no count.
pub(crate) fn uncount_swept(w: &mut WriteCtx<'_>, swept: &[(i64, usize)]) -> Result<()> {
    if swept.is_empty() {
        return Ok(());
    }
    // The kinds are read here, not remembered: another process may have
    // opened a limit store since this one started.
    let limit_stores: Vec<i64> = storage::list_buckets(w.conn)?
        .into_iter()
        .filter(|(_, _, kind)| kind == Kind::LimitStore.as_str())
        .map(|(id, _, _)| id)
        .collect();
    for &(bucket, n) in swept {
        if limit_stores.contains(&bucket) {
            uncount(w, bucket, n)?;
        }
    }
    Ok(())
}
