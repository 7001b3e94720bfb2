//! Read-mark locks kept between reads.
//!
//! Every read transaction in WAL mode takes a shared POSIX lock on one of
//! the five read-mark slots of `kv.db-shm` and gives it back when it ends:
//! two `fcntl` calls per point read, a large share of a get's time
//! (`bench/src/bin/reads.rs` measures it; `--no-kept-locks` turns this
//! off). SQLite
//! skips the call only when another connection of the same process holds
//! that slot. So a reader's connection, opened through the VFS in [`vfs`],
//! does not give the lock back to the kernel when its transaction ends: it
//! *keeps* it, and when its next transaction asks SQLite for the same slot
//! (SQLite chose it, by its own rules, from the marks and the WAL index
//! header it just read) the lock is already held. Any other lock call on
//! the file gives the kept lock back first. What a read sees is therefore
//! decided by SQLite exactly as before; only the moment the lock leaves the
//! kernel moves.
//!
//! A held slot is what a reader in the middle of a read holds, and it
//! carries the same cost: no checkpoint copies the WAL past that slot's
//! mark, and no writer restarts the WAL while any slot from 1 to 4 is held
//! (nor copies anything while slot 0 is). Held between reads without end,
//! it would let another process's WAL grow without bound. So a lock is kept
//! only under these rules, each of which closes one way for that to happen:
//!
//! - **Only while the file is quiet.** A reader keeps its lock only when the
//!   WAL index header (the first 48 bytes of `kv.db-shm`, which every commit
//!   changes) has not changed for [`QUIET`]. Under steady writes, from any
//!   process, nothing is kept, and reads behave as SQLite's own.
//! - **Never while this process writes.** The writer of the file in this
//!   process ([`Lease::writing`], from `storage::write_lock_turns`) lets go of every
//!   kept lock before its `BEGIN` and keeps none until its commit (and the
//!   checkpoint that follows it) is done.
//! - **Never for long unused, nor once stale.** A thread of the process,
//!   started with its first reader that may keep a lock and asleep while
//!   none is kept, looks every [`POLL`] and gives back each lock not
//!   used for [`IDLE`] or whose header has changed, so that another
//!   process's commit finds this process's slots free within a few
//!   milliseconds, whether or not it reads again.
//!
//! The commit that ends a quiet spell may still find a stale kept lock when
//! its own checkpoint runs, right after it. The writer that committed it
//! sees that checkpoint fall short and runs it again once it has been idle
//! for 10 ms (`group_commit::checkpoints`), by which time this process has
//! let go. The read-lock tests check the rules by the WAL's size: writes
//! of some 4,000 frames, while this process or another reads without
//! pause, must leave a WAL that restarted near SQLite's 1,000, which it
//! does not without the quiet rule or without the retry.

pub(crate) mod vfs;

use std::collections::HashMap;
use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use rusqlite::ffi;

/// How long the WAL index header must stay unchanged before a reader keeps
/// its lock: longer than the gap between commits of a steady writer, and
/// than the wait of a writer's second checkpoint.
pub const QUIET: Duration = Duration::from_millis(20);
/// A kept lock not used for this long is given back.
pub const IDLE: Duration = Duration::from_millis(2);
/// How often the keeping thread looks, while any lock is kept.
pub const POLL: Duration = Duration::from_millis(1);

/// The first read-mark lock's offset among the shm locks (`WAL_READ_LOCK(0)`).
const READ_LOCK_FIRST: c_int = 3;
/// The size SQLite maps `kv.db-shm` in, region by region.
const SHM_REGION: c_int = 32_768;

/// What every reader of one file in this process shares: whether this
/// process's writer of the file is writing.
#[derive(Default)]
pub(crate) struct Lease {
    writing: AtomicBool,
    files: Mutex<Vec<Weak<KeptLock>>>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("writing", &self.writing)
            .finish_non_exhaustive()
    }
}

static LEASES: OnceLock<Mutex<HashMap<PathBuf, Weak<Lease>>>> = OnceLock::new();

impl Lease {
    /// The lease of the file at `path`, shared by every store of this
    /// process on that file.
    pub fn of(path: &Path) -> Arc<Lease> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut all = lock(LEASES.get_or_init(Default::default));
        all.retain(|_, l| l.strong_count() > 0);
        if let Some(l) = all.get(&key).and_then(Weak::upgrade) {
            return l;
        }
        let l = Arc::new(Lease::default());
        all.insert(key, Arc::downgrade(&l));
        l
    }

    /// A write transaction is about to begin: let go of every kept lock of
    /// the file, and keep none until [`Lease::written`].
    pub fn writing(&self) {
        self.writing.store(true, Ordering::SeqCst);
        // Lock order: the lease's list, then a file's state (nothing takes
        // them the other way round).
        for f in lock(&self.files).iter().filter_map(Weak::upgrade) {
            f.release();
        }
    }

    /// The write transaction and its checkpoint are over.
    pub fn written(&self) {
        self.writing.store(false, Ordering::SeqCst);
    }

    fn add(&self, f: &Arc<KeptLock>) {
        let mut files = lock(&self.files);
        files.retain(|w| w.strong_count() > 0);
        files.push(Arc::downgrade(f));
    }
}

/// The files of every lease of the process, for the keeping thread.
fn every_file() -> Vec<Arc<KeptLock>> {
    let leases: Vec<_> = lock(LEASES.get_or_init(Default::default))
        .values()
        .filter_map(Weak::upgrade)
        .collect();
    leases
        .iter()
        .flat_map(|l| lock(&l.files).iter().filter_map(Weak::upgrade).collect::<Vec<_>>())
        .collect()
}

/// Lets a reader's connection keep its lock under `lease`'s rules; a
/// connection not opened through [`vfs`] is left as it is.
pub(crate) fn attach(conn: &rusqlite::Connection, lease: &Arc<Lease>) {
    // SAFETY: the handle is this open connection's.
    let Some(k) = vfs::kept_lock_of(unsafe { conn.handle() }) else {
        return;
    };
    // Without the thread that gives them back, locks are never kept.
    if keeper().start() && k.lease.set(lease.clone()).is_ok() {
        lease.add(&k);
    }
}

/// How often this process's readers took their read-mark lock from the
/// kernel, and how often they found it kept ([`Options::keep_read_locks`]).
///
/// [`Options::keep_read_locks`]: crate::Options::keep_read_locks
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadLockCounts {
    /// Read transactions that took the lock with a system call.
    pub taken: u64,
    /// Read transactions that found the lock kept from the one before.
    pub reused: u64,
}

/// This process's [`ReadLockCounts`] so far, over every store: a
/// diagnostic for benchmarks and tests.
pub fn read_lock_counts() -> ReadLockCounts {
    ReadLockCounts {
        taken: TAKEN.load(Ordering::Relaxed),
        reused: REUSED.load(Ordering::Relaxed),
    }
}

static TAKEN: AtomicU64 = AtomicU64::new(0);
static REUSED: AtomicU64 = AtomicU64::new(0);

/// The lock state of one reader's database file.
pub(crate) struct KeptLock {
    state: Mutex<Kept>,
    /// Set once the store attaches the connection; without it nothing is kept.
    lease: OnceLock<Arc<Lease>>,
}

struct Kept {
    /// The unix file; null once the file closed.
    real: *mut ffi::sqlite3_file,
    /// Region 0 of the shm mapping, once seen; null after unmapping.
    shm: *const u64,
    /// The read-mark lock kept for the connection's next read.
    slot: Option<c_int>,
    /// The read-mark locks the connection holds in shared mode, by bit:
    /// only a lock it holds can be kept.
    shared: u8,
    /// When it was kept.
    kept_at: Instant,
    /// The WAL index header as last seen, and since when it is so.
    header: [u64; 6],
    header_since: Instant,
}

// SAFETY: the pointers are used only under the mutex, and the unix file's
// shm calls are safe from any thread (they take the shm node's mutex).
unsafe impl Send for Kept {}

impl KeptLock {
    pub(super) fn new(real: *mut ffi::sqlite3_file) -> KeptLock {
        let now = Instant::now();
        KeptLock {
            state: Mutex::new(Kept {
                real,
                shm: std::ptr::null(),
                slot: None,
                shared: 0,
                kept_at: now,
                header: [0; 6],
                header_since: now,
            }),
            lease: OnceLock::new(),
        }
    }

    /// `xShmLock`, by the rules of the module's docs.
    pub(super) fn shm_lock(&self, ofst: c_int, n: c_int, flags: c_int) -> c_int {
        const SHARED_LOCK: c_int = ffi::SQLITE_SHM_LOCK | ffi::SQLITE_SHM_SHARED;
        const SHARED_UNLOCK: c_int = ffi::SQLITE_SHM_UNLOCK | ffi::SQLITE_SHM_SHARED;
        let mut k = lock(&self.state);
        if k.real.is_null() {
            return ffi::SQLITE_IOERR_SHMLOCK;
        }
        let bit = read_slot_bit(ofst, n);
        if flags == SHARED_LOCK && k.slot == Some(ofst) {
            k.slot = None; // still held: the kernel is not asked again
            k.shared |= bit;
            REUSED.fetch_add(1, Ordering::Relaxed);
            return ffi::SQLITE_OK;
        }
        if flags == SHARED_UNLOCK && k.shared & bit != 0 && k.slot.is_none() && self.may_keep(&mut k) {
            k.shared &= !bit;
            k.slot = Some(ofst);
            k.kept_at = Instant::now();
            drop(k);
            keeper().note_kept();
            return ffi::SQLITE_OK;
        }
        k.give_back();
        let rc = k.real_shm_lock(ofst, n, flags);
        if flags == SHARED_LOCK && rc == ffi::SQLITE_OK {
            k.shared |= bit;
            TAKEN.fetch_add(1, Ordering::Relaxed);
        } else if flags & ffi::SQLITE_SHM_UNLOCK != 0 {
            k.shared &= !bit;
        }
        rc
    }

    /// `xShmUnmap`: the kept lock goes first, with the mapping it was in.
    pub(super) fn shm_unmap(&self, delete: c_int) -> c_int {
        let mut k = lock(&self.state);
        k.unmapped();
        if k.real.is_null() {
            return ffi::SQLITE_OK;
        }
        // SAFETY: the real file is open (not null) and ours alone here.
        unsafe { ((*(*k.real).pMethods).xShmUnmap.expect("xShmUnmap"))(k.real, delete) }
    }

    /// `xClose`, before the real file closes.
    pub(super) fn close(&self) {
        let mut k = lock(&self.state);
        k.unmapped();
        k.real = std::ptr::null_mut();
    }

    /// Gives a kept lock back to the kernel now.
    fn release(&self) {
        lock(&self.state).give_back();
    }

    /// The keeping thread's look: gives the lock back if unused for
    /// [`IDLE`] or if the file changed. Returns whether a lock is still kept.
    fn reap(&self, now: Instant) -> bool {
        let mut k = lock(&self.state);
        if k.slot.is_none() {
            return false;
        }
        let changed = k.read_header().is_none_or(|h| h != k.header);
        if changed || now.duration_since(k.kept_at) >= IDLE {
            k.give_back();
            return false;
        }
        true
    }

    /// Whether a lock just let go of may be kept: a lease, no write of this
    /// process under way, and the header unchanged for [`QUIET`].
    fn may_keep(&self, k: &mut Kept) -> bool {
        let Some(lease) = self.lease.get() else { return false };
        if lease.writing.load(Ordering::SeqCst) {
            return false;
        }
        let Some(h) = k.read_header() else { return false };
        let now = Instant::now();
        if h != k.header {
            k.header = h;
            k.header_since = now;
            return false;
        }
        now.duration_since(k.header_since) >= QUIET
    }
}

/// The bit of a single read-mark lock at `ofst`, or 0 for any other lock.
fn read_slot_bit(ofst: c_int, n: c_int) -> u8 {
    match (n, ofst - READ_LOCK_FIRST) {
        (1, slot @ 0..=4) => 1 << slot,
        _ => 0,
    }
}

impl Kept {
    fn real_shm_lock(&self, ofst: c_int, n: c_int, flags: c_int) -> c_int {
        // SAFETY: the real file is open while `real` is not null, and all
        // its shm lock calls are made under this state's mutex.
        unsafe { ((*(*self.real).pMethods).xShmLock.expect("xShmLock"))(self.real, ofst, n, flags) }
    }

    fn give_back(&mut self) {
        if let Some(slot) = self.slot.take() {
            // An unlock of a held lock does not fail in the unix VFS.
            let _ = self.real_shm_lock(slot, 1, ffi::SQLITE_SHM_UNLOCK | ffi::SQLITE_SHM_SHARED);
        }
    }

    /// The shm mapping goes away: the kept lock first, then the pointer.
    fn unmapped(&mut self) {
        self.give_back();
        self.shm = std::ptr::null();
    }

    /// The first copy of the WAL index header, or None while unmapped.
    fn read_header(&mut self) -> Option<[u64; 6]> {
        if self.shm.is_null() {
            if self.real.is_null() {
                return None;
            }
            let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
            // SAFETY: with extend 0 the unix VFS only returns region 0 if
            // this connection has it mapped already; the pointer stays valid
            // until xShmUnmap, which clears it here first.
            let rc =
                unsafe { ((*(*self.real).pMethods).xShmMap.expect("xShmMap"))(self.real, 0, SHM_REGION, 0, &mut p) };
            if rc != ffi::SQLITE_OK || p.is_null() {
                return None;
            }
            self.shm = p.cast();
        }
        let mut h = [0u64; 6];
        for (i, w) in h.iter_mut().enumerate() {
            // SAFETY: region 0 is at least 32 KiB and 8-byte aligned (a
            // mapping); other processes write it, hence volatile reads, as
            // SQLite's own reads of the header are.
            *w = unsafe { std::ptr::read_volatile(self.shm.add(i)) };
        }
        Some(h)
    }
}

/// The thread that gives back locks no read is using.
struct Keeper {
    state: Mutex<KeeperState>,
    wake: Condvar,
    /// Mirrors `state.armed`, read without the lock on every kept lock.
    armed: AtomicBool,
}

#[derive(Default)]
struct KeeperState {
    armed: bool,
    /// The process that started the thread: a child made by `fork` has
    /// this state but not the thread, and starts its own.
    started: Option<u32>,
}

fn keeper() -> &'static Keeper {
    static KEEPER: OnceLock<Keeper> = OnceLock::new();
    KEEPER.get_or_init(|| Keeper {
        state: Mutex::new(KeeperState::default()),
        wake: Condvar::new(),
        armed: AtomicBool::new(false),
    })
}

impl Keeper {
    /// Starts the thread in this process if it is not running; false if it
    /// could not start. It watches every lease's files (`LEASES`).
    fn start(&'static self) -> bool {
        let mut st = lock(&self.state);
        if st.started != Some(std::process::id()) {
            let spawned = std::thread::Builder::new()
                .name("tinystore-read-locks".into())
                .spawn(move || self.run());
            if spawned.is_err() {
                return false;
            }
            st.started = Some(std::process::id());
        }
        true
    }

    /// A lock was kept: make sure the thread is looking.
    fn note_kept(&self) {
        if self.armed.load(Ordering::SeqCst) {
            return;
        }
        let mut st = lock(&self.state);
        if !st.armed {
            st.armed = true;
            self.armed.store(true, Ordering::SeqCst);
            self.wake.notify_one();
        }
    }

    fn run(&self) {
        let mut st = lock(&self.state);
        loop {
            while !st.armed {
                st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            st = self.wake.wait_timeout(st, POLL).unwrap_or_else(|p| p.into_inner()).0;
            st.armed = false;
            self.armed.store(false, Ordering::SeqCst);
            // Never hold this lock while taking a file's: a reader keeping a
            // lock takes them the other way round.
            drop(st);
            let files = every_file();
            let now = Instant::now();
            let mut any = false;
            for f in &files {
                any |= f.reap(now);
            }
            drop(files);
            st = lock(&self.state);
            if any && !st.armed {
                st.armed = true;
                self.armed.store(true, Ordering::SeqCst);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update under these locks is a single assignment: a panic
    // elsewhere leaves them consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
