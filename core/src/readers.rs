//! Reader connections: one per core, `query_only`, no transaction of their
//! own. A read is one prepared statement and sees the last commit before it.

use std::cell::{RefCell, RefMut};
use std::ops::Deref;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use rusqlite::{CachedStatement, Connection, Statement};

use crate::error::{Error, Result};
use crate::storage::{file, sql};

/// The store's readers: a call takes a free one, or waits for its turn.
pub(crate) struct Readers {
    conns: Vec<Mutex<Option<ReaderConn>>>,
    next: AtomicUsize,
}

/// One reader connection, holding the point read's statement for its life:
/// taking it from the connection's cache and giving it back hashed its SQL
/// twice a get, a sixth of a get's cost.
pub(crate) struct ReaderConn {
    // Declared before `conn`, so dropped first: the statement borrows it.
    cell_get: RefCell<Option<CachedStatement<'static>>>,
    conn: Box<Connection>,
}

// SAFETY: the connection is `Send`, and its statement goes with it: both are
// used by one thread at a time, under the reader's mutex.
unsafe impl Send for ReaderConn {}

impl ReaderConn {
    fn new(conn: Connection) -> ReaderConn {
        ReaderConn {
            cell_get: RefCell::new(None),
            conn: Box::new(conn),
        }
    }

    /// The point read's statement ([`sql::CELL_GET_INLINE`]), prepared once.
    pub(crate) fn cell_get(&self) -> Result<RefMut<'_, Statement<'static>>> {
        let mut slot = self.cell_get.borrow_mut();
        if slot.is_none() {
            // SAFETY: the connection is boxed, so it does not move, and it
            // outlives the statement, which is dropped first (field order).
            let conn: &'static Connection = unsafe { &*(self.conn.as_ref() as *const Connection) };
            *slot = Some(conn.prepare_cached(sql::CELL_GET_INLINE)?);
        }
        Ok(RefMut::map(slot, |s| &mut **s.as_mut().expect("prepared above")))
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
    /// `mmap_size` bytes of it.
    pub fn open(path: &Path, n: usize, mmap_size: u64) -> Result<Readers> {
        let conns = (0..n.max(1))
            .map(|_| file::open_reader(path, mmap_size).map(|c| Mutex::new(Some(ReaderConn::new(c)))))
            .collect::<Result<_>>()?;
        Ok(Readers {
            conns,
            next: AtomicUsize::new(0),
        })
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

    /// Closes every reader; a read after this is `Closed`.
    pub fn close(&self) {
        for c in &self.conns {
            c.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
    }
}
