//! Reader connections: one per core, `query_only`, no transaction of their
//! own. A read is one prepared statement and sees the last commit before it.
//! With a lease, a reader keeps its read-mark lock between reads while the
//! file is quiet (`read_locks`), which changes when a lock is taken from
//! the kernel, never what a read sees.
//!
//! A point read skips the clear-mark check when the reader knows that the
//! snapshot it read holds no mark. SQLite counts, per connection, the
//! snapshots it found changed since its last read (`SQLITE_FCNTL_DATA_VERSION`,
//! moved by a commit of any connection of any process). A reader asks
//! whether any mark exists and notes that count; a read without the check
//! is kept only when the count after it is the noted one, so it read the
//! very snapshot that had no mark. Otherwise the read runs again with the
//! check, and the reader asks again.

use std::cell::{Cell as StdCell, RefCell, RefMut};
use std::ops::Deref;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::read_locks::{self, Lease};
use crate::storage::direct_statements::DirectStatement;
use crate::storage::{self, Cell, file, sql};

/// The store's readers: a call takes a free one, or waits for its turn.
pub(crate) struct Readers {
    conns: Vec<Mutex<Option<ReaderConn>>>,
    next: AtomicUsize,
    /// Connections of binding snapshots that ended, kept for the next one:
    /// a snapshot holds its connection's read transaction, so it cannot
    /// share one of `conns`, and opening a connection for each cost more
    /// than the reads of a short view.
    spare: Mutex<Vec<Connection>>,
    closed: std::sync::atomic::AtomicBool,
}

/// The most snapshot connections kept for reuse.
const SPARE_AT_MOST: usize = 4;

/// One reader connection, holding the point read's statements for its life:
/// taking one from the connection's cache and giving it back hashed its SQL
/// twice a get, a sixth of a get's cost.
pub(crate) struct ReaderConn {
    // Declared before `conn`, so dropped first (finalized before it closes).
    cell_get: RefCell<Option<DirectStatement>>,
    cell_get_unmarked: RefCell<Option<DirectStatement>>,
    /// What this reader last learned of clear marks, if anything.
    marks: StdCell<Option<MarksSeen>>,
    conn: Connection,
}

/// Whether any clear mark existed in the snapshot this reader saw at
/// `version` (its count of changed snapshots).
#[derive(Clone, Copy)]
struct MarksSeen {
    version: u32,
    any: bool,
}

// SAFETY: the connection is `Send`, and its statement goes with it: both are
// used by one thread at a time, under the reader's mutex.
unsafe impl Send for ReaderConn {}

impl ReaderConn {
    fn new(conn: Connection) -> ReaderConn {
        ReaderConn {
            cell_get: RefCell::new(None),
            cell_get_unmarked: RefCell::new(None),
            marks: StdCell::new(None),
            conn,
        }
    }

    /// A point read of a live row, by the rule of the module's docs.
    pub(crate) fn get(&self, bucket: i64, path: &[u8], now: i64) -> Result<Option<Cell>> {
        if let Some(seen) = self.marks.get()
            && !seen.any
        {
            let out = storage::get_with(
                &mut *self.statement(&self.cell_get_unmarked, sql::CELL_GET_UNMARKED)?,
                self,
                bucket,
                path,
                now,
            )?;
            if self.data_version()? == seen.version {
                return Ok(out);
            }
        }
        let out = storage::get_with(
            &mut *self.statement(&self.cell_get, sql::CELL_GET_INLINE)?,
            self,
            bucket,
            path,
            now,
        )?;
        let version = self.data_version()?;
        if self.marks.get().map(|m| m.version) != Some(version) {
            let any = storage::any_marks(self)?;
            // The count after the question, which is the count of the
            // snapshot it saw.
            let version = self.data_version()?;
            self.marks.set(Some(MarksSeen { version, any }));
        }
        Ok(out)
    }

    /// One of the point read's statements, prepared once into `slot`.
    fn statement<'s>(
        &'s self,
        slot: &'s RefCell<Option<DirectStatement>>,
        sql: &str,
    ) -> Result<RefMut<'s, DirectStatement>> {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            // SAFETY: the statement is dropped before the connection closes
            // (field order).
            *slot = Some(unsafe { DirectStatement::prepare(&self.conn, sql)? });
        }
        Ok(RefMut::map(slot, |s| s.as_mut().expect("prepared above")))
    }

    /// SQLite's count of the changed snapshots this connection has seen.
    fn data_version(&self) -> Result<u32> {
        let mut version: u32 = 0;
        // SAFETY: the handle is this open connection's, used by this thread
        // alone (the reader's mutex); the file control writes one u32.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_file_control(
                self.conn.handle(),
                // Null is the main database, without a lookup by name.
                std::ptr::null(),
                rusqlite::ffi::SQLITE_FCNTL_DATA_VERSION,
                (&mut version as *mut u32).cast(),
            )
        };
        if rc != rusqlite::ffi::SQLITE_OK {
            return Err(Error::from(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rc),
                None,
            )));
        }
        Ok(version)
    }
}

impl Deref for ReaderConn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Readers {
    /// Opens `n` readers on `path` (at least one), each mapping
    /// `mmap_size` bytes of it. With a `lease`, each keeps its read-mark
    /// lock between reads by that lease's rules (`read_locks`).
    pub fn open(path: &Path, n: usize, mmap_size: u64, lease: Option<&Arc<Lease>>) -> Result<Readers> {
        let conns = (0..n.max(1))
            .map(|_| {
                let c = file::open_reader(path, mmap_size, lease.is_some())?;
                if let Some(lease) = lease {
                    read_locks::attach(&c, lease);
                }
                Ok(Mutex::new(Some(ReaderConn::new(c))))
            })
            .collect::<Result<_>>()?;
        Ok(Readers {
            conns,
            next: AtomicUsize::new(0),
            spare: Mutex::new(Vec::new()),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Readers of no file: every read is `Closed`. The readers of a store
    /// whose rows are not in kv.db (a PostgreSQL store).
    pub fn refusing() -> Readers {
        Readers {
            conns: vec![Mutex::new(None)],
            next: AtomicUsize::new(0),
            spare: Mutex::new(Vec::new()),
            closed: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// Runs `read` on a free reader, or waits for one.
    pub fn with<T>(&self, read: impl FnOnce(&ReaderConn) -> Result<T>) -> Result<T> {
        let n = self.conns.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        for i in 0..n {
            match self.conns[(start + i) % n].try_lock() {
                Ok(g) => return Self::run(g, read),
                Err(TryLockError::Poisoned(p)) => return Self::run(p.into_inner(), read),
                Err(TryLockError::WouldBlock) => {}
            }
        }
        let g = self.conns[start].lock().unwrap_or_else(|p| p.into_inner());
        Self::run(g, read)
    }

    fn run<T>(g: MutexGuard<'_, Option<ReaderConn>>, read: impl FnOnce(&ReaderConn) -> Result<T>) -> Result<T> {
        read(g.as_ref().ok_or_else(Error::closed)?)
    }

    /// A connection for a snapshot: one an ended snapshot gave back, or a
    /// new one on `path`.
    pub fn take_spare(&self, path: &Path, mmap_size: u64) -> Result<Connection> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        let kept = self.spare.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match kept {
            Some(c) => Ok(c),
            None => file::open_reader(path, mmap_size, false),
        }
    }

    /// Keeps a snapshot's connection, its read transaction ended, for the
    /// next snapshot; closes it when enough are kept or the store closed.
    pub fn give_back(&self, conn: Connection) {
        if self.closed.load(Ordering::Acquire) || !conn.is_autocommit() {
            return;
        }
        let mut spare = self.spare.lock().unwrap_or_else(|p| p.into_inner());
        if spare.len() < SPARE_AT_MOST {
            spare.push(conn);
        }
    }

    /// Closes every reader; a read after this is `Closed`.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.spare.lock().unwrap_or_else(|p| p.into_inner()).clear();
        for c in &self.conns {
            c.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
    }
}
