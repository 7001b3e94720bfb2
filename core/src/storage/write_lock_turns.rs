//! Turns at the write lock between processes.
//!
//! SQLite gives the write lock to whoever asks when it is free. A process
//! whose writer commits group after group asks again microseconds after each
//! commit, while a process waiting for the lock sleeps and retries, so the
//! busy one can keep the lock for as long as it has writes: the others
//! starve. The answers stay exactly-once, but one process's writes can wait
//! for seconds.
//!
//! So a writer waiting for the lock says so, and a writer that just
//! committed looks before it asks again. The sign is an open-file-description
//! lock (`F_OFD_SETLK`) in shared mode on one byte of `kv.db` far past any
//! byte SQLite locks ([`WAITING_BYTE`]); it locks nothing anyone reads, and
//! goes away with the descriptor if the process dies. A writer that finds
//! another holding it holds back its next `BEGIN IMMEDIATE` until the sign
//! is down (the waiter got the lock) or [`YIELD_AT_MOST`] passed. Without
//! others waiting, a commit costs one `fcntl`.
//!
//! Open-file-description locks are Linux's; elsewhere the sign is off and
//! the lock goes to whoever asks, as before.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};

use crate::error::{Error, Result};
use crate::read_locks::Lease;

/// The byte of kv.db whose shared lock means "a writer is waiting". SQLite
/// locks bytes from 1 GiB (0x40000000) to 1 GiB + 512; this is 2 GiB - 1,
/// which no SQLite lock covers, whatever the file's size.
pub const WAITING_BYTE: i64 = 0x7FFF_FFFF;

/// How often a waiting writer asks for the lock again.
pub const POLL: Duration = Duration::from_micros(500);

/// The longest a writer that sees another waiting holds back: the waiter
/// may have given up, or be stopped with its sign still up.
pub const YIELD_AT_MOST: Duration = Duration::from_millis(50);

/// One writer's side of the turn-taking.
#[derive(Debug)]
pub struct Turns {
    /// kv.db opened once more, for its own lock description; `None` where
    /// the platform has no open-file-description locks.
    file: Option<File>,
    waiting: bool,
    /// This process's readers of the file: they keep no read-mark lock
    /// from `begin` to `after_commit`.
    lease: Arc<Lease>,
}

impl Turns {
    /// Opens the sign on the file at `path` (already created); `lease` is
    /// the file's, shared with its readers in this process.
    pub(crate) fn open(path: &Path, lease: Arc<Lease>) -> Turns {
        let file = if cfg!(target_os = "linux") {
            std::fs::OpenOptions::new().read(true).open(path).ok()
        } else {
            None
        };
        Turns {
            file,
            waiting: false,
            lease,
        }
    }

    /// `BEGIN IMMEDIATE` on `conn`, taking turns: while the lock is busy,
    /// show the sign and ask again every [`POLL`], until `timeout`. Only this
    /// statement runs without SQLite's busy handler (which would sleep longer
    /// and longer); every other statement of the connection keeps `timeout`,
    /// since a lock SQLite takes inside the transaction may be busy briefly.
    pub fn begin(&mut self, conn: &Connection, timeout: Duration) -> Result<()> {
        // Before the write lock, so that a WAL restart at this transaction's
        // first frame finds no slot this process keeps.
        self.lease.writing();
        conn.busy_timeout(Duration::ZERO)?;
        let out = self.poll_begin(conn, timeout);
        if out.is_err() {
            self.lease.written();
        }
        conn.busy_timeout(timeout)?;
        out
    }

    /// After a transaction that began here was rolled back: readers may
    /// keep their locks again (a commit ends with [`Turns::after_commit`]).
    pub fn ended(&self) {
        self.lease.written();
    }

    fn poll_begin(&mut self, conn: &Connection, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            match super::run_tx_statement(conn, super::sql::BEGIN_WRITE) {
                Ok(()) => {
                    self.set_waiting(false);
                    return Ok(());
                }
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                        && Instant::now() < deadline =>
                {
                    self.set_waiting(true);
                    std::thread::sleep(POLL);
                }
                Err(e) => {
                    self.set_waiting(false);
                    return Err(Error::from(e));
                }
            }
        }
    }

    /// After a commit: while another writer waits, hold back, so that it
    /// has the next turn. Its sign goes down when it has the lock (then this
    /// writer waits in turn, with its own sign up), or after
    /// [`YIELD_AT_MOST`]. A fixed pause would not do: on a busy machine the
    /// waiter may not run again for longer than any pause.
    pub fn after_commit(&self) {
        self.lease.written();
        let start = Instant::now();
        while self.others_waiting() && start.elapsed() < YIELD_AT_MOST {
            std::thread::sleep(POLL);
        }
    }

    #[cfg(target_os = "linux")]
    fn set_waiting(&mut self, on: bool) {
        use std::os::fd::AsRawFd;
        let Some(f) = &self.file else { return };
        if on == self.waiting {
            return;
        }
        let mut lk = flock(if on { libc::F_RDLCK } else { libc::F_UNLCK });
        // SAFETY: a valid descriptor and a fully initialised flock struct.
        let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &mut lk) };
        // A refused sign only costs fairness, never correctness.
        self.waiting = on && rc == 0;
    }

    #[cfg(not(target_os = "linux"))]
    fn set_waiting(&mut self, _on: bool) {}

    #[cfg(target_os = "linux")]
    fn others_waiting(&self) -> bool {
        use std::os::fd::AsRawFd;
        let Some(f) = &self.file else { return false };
        let mut lk = flock(libc::F_WRLCK);
        // SAFETY: as above; F_OFD_GETLK only reads the lock table.
        let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_GETLK, &mut lk) };
        rc == 0 && lk.l_type != libc::F_UNLCK as libc::c_short
    }

    #[cfg(not(target_os = "linux"))]
    fn others_waiting(&self) -> bool {
        false
    }
}

#[cfg(target_os = "linux")]
fn flock(kind: libc::c_int) -> libc::flock {
    // SAFETY: flock is plain data; every field the kernel reads is set below.
    let mut lk: libc::flock = unsafe { std::mem::zeroed() };
    lk.l_type = kind as libc::c_short;
    lk.l_whence = libc::SEEK_SET as libc::c_short;
    lk.l_start = WAITING_BYTE;
    lk.l_len = 1;
    lk.l_pid = 0; // required by F_OFD_* locks
    lk
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_writer_is_seen_by_another_description_and_not_by_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.db");
        std::fs::write(&path, b"").unwrap();
        let mut a = Turns::open(&path, Lease::of(&path));
        let b = Turns::open(&path, Lease::of(&path));
        assert!(!b.others_waiting());
        a.set_waiting(true);
        assert!(b.others_waiting(), "b sees a waiting");
        assert!(!a.others_waiting(), "a's own sign does not make it yield");
        a.set_waiting(false);
        assert!(!b.others_waiting());
    }
}
