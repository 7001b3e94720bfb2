//! The store: one directory, one kv.db, one writer, a few readers, and the
//! background work that keeps the file small.

mod maintain;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::backend::Backend;
use crate::budget::{Budget, Held};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::group_commit::{WriteCtx, Writer};
use crate::readers::Readers;
use crate::storage::{self, Kind};

pub(crate) use maintain::Flush;
pub use maintain::Maintenance;
use maintain::Renewals;

/// The file inside a store's directory.
pub const FILE_NAME: &str = "kv.db";

/// How a store opens. Most options hold for every backend; those of
/// SQLite's files (readers, mmap size, kept read locks, file modes) are
/// [`SqliteOptions`], and a PostgreSQL store refuses them by name.
#[derive(Clone, Debug, Default)]
pub struct Options {
    clock: Option<SystemTime>,
    sweep_every: Option<Duration>,
    memory: Option<usize>,
    sqlite: SqliteOptions,
}

/// The options of a store in a directory, which only SQLite's files have.
/// Set through [`Options`]' methods of the same names.
#[derive(Clone, Debug, Default)]
pub struct SqliteOptions {
    readers: Option<usize>,
    mmap_size: Option<u64>,
    keep_read_locks: Option<bool>,
    share_with_group: bool,
}

impl SqliteOptions {
    /// The SQLite-only options that are set, by the name of their method.
    fn set(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.readers.is_some() {
            names.push("readers");
        }
        if self.mmap_size.is_some() {
            names.push("mmap_size");
        }
        if self.keep_read_locks.is_some() {
            names.push("keep_read_locks");
        }
        if self.share_with_group {
            names.push("share_with_group");
        }
        names
    }
}

/// How much of kv.db a reader maps into memory unless told otherwise.
pub const DEFAULT_MMAP_SIZE: u64 = 1 << 30;

impl Options {
    /// The options of an ordinary store: the system clock, background work on.
    pub fn new() -> Options {
        Options::default()
    }

    /// A test clock that starts at `start`. The store is then manual: nothing
    /// runs in the background, and [`Store::maintain`] does the flushes and
    /// sweeps when the test says.
    pub fn test_clock(mut self, start: SystemTime) -> Options {
        self.clock = Some(start);
        self
    }

    /// How often the background thread deletes expired and cleared rows
    /// (default: every minute, and every ten seconds while a backlog remains).
    pub fn sweep_every(mut self, d: Duration) -> Options {
        self.sweep_every = Some(d);
        self
    }

    /// A memory budget, in bytes, for the values the store holds at once
    /// (default: none). A call holds the memory its value may need before
    /// it makes the value, and waits for its turn while the budget is spent:
    /// a write its value's size (a typed value the largest, 1 MiB, until it
    /// is encoded), a read the largest value, a page of `list` its 4 MiB and
    /// the row past them. Inside a `tx` or `view` a call takes what is free
    /// or is `Limit` at once. At least 1 MiB.
    ///
    /// On Linux with glibc, opening a store with a budget also fixes
    /// malloc's mmap threshold at 64 KiB for the process (unless
    /// `MALLOC_MMAP_THRESHOLD_` is set): glibc otherwise raises the
    /// threshold once a large buffer is freed, then keeps freed value
    /// buffers in its per-thread arenas, and the process stays resident at
    /// twice the budget though the store holds no more than it.
    pub fn memory(mut self, bytes: usize) -> Options {
        self.memory = Some(bytes);
        self
    }

    /// How many bytes of kv.db each reader maps into memory and reads
    /// without a system call (SQLite's `mmap_size`). Default: 1 GiB, or
    /// none for a store with a [`Options::memory`] budget, whose resident
    /// memory would otherwise grow with the file's pages it touches. 0 maps
    /// nothing: every page a reader's cache lacks is then read with `pread`.
    ///
    /// Why the default maps: once the file outgrows the readers' page
    /// caches, a read of a mapped page costs no system call and no copy, so
    /// a get over 1,000,000 keys costs about what one over 10,000 does
    /// (docs/measurements.md). The price: a mapped page that cannot be read
    /// (the disk fails under it, or something other than SQLite cuts kv.db
    /// short in the middle of a read) stops the process with SIGBUS rather
    /// than returning an error. SQLite's own changes to the file's size, a
    /// `VACUUM` from another program included, are safe, and a file cut
    /// short between reads is `Corrupt` at the next read.
    pub fn mmap_size(mut self, bytes: u64) -> Options {
        self.sqlite.mmap_size = Some(bytes);
        self
    }

    /// Whether readers keep their read-mark lock in `kv.db-shm` between
    /// reads while the file is quiet (default: on, off for a store with a
    /// [`Options::test_clock`], which runs no thread of its own). A point
    /// read then skips two `fcntl` system calls, a third to a half of its
    /// time. The lock is given back within milliseconds of another
    /// process's commit and before this process's writer begins, so that
    /// no writer's checkpoint waits on it for long (docs/format.md, "Readers
    /// and their locks"). Off, every read takes and gives back its lock, as
    /// plain SQLite does.
    pub fn keep_read_locks(mut self, on: bool) -> Options {
        self.sqlite.keep_read_locks = Some(on);
        self
    }

    /// Creates the store's files readable and writable by their group as
    /// well as their owner (0660, and 0770 for a directory the store
    /// creates), for processes of several users in one group. By default
    /// they are the owner's only (0600 and 0700): anyone who can write the
    /// limits table can reset every rate limit. Files that exist keep their
    /// permissions; the WAL, its index and the limits table take kv.db's.
    pub fn share_with_group(mut self, on: bool) -> Options {
        self.sqlite.share_with_group = on;
        self
    }

    /// How many reader connections to keep (default: one per core, 2 to 8).
    pub fn readers(mut self, n: usize) -> Options {
        self.sqlite.readers = Some(n);
        self
    }
}

/// An open store. Cheap to clone; every clone is the same store. The store
/// closes at [`Store::close`] or when the last clone and handle are dropped.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<StoreInner>,
}

pub(crate) struct StoreInner {
    pub(crate) dir: PathBuf,
    /// Where the rows live: kv.db through `writer` and `readers`, or PostgreSQL.
    pub(crate) backend: Backend,
    pub(crate) clock: Clock,
    pub(crate) writer: Writer,
    pub(crate) readers: Readers,
    /// What each reader connection maps of kv.db ([`Options::mmap_size`]).
    pub(crate) mmap_size: u64,
    pub(crate) renewals: Renewals,
    /// The binding views open on the store, for maintenance to end those
    /// past their bound.
    pub(crate) views: crate::open_views::OpenViews,
    flushers: Mutex<Vec<Weak<dyn Flush>>>,
    closed: AtomicBool,
    pub(crate) sweep_every: Duration,
    background: Mutex<Option<(JoinHandle<()>, Arc<Stop>)>>,
    budget: Option<Arc<Budget>>,
    /// What this store's log records carry, so that a language sends them
    /// to the logger the store was opened with ([`Store::log_id`]).
    pub(crate) log_id: u64,
}

/// The next store's [`StoreInner::log_id`]; 0 is no store.
static NEXT_LOG_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_log_id() -> u64 {
    NEXT_LOG_ID.fetch_add(1, Ordering::Relaxed)
}

impl StoreInner {
    /// Holds `bytes` of the memory budget, waiting for this call's turn;
    /// holds nothing when the store has no budget.
    pub(crate) fn hold(&self, bytes: usize) -> Held {
        match &self.budget {
            Some(b) => {
                // Writes this thread holds back in `submit_together` keep
                // their memory until they commit: queue them before waiting.
                crate::group_commit::submit_held_now();
                b.take(bytes)
            }
            None => Held::nothing(),
        }
    }

    /// [`StoreInner::hold`] inside a transaction: what is free now, or `Limit`.
    pub(crate) fn hold_now(&self, bytes: usize, what: &str) -> Result<Held> {
        match &self.budget {
            Some(b) => b.take_now(bytes, what),
            None => Ok(Held::nothing()),
        }
    }
}

impl Store {
    /// Opens the store in `dir`, creating the directory and kv.db if needed.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = tinystore::Store::open(dir.path().join("data"))?;
    /// let codes = store.bucket::<i64>("sign-in-codes").ttl(std::time::Duration::from_secs(900)).open()?;
    /// codes.set("5f2b", &42)?;
    /// assert_eq!(codes.take("5f2b")?, Some(42));
    /// assert_eq!(codes.take("5f2b")?, None);
    /// # Ok::<(), tinystore::Error>(())
    /// ```
    pub fn open(dir: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(dir, Options::default())
    }

    /// Opens the store in `dir` with `options`. A location that starts with
    /// `postgres://` or `postgresql://` opens a store in that PostgreSQL
    /// database instead (docs/postgres.md).
    pub fn open_with(dir: impl AsRef<Path>, options: Options) -> Result<Store> {
        if let Some(location) = dir.as_ref().to_str().filter(|l| crate::postgres::is_postgres(l)) {
            return Store::open_postgres(location, options);
        }
        let dir = dir.as_ref().to_path_buf();
        check_dir(&dir)?;
        check_memory(&options)?;
        let mode = if options.sqlite.share_with_group { 0o660 } else { 0o600 };
        create_private(&dir, mode)?;
        if options.memory.is_some() {
            return_freed_values_to_the_system();
        }
        let file = dir.join(FILE_NAME);
        let clock = match options.clock {
            Some(t) => Clock::manual(t),
            None => Clock::system(),
        };
        let conn = storage::file::open_writer(&file)?;
        clock.hold_at_least(storage::file::clock_mark(&conn, &file)?);
        let n = options
            .sqlite
            .readers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8));
        let mmap_size = options.sqlite.mmap_size.unwrap_or(match options.memory {
            Some(_) => 0,
            None => DEFAULT_MMAP_SIZE,
        });
        let lease = crate::read_locks::Lease::of(&file);
        let keep = options.sqlite.keep_read_locks.unwrap_or(!clock.is_manual());
        let readers = Readers::open(&file, n, mmap_size, keep.then_some(&lease))?;
        let turns = storage::write_lock_turns::Turns::open(&file, lease);
        let log_id = next_log_id();
        let writer = Writer::start(conn, turns, clock.clone(), log_id)?;
        let inner = Arc::new(StoreInner {
            dir,
            backend: Backend::Sqlite,
            clock,
            writer,
            readers,
            mmap_size,
            renewals: Renewals::default(),
            views: Default::default(),
            flushers: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            sweep_every: options.sweep_every.unwrap_or(Duration::from_secs(60)),
            background: Mutex::new(None),
            budget: options.memory.map(Budget::new),
            log_id,
        });
        if !inner.clock.is_manual() {
            maintain::start_background(&inner);
        }
        Ok(Store { inner })
    }

    /// Opens a store in a PostgreSQL database: its tables are created if
    /// missing, and a database at a newer schema is refused.
    fn open_postgres(location: &str, options: Options) -> Result<Store> {
        let set = options.sqlite.set();
        if !set.is_empty() {
            return Err(Error::invalid(format!(
                "{} only configure a store in a directory (SQLite's files); a PostgreSQL store takes none of them",
                set.join(", ")
            )));
        }
        check_memory(&options)?;
        let pg = Arc::new(crate::postgres::PgStore::open(location)?);
        let clock = match options.clock {
            Some(t) => Clock::manual(t),
            None => Clock::system(),
        };
        let inner = Arc::new(StoreInner {
            dir: PathBuf::from(crate::postgres::hide_password(location)),
            backend: Backend::Postgres(pg),
            views: Default::default(),
            writer: Writer::refusing(clock.clone()),
            readers: Readers::refusing(),
            clock,
            mmap_size: 0,
            renewals: Renewals::default(),
            flushers: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            sweep_every: options.sweep_every.unwrap_or(Duration::from_secs(60)),
            background: Mutex::new(None),
            budget: options.memory.map(Budget::new),
            log_id: next_log_id(),
        });
        if !inner.clock.is_manual() {
            maintain::start_background(&inner);
        }
        Ok(Store { inner })
    }

    /// Whether the store's rows live in PostgreSQL rather than in kv.db.
    pub fn is_postgres(&self) -> bool {
        self.inner.postgres().is_some()
    }

    /// The number this store's log records carry
    /// ([`crate::LogRecord::store`]): unique to this open in this process.
    pub fn log_id(&self) -> u64 {
        self.inner.log_id
    }

    /// The directory of the store (for a PostgreSQL store, its location
    /// without the password).
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The path of kv.db.
    pub fn file(&self) -> PathBuf {
        self.inner.dir.join(FILE_NAME)
    }

    /// The store's clock: expiry is judged on it. A test clock can be moved.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// Whether the store runs no background work (it has a test clock).
    pub fn is_manual(&self) -> bool {
        self.inner.clock.is_manual()
    }

    /// Flushes what memory holds (counters, rate limits, renewals), deletes
    /// rows hidden by clears and expired rows in bounded batches, and says
    /// how many of each. An ordinary store does this by itself; a store with
    /// a test clock only when this is called.
    pub fn maintain(&self) -> Result<Maintenance> {
        self.inner.check_open()?;
        maintain::run(&self.inner, true)
    }

    /// Writes what memory holds and closes the file. Calls after this, on
    /// the store or its handles, are `Closed`.
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }

    /// Whether the store is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Every name in the file, with its kind, by name.
    pub fn names(&self) -> Result<Vec<(String, String)>> {
        self.inner.check_open()?;
        if let Some(pg) = self.inner.postgres() {
            let all = pg.block(async |pool, _| crate::postgres::cells::names(pool).await)?;
            return Ok(all.into_iter().map(|(_, name, kind)| (name, kind)).collect());
        }
        self.inner.readers.with(|c| {
            Ok(storage::list_buckets(c)?
                .into_iter()
                .map(|(_, name, kind)| (name, kind))
                .collect())
        })
    }

    /// Groups the writer committed and the writes in them, since the store
    /// opened: writes per group is how well concurrent writes share a commit.
    pub fn group_stats(&self) -> (u64, u64) {
        self.inner.writer.stats().snapshot()
    }

    #[doc(hidden)]
    /// Makes the next group's commit fail, as a failed fsync would. For tests.
    pub fn fail_next_commit_for_tests(&self) {
        self.inner.writer.fail_next_commit();
    }

    #[allow(dead_code)] // used by the counters and rate limits
    pub(crate) fn register_flush(&self, f: Weak<dyn Flush>) {
        let mut fl = self.inner.flushers.lock().unwrap_or_else(|p| p.into_inner());
        fl.retain(|w| w.strong_count() > 0);
        fl.push(f);
    }

    /// Finds or registers the name of a handle of `kind`, refusing a name of
    /// another kind (KV-2).
    pub(crate) fn register(&self, name: &str, kind: Kind) -> Result<i64> {
        check_name(name)?;
        self.inner.check_open()?;
        if let Some(pg) = self.inner.postgres() {
            let (id, found) =
                pg.block(async |pool, _| crate::postgres::cells::register(pool, name, kind.as_str()).await)?;
            storage::check_kind(name, &found, kind)?;
            return Ok(id);
        }
        let found = self.inner.readers.with(|c| storage::find_bucket(c, name))?;
        if let Some((id, k)) = found {
            storage::check_kind(name, &k, kind)?;
            return Ok(id);
        }
        let owned = name.to_owned();
        self.inner.writer.call(0, move |w: &mut WriteCtx<'_>| {
            storage::register_bucket(w.conn, &owned, kind)
        })
    }
}

impl StoreInner {
    #[inline]
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::closed())
        } else {
            Ok(())
        }
    }

    pub(crate) fn flushers(&self) -> Vec<Arc<dyn Flush>> {
        let fl = self.flushers.lock().unwrap_or_else(|p| p.into_inner());
        fl.iter().filter_map(Weak::upgrade).collect()
    }

    pub(crate) fn set_background(&self, handle: JoinHandle<()>, stop: Arc<Stop>) {
        *self.background.lock().unwrap_or_else(|p| p.into_inner()) = Some((handle, stop));
    }

    fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if let Some((handle, stop)) = self.background.lock().unwrap_or_else(|p| p.into_inner()).take() {
            *stop.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
            stop.1.notify_all();
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
        if let Some(pg) = self.postgres() {
            // The renewals reads asked for, while the database still takes calls.
            let renewed = maintain::flush_renewals(self);
            pg.close();
            return renewed.map(|_| ());
        }
        // Flush memory while the writer still takes writes.
        let flushed = maintain::flush_memory(self, true);
        self.writer.close();
        self.readers.close();
        flushed.map(|_| ())
    }
}

impl Drop for StoreInner {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::error!(store = self.log_id; "tinystore: closing {} lost what memory held: {e}", self.dir.display());
        }
    }
}

/// Refuses a memory budget below the largest value.
fn check_memory(options: &Options) -> Result<()> {
    if let Some(m) = options.memory
        && m < crate::MAX_VALUE
    {
        return Err(Error::invalid(format!(
            "memory budget {m} bytes is below the largest value, {} bytes (1 MiB)",
            crate::MAX_VALUE
        )));
    }
    Ok(())
}

/// Refuses a store path that cannot name a directory, before anything is
/// created: an empty path would put kv.db in the working directory.
pub(crate) fn check_dir(dir: &Path) -> Result<()> {
    let bad = |why: String| Err(Error::invalid(format!("the store path {dir:?} {why}")));
    if dir.as_os_str().is_empty() {
        return bad("is empty: give the directory to keep kv.db in".into());
    }
    if dir.as_os_str().as_encoded_bytes().contains(&0) {
        return bad("holds a NUL byte".into());
    }
    if let Some(found) = dir.ancestors().find(|a| a.exists())
        && !found.is_dir()
    {
        return bad(format!("needs {} to be a directory, and it is a file", found.display()));
    }
    Ok(())
}

/// Creates the store's directory (its mode `mode` with execute bits) and an
/// empty kv.db with `mode` when they do not exist, past the umask: SQLite
/// gives the WAL and its index kv.db's mode, and the limits table takes it too.
pub(crate) fn create_private(dir: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let io = |p: &Path, e: std::io::Error| Error::new(crate::ErrorKind::Io, format!("{}: {e}", p.display()));
    let set = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).map_err(|e| io(p, e));
    if !dir.exists() {
        let dir_mode = mode | (mode & 0o444) >> 2;
        match std::fs::DirBuilder::new().recursive(true).mode(dir_mode).create(dir) {
            Ok(()) => set(dir, dir_mode)?,
            Err(e) if dir.is_dir() => drop(e), // another process made it first
            Err(e) => return Err(io(dir, e)),
        }
    }
    let file = dir.join(FILE_NAME);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&file)
    {
        Ok(_) => set(&file, mode),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(&file, e)),
    }
}

/// Checks a handle's name: `[a-z0-9][a-z0-9_-]{0,63}` (KV-2).
pub fn check_name(name: &str) -> Result<()> {
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "the name {name:?} is not a handle name: use 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter or digit"
        )))
    }
}

/// A flag the background thread waits on, set to stop it.
pub(crate) type Stop = (Mutex<bool>, Condvar);

/// Fixes glibc's mmap threshold, once per process, so that a freed value
/// buffer (up to 1 MiB) goes back to the system: see [`Options::memory`].
fn return_freed_values_to_the_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
                // SAFETY: mallopt takes glibc's arena lock; any thread may call it at any time.
                unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 64 * 1024) };
            }
        });
    }
}

/// Waits out `d` or until `stop` is set; returns whether to stop.
pub(crate) fn pause(stop: &(Mutex<bool>, Condvar), d: Duration) -> bool {
    let deadline = Instant::now() + d;
    let mut g = stop.0.lock().unwrap_or_else(|p| p.into_inner());
    while !*g {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        g = stop
            .1
            .wait_timeout(g, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    true
}

impl StoreInner {
    /// The PostgreSQL store behind this store, if it is one.
    #[inline]
    pub(crate) fn postgres(&self) -> Option<&crate::postgres::PgStore> {
        match &self.backend {
            Backend::Sqlite => None,
            Backend::Postgres(pg) => Some(pg),
        }
    }
}
