//! Reader connections: one per core, `query_only`, no transaction of their
//! own. A read is one prepared statement and sees the last commit before it.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::storage::file;

pub(crate) struct Readers {
    conns: Vec<Mutex<Option<Connection>>>,
    next: AtomicUsize,
}

impl Readers {
    /// Opens `n` readers on `path` (at least one).
    pub fn open(path: &Path, n: usize) -> Result<Readers> {
        let conns = (0..n.max(1))
            .map(|_| file::open_reader(path).map(|c| Mutex::new(Some(c))))
            .collect::<Result<_>>()?;
        Ok(Readers {
            conns,
            next: AtomicUsize::new(0),
        })
    }

    /// Runs `read` on a free reader, or waits for one.
    pub fn with<T>(&self, read: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
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

    fn run<T>(g: MutexGuard<'_, Option<Connection>>, read: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        read(g.as_ref().ok_or_else(Error::closed)?)
    }

    /// Closes every reader; a read after this is `Closed`.
    pub fn close(&self) {
        for c in &self.conns {
            c.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
    }
}
