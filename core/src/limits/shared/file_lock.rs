//! Locks on `kv.db-limits` that the kernel lets go of when their process
//! dies, so that a process killed while it holds one never stops the others.
//!
//! - The whole file, with `flock`: every process holds it shared while it
//!   maps the table; a process that gets it exclusive is alone, and lays
//!   the table out anew (kv.db has what the last process wrote).
//! - Single bytes far past the file's end, with `fcntl`: a region's key lock
//!   (a new key goes in, a clear runs) and flush lock, and the directory's.
//!   `fcntl` locks belong to a process, not a thread, so every byte also has
//!   a mutex in the process ([`ByteLock`]), and the file is opened once per
//!   process: closing any descriptor of a file drops every `fcntl` lock the
//!   process holds on it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::{Condvar, Mutex};

use super::super::lock;

/// Where lock bytes start: past any size the table reaches.
const LOCKS_AT: i64 = 1 << 50;
/// The directory's lock byte.
pub(crate) const DIRECTORY: i64 = LOCKS_AT;

/// The key lock byte of the region at directory index `i`.
pub(crate) fn keys_byte(i: usize) -> i64 {
    LOCKS_AT + 16 + 2 * i as i64
}

/// The flush lock byte of the region at directory index `i`.
pub(crate) fn flush_byte(i: usize) -> i64 {
    keys_byte(i) + 1
}

/// Tries to hold the whole file exclusively, at once.
pub(crate) fn try_exclusive(f: &File) -> io::Result<bool> {
    flock(f, libc::LOCK_EX | libc::LOCK_NB)
}

/// Holds the whole file shared, waiting for an exclusive holder. From an
/// exclusive hold this is a downgrade.
pub(crate) fn shared(f: &File) -> io::Result<()> {
    flock(f, libc::LOCK_SH).map(|_| ())
}

fn flock(f: &File, op: libc::c_int) -> io::Result<bool> {
    loop {
        // SAFETY: flock takes a descriptor this File owns.
        if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) if op & libc::LOCK_NB != 0 => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// Lets go of this process's hold on the whole file.
pub(crate) fn unlock(f: &File) -> io::Result<()> {
    flock(f, libc::LOCK_UN).map(|_| ())
}

/// One lock byte: a flag for this process's threads, then the byte for
/// other processes. Not a `MutexGuard`: a clear takes its key lock on the
/// writer's thread and lets go of it on its caller's, after the commit.
pub(crate) struct ByteLock {
    byte: i64,
    held: Mutex<bool>,
    freed: Condvar,
}

/// A held [`ByteLock`], let go of when dropped.
pub(crate) struct HeldByte<'a> {
    lock: &'a ByteLock,
    file: &'a File,
}

impl ByteLock {
    pub(crate) fn new(byte: i64) -> ByteLock {
        ByteLock {
            byte,
            held: Mutex::new(false),
            freed: Condvar::new(),
        }
    }

    /// Holds the byte, waiting for whoever holds it, until [`ByteLock::release`].
    pub(crate) fn acquire(&self, file: &File) -> io::Result<()> {
        let mut held = lock(&self.held);
        while *held {
            held = self.freed.wait(held).unwrap_or_else(|p| p.into_inner());
        }
        *held = true;
        drop(held);
        if let Err(e) = set_lock(file, self.byte, libc::F_WRLCK as libc::c_short, true) {
            self.free();
            return Err(e);
        }
        Ok(())
    }

    /// Lets go of a byte [`ByteLock::acquire`] holds.
    pub(crate) fn release(&self, file: &File) {
        if let Err(e) = set_lock(file, self.byte, libc::F_UNLCK as libc::c_short, false) {
            // Only a bad descriptor makes an unlock fail, and the process then
            // holds nothing on the file anyway.
            log::error!("tinystore: letting go of a lock of kv.db-limits failed: {e}");
        }
        self.free();
    }

    fn free(&self) {
        *lock(&self.held) = false;
        self.freed.notify_one();
    }

    /// Holds the byte until the guard drops.
    pub(crate) fn hold<'a>(&'a self, file: &'a File) -> io::Result<HeldByte<'a>> {
        self.acquire(file)?;
        Ok(HeldByte { lock: self, file })
    }

    /// Holds the byte if nobody does, else `None` at once.
    pub(crate) fn try_hold<'a>(&'a self, file: &'a File) -> io::Result<Option<HeldByte<'a>>> {
        {
            let mut held = lock(&self.held);
            if *held {
                return Ok(None);
            }
            *held = true;
        }
        match set_lock(file, self.byte, libc::F_WRLCK as libc::c_short, false) {
            Ok(true) => Ok(Some(HeldByte { lock: self, file })),
            Ok(false) => {
                self.free();
                Ok(None)
            }
            Err(e) => {
                self.free();
                Err(e)
            }
        }
    }
}

impl Drop for HeldByte<'_> {
    fn drop(&mut self) {
        self.lock.release(self.file);
    }
}

/// Sets a lock of `kind` on one byte; `wait` waits for a holder, else a held
/// byte answers `false`.
fn set_lock(f: &File, byte: i64, kind: libc::c_short, wait: bool) -> io::Result<bool> {
    // SAFETY: an all-zero flock is a valid value of the plain C struct.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = byte as libc::off_t;
    fl.l_len = 1;
    let cmd = if wait { libc::F_SETLKW } else { libc::F_SETLK };
    loop {
        // SAFETY: fcntl with F_SETLK(W) reads the flock it is given.
        if unsafe { libc::fcntl(f.as_raw_fd(), cmd, &fl) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            // The kernel judges deadlock between processes, not threads: a
            // thread of this process may be waiting on a holder that itself
            // waits on another thread of ours, which lets go without waiting.
            Some(libc::EDEADLK) => std::thread::yield_now(),
            Some(libc::EAGAIN | libc::EACCES) if !wait => return Ok(false),
            _ => return Err(e),
        }
    }
}
