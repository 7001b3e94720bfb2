//! The writer's checkpoints: SQLite's automatic checkpoint, run from this
//! writer's own WAL hook so that it sees when one falls short and runs it
//! again once the writer has been idle for a while.
//!
//! SQLite checkpoints right after the commit that takes the WAL past 1,000
//! frames, and every commit after it while the WAL stays that long. A
//! reader holding an older snapshot at that instant stops the copy at its
//! mark, and the WAL restarts from its start only after a copy that got to
//! its end. A reader of another process that keeps its read-mark lock
//! (`read_locks`) lets go within milliseconds of a commit, but not before
//! the checkpoint that follows it; where commits come seldom, every one of
//! them could find such a reader, and the WAL would never restart. So a
//! checkpoint that falls short is run again [`RETRY_FIRST`] later, and
//! again at doubling waits, until one gets to the end or the next commit
//! runs its own.

use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ffi};

/// The WAL length, in frames, from which a commit checkpoints: SQLite's
/// default `wal_autocheckpoint`.
const AUTO_FRAMES: c_int = 1000;
/// The first wait before a checkpoint that fell short is run again: longer
/// than readers of other processes take to let go of a kept lock after a
/// commit (`read_locks::POLL`), shorter than they wait before keeping one
/// again (`read_locks::QUIET`).
const RETRY_FIRST: Duration = Duration::from_millis(10);
/// The longest wait between two tries.
const RETRY_AT_MOST: Duration = Duration::from_secs(1);

/// When this writer next runs a checkpoint of its own, if one fell short.
#[derive(Default)]
pub(crate) struct Checkpoints {
    due: Mutex<Option<Retry>>,
}

#[derive(Clone, Copy)]
struct Retry {
    at: Instant,
    wait: Duration,
}

impl Checkpoints {
    /// Makes `conn`'s commits checkpoint through this state instead of
    /// SQLite's automatic checkpoint. `self` must outlive the connection.
    pub fn install(self: &Arc<Self>, conn: &Connection) {
        // SAFETY: the hook's context is this Checkpoints, which the writer's
        // shared state holds for longer than the connection (field order).
        unsafe {
            ffi::sqlite3_wal_hook(conn.handle(), Some(wal_hook), Arc::as_ptr(self).cast_mut().cast());
        }
    }

    /// When the next try is due, if a checkpoint fell short.
    pub fn due(&self) -> Option<Instant> {
        self.lock().map(|r| r.at)
    }

    /// Runs the checkpoint again on `conn` (outside any transaction).
    pub fn retry(&self, conn: &Connection) {
        // SAFETY: the handle is the open write connection, held by the caller.
        let done = unsafe { passive(conn.handle(), std::ptr::null()) };
        let mut due = self.lock();
        *due = match (*due, done) {
            (_, true) | (None, false) => None,
            (Some(r), false) => {
                let wait = (r.wait * 2).min(RETRY_AT_MOST);
                Some(Retry {
                    at: Instant::now() + wait,
                    wait,
                })
            }
        };
    }

    /// After each commit of the connection, with the WAL's length.
    fn committed(&self, db: *mut ffi::sqlite3, name: *const c_char, frames: c_int) {
        // SAFETY: called from the WAL hook, on the committing connection.
        let done = frames < AUTO_FRAMES || unsafe { passive(db, name) };
        *self.lock() = (!done).then(|| Retry {
            at: Instant::now() + RETRY_FIRST,
            wait: RETRY_FIRST,
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Retry>> {
        self.due.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A passive checkpoint of `name` (null: the main database). Returns
/// whether it copied every frame of the WAL.
///
/// # Safety
/// `db` is an open connection used by this thread alone.
unsafe fn passive(db: *mut ffi::sqlite3, name: *const c_char) -> bool {
    let (mut log, mut copied) = (0, 0);
    let rc = unsafe { ffi::sqlite3_wal_checkpoint_v2(db, name, ffi::SQLITE_CHECKPOINT_PASSIVE, &mut log, &mut copied) };
    rc == ffi::SQLITE_OK && copied >= log
}

unsafe extern "C" fn wal_hook(ctx: *mut c_void, db: *mut ffi::sqlite3, name: *const c_char, frames: c_int) -> c_int {
    // SAFETY: `ctx` is the Checkpoints given to install, alive (see there).
    let checkpoints = unsafe { &*ctx.cast::<Checkpoints>() };
    checkpoints.committed(db, name, frames);
    ffi::SQLITE_OK
}
