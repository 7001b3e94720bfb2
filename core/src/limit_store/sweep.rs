//! The limit store's sweep, which runs in the writer.
//!
//! The sweep holds the store's one writer, so it must cost what it
//! deletes, not what the store holds: it finds this store's expired rows
//! through the expiry index and moves the count by how many it deleted
//! (`count.rs`). It used to count every row before and after (two scans of
//! 1,000,000 rows in the writer's transaction, every durable write of the
//! store waiting behind them).

use crate::error::Result;
use crate::group_commit::WriteCtx;
use crate::storage;
use crate::storage::SWEEP_BATCH;

use super::{Shared, Swept};
use crate::limit_count::uncount;

/// What a sweep weighs in the writer's group: it goes alone.
pub(crate) const SWEEP_WEIGHT: usize = 8 << 20;

/// Batches of expired rows one sweep deletes at most: the bound on its
/// hold of the writer. More rows wait for the next sweep.
pub(super) const SWEEP_ROUNDS: usize = 10;

/// Removes this store's expired rows (up to the bound) and moves the count
/// by what went. `entries` is the count after.
pub(crate) fn sweep(sh: &Shared, w: &mut WriteCtx<'_>) -> Result<Swept> {
    let mut removed = 0;
    for _ in 0..SWEEP_ROUNDS {
        let n = storage::sweep_expired_in(w.conn, sh.core.id, w.now, SWEEP_BATCH)?;
        removed += n;
        if n < SWEEP_BATCH {
            break;
        }
    }
    let entries = uncount(w, sh.core.id, removed)?;
    sh.watch.lock().unwrap_or_else(|p| p.into_inner()).full_until = None;
    Ok(Swept { removed, entries })
}
