//! Keys held in memory and written to the file every period: the state of
//! `flush_every` counters and of rate limits (KV-12, KV-14).
//!
//! Invariants:
//! - A key enters memory at its first change, read from the file once;
//!   after that its changes touch memory only, until a flush writes them.
//! - A key changed since it was written (dirty) never leaves memory except
//!   into the file: a live count is never evicted to make room. Written
//!   (clean) keys go after a flush: every one for counters, so their next
//!   change reads the file again; for rate limits those as good as new, and
//!   every one when a new key needs room.
//! - A rate limit reads a key from the file only while the file may hold a
//!   live row that memory lacks: until the latest expiry among the name's
//!   rows when the memory started, or among the live keys it let go of.
//!   After that a key memory does not hold is new, and costs no read.
//! - At most [`MEMORY_BOUND`] keys a name. A new key past the bound flushes
//!   first; if the flush fails the new key is `Limit`, and the keys held
//!   keep counting. A warning is logged when a name passes 80% of it.
//! - A flush reads what it writes inside its writer op, so a `clear` that
//!   the writer ran before it is never undone by it.
//! - The memory keeps itself alive until the store's last flush at close,
//!   so dropping every handle loses nothing.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::key_table::{KeyHash, KeyTable, PathHash};
use super::lock;
use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::maintain::Flush;
use crate::raw::Raw;
use crate::storage;
use crate::store::{Store, StoreInner};

/// The most keys one counters or rate limit name holds in memory.
pub const MEMORY_BOUND: usize = 100_000;
/// A warning is logged when a name's memory passes this many keys (80%).
const WARN_AT: usize = MEMORY_BOUND / 5 * 4;
/// Shards of a memory, so that threads on different keys rarely meet.
const SHARDS: usize = 64;
/// Keys written per transaction by a flush.
const FLUSH_BATCH: usize = 10_000;
/// How early a periodic flush may run: the store's tick is a second, so a
/// period measured to the tick would otherwise slip to every other tick.
const TICK_SLACK: Duration = Duration::from_millis(250);
/// A full memory logs its refusals at most this often.
const FULL_LOG_EVERY: Duration = Duration::from_secs(60);

/// The state of one key as memory holds it.
pub(crate) trait Held: Clone + Send + 'static {
    /// The state of a key the file does not hold.
    const NEW: Self;
    /// The row that keeps this state, as an integer value and an expiry, or
    /// `None` when the key is as good as new and its row goes.
    fn row(&self, now_ms: i64) -> Option<(i64, Option<i64>)>;
}

struct Slot<V> {
    v: V,
    /// 0 when the file has this state; else the stamp of its last change.
    dirty: u64,
}

struct Shard<V> {
    map: KeyTable<Slot<V>>,
    /// Stamps changes, so a flush marks clean only what it wrote.
    stamp: u64,
}

/// The in-memory keys of one counters or rate limit name.
pub(crate) struct Memory<V> {
    me: Weak<Memory<V>>,
    /// Holds this memory until the store's last flush.
    keepalive: Mutex<Option<Arc<Memory<V>>>>,
    name: String,
    what: &'static str,
    bucket: i64,
    shards: Vec<Mutex<Shard<V>>>,
    /// Hashes a path once for its shard and its place there.
    hash: KeyHash,
    /// Keys held, and keys being read in.
    held: AtomicUsize,
    period: Duration,
    last_flush: Mutex<Instant>,
    flushing: Mutex<()>,
    room: Mutex<()>,
    warned: AtomicBool,
    last_full_log: Mutex<Option<Instant>>,
    /// Evict every written key after a flush (counters), not only idle ones.
    evict_all: bool,
    /// Until this time (ms) the file may hold a live row memory lacks, so a
    /// new key is read from it; `i64::MAX` reads always (counters).
    read_until: AtomicI64,
    /// Moves at each clear, so a key read from the file across a clear is
    /// read again.
    clears: AtomicU64,
}

impl<V: Held> Memory<V> {
    /// A memory for the name `name` (id `bucket`), written every `period`,
    /// registered with the store's flushes. Until `read_until` (ms) a key it
    /// does not hold is read from the file.
    pub(crate) fn new(
        store: &Store,
        name: &str,
        what: &'static str,
        bucket: i64,
        period: Duration,
        evict_all: bool,
        read_until: i64,
    ) -> Arc<Memory<V>> {
        let m = Arc::new_cyclic(|me| Memory {
            me: me.clone(),
            keepalive: Mutex::new(None),
            name: name.to_owned(),
            what,
            bucket,
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        map: KeyTable::new(),
                        stamp: 0,
                    })
                })
                .collect(),
            hash: KeyHash::new(),
            held: AtomicUsize::new(0),
            period,
            last_flush: Mutex::new(Instant::now()),
            flushing: Mutex::new(()),
            room: Mutex::new(()),
            warned: AtomicBool::new(false),
            last_full_log: Mutex::new(None),
            evict_all,
            read_until: AtomicI64::new(read_until),
            clears: AtomicU64::new(0),
        });
        *lock(&m.keepalive) = Some(m.clone());
        let weak: Weak<dyn Flush> = Arc::downgrade(&m) as Weak<dyn Flush>;
        store.register_flush(weak);
        m
    }

    fn shard(&self, h: PathHash) -> &Mutex<Shard<V>> {
        &self.shards[KeyHash::shard(h, SHARDS)]
    }

    /// The state memory holds for `path`, if it holds the key.
    pub(crate) fn get(&self, path: &[u8]) -> Option<V> {
        let h = self.hash.of(path);
        lock(self.shard(h)).map.get(h, path).map(|s| s.v.clone())
    }

    /// Whether a key memory does not hold must be read from the file at `now_ms`.
    pub(crate) fn must_read(&self, now_ms: i64) -> bool {
        now_ms < self.read_until.load(Ordering::Acquire)
    }

    /// Changes the state of `path` with `f`, which returns its answer and
    /// whether it changed the state. A key memory does not hold is read
    /// with `load` first (when the file may hold it), making room if memory
    /// is full.
    pub(crate) fn change<R>(
        &self,
        store: &StoreInner,
        path: &[u8],
        now_ms: i64,
        load: impl Fn() -> Result<V>,
        f: impl FnOnce(&mut V) -> Result<(R, bool)>,
    ) -> Result<R> {
        let h = self.hash.of(path);
        let shard = self.shard(h);
        loop {
            {
                let mut s = lock(shard);
                let Shard { map, stamp } = &mut *s;
                if let Some(slot) = map.get_mut(h, path) {
                    return apply(slot, stamp, f);
                }
            }
            self.reserve(store)?;
            let epoch = self.clears.load(Ordering::Acquire);
            let loaded = if self.must_read(now_ms) { load() } else { Ok(V::NEW) };
            let v = match loaded {
                Ok(v) => v,
                Err(e) => {
                    self.held.fetch_sub(1, Ordering::AcqRel);
                    return Err(e);
                }
            };
            let mut s = lock(shard);
            if self.clears.load(Ordering::Acquire) != epoch {
                // A clear ran while the row was read: read it again.
                drop(s);
                self.held.fetch_sub(1, Ordering::AcqRel);
                continue;
            }
            let Shard { map, stamp } = &mut *s;
            let (slot, new) = map.get_or_insert(&self.hash, h, path, Slot { v, dirty: 0 });
            if !new {
                // Another thread read it in meanwhile: use its state.
                self.held.fetch_sub(1, Ordering::AcqRel);
            }
            return apply(slot, stamp, f);
        }
    }

    /// Takes a place for a new key, making room when memory is full.
    fn reserve(&self, store: &StoreInner) -> Result<()> {
        loop {
            let n = self.held.fetch_add(1, Ordering::AcqRel) + 1;
            if n <= MEMORY_BOUND {
                if n >= WARN_AT && !self.warned.swap(true, Ordering::AcqRel) {
                    log::warn!(
                        "tinystore: the memory of {} {:?} holds {n} keys, past 80% of its bound of {MEMORY_BOUND} \
                         (kind: limit-store-filling); past the bound a new key waits for a flush",
                        self.what,
                        self.name
                    );
                }
                return Ok(());
            }
            self.held.fetch_sub(1, Ordering::AcqRel);
            self.make_room(store)?;
        }
    }

    /// Flushes so that written keys can go; refuses when that frees nothing.
    fn make_room(&self, store: &StoreInner) -> Result<()> {
        let _room = lock(&self.room);
        if self.held.load(Ordering::Acquire) < MEMORY_BOUND {
            return Ok(()); // another thread made room
        }
        let flushed = self.flush_now(store, true);
        if self.held.load(Ordering::Acquire) < MEMORY_BOUND {
            return Ok(());
        }
        let why = match flushed {
            Err(e) => format!("writing them to make room failed ({})", e.message()),
            Ok(_) => "every one changed again before it could be written".to_owned(),
        };
        self.log_full(&why);
        Err(Error::limit(format!(
            "the memory of {} {:?} holds {MEMORY_BOUND} keys, its bound, and {why}; \
             a new key is refused until a flush makes room, while the keys it holds keep counting",
            self.what, self.name
        )))
    }

    fn log_full(&self, why: &str) {
        let mut last = lock(&self.last_full_log);
        if last.is_none_or(|t| t.elapsed() >= FULL_LOG_EVERY) {
            *last = Some(Instant::now());
            log::error!(
                "tinystore: the memory of {} {:?} is full ({MEMORY_BOUND} keys) and {why}; \
                 new keys are refused (kind: limit-store-full)",
                self.what,
                self.name
            );
        }
    }

    /// Writes every changed key, 10,000 a transaction, then lets written
    /// keys go (`evict_all`: every one; else the idle ones). Returns how many
    /// keys were written.
    pub(crate) fn flush_now(&self, store: &StoreInner, evict_all: bool) -> Result<usize> {
        let _flushing = lock(&self.flushing);
        let started = Instant::now();
        let mut dirty: Vec<(usize, Vec<u8>)> = Vec::new();
        for (i, shard) in self.shards.iter().enumerate() {
            let s = lock(shard);
            dirty.extend(
                s.map
                    .iter()
                    .filter(|(_, slot)| slot.dirty != 0)
                    .map(|(p, _)| (i, p.clone())),
            );
        }
        let mut written = 0;
        let mut result = Ok(());
        for chunk in dirty.chunks(FLUSH_BATCH) {
            let Some(me) = self.me.upgrade() else { break };
            let chunk = chunk.to_vec();
            let weight = chunk.iter().map(|(_, p)| p.len() + 16).sum();
            match store
                .writer
                .call(weight, move |w: &mut WriteCtx<'_>| me.write_chunk(w, chunk))
            {
                Ok(done) => {
                    written += done.len();
                    self.mark_clean(done);
                }
                Err(e) => {
                    result = Err(e.in_bucket(&self.name));
                    break;
                }
            }
        }
        self.evict(store.clock.now_millis(), evict_all);
        *lock(&self.last_flush) = started;
        result.map(|()| written)
    }

    /// Writes the keys of `chunk` still dirty, as memory holds them now.
    fn write_chunk(&self, w: &mut WriteCtx<'_>, chunk: Vec<(usize, Vec<u8>)>) -> Result<Vec<(usize, Vec<u8>, u64)>> {
        let mut done = Vec::with_capacity(chunk.len());
        for (i, path) in chunk {
            let snap = {
                let s = lock(&self.shards[i]);
                s.map
                    .get(self.hash.of(&path), &path)
                    .filter(|slot| slot.dirty != 0)
                    .map(|slot| (slot.v.clone(), slot.dirty))
            };
            let Some((v, stamp)) = snap else { continue };
            match v.row(w.now) {
                Some((value, expires)) => {
                    let version = w.next_version();
                    storage::put(w.conn, self.bucket, &path, version, expires, &Raw::Int(value), None)?;
                }
                None => storage::delete(w.conn, self.bucket, &path, None)?,
            }
            done.push((i, path, stamp));
        }
        Ok(done)
    }

    fn mark_clean(&self, done: Vec<(usize, Vec<u8>, u64)>) {
        for (i, path, stamp) in done {
            let mut s = lock(&self.shards[i]);
            if let Some(slot) = s.map.get_mut(self.hash.of(&path), &path)
                && slot.dirty == stamp
            {
                slot.dirty = 0;
            }
        }
    }

    /// Lets written keys go: every one with `all`, else those as good as new.
    fn evict(&self, now_ms: i64, all: bool) {
        let mut removed = 0;
        let mut live_until = 0;
        for shard in &self.shards {
            let mut s = lock(shard);
            s.map.retain(|_, slot| {
                if slot.dirty != 0 {
                    return true;
                }
                match slot.v.row(now_ms) {
                    Some(_) if !all => true,
                    Some((_, expires)) => {
                        // Its row lives on in the file: read it when it comes back.
                        live_until = live_until.max(expires.unwrap_or(i64::MAX));
                        removed += 1;
                        false
                    }
                    None => {
                        removed += 1;
                        false
                    }
                }
            });
        }
        self.read_until.fetch_max(live_until, Ordering::AcqRel);
        let held = self.held.fetch_sub(removed, Ordering::AcqRel) - removed;
        if held < WARN_AT {
            self.warned.store(false, Ordering::Release);
        }
    }

    /// Drops the keys of paths in `[lo, hi)`: a clear of their branch, run
    /// inside the clear's write. Call [`Memory::cleared`] after its commit.
    pub(crate) fn drop_range(&self, lo: &[u8], hi: &[u8]) {
        self.clears.fetch_add(1, Ordering::AcqRel);
        let mut removed = 0;
        for shard in &self.shards {
            let mut s = lock(shard);
            s.map.retain(|p, _| {
                let inside = p >= lo && p < hi;
                removed += usize::from(inside);
                !inside
            });
        }
        self.held.fetch_sub(removed, Ordering::AcqRel);
    }

    /// Marks a clear committed: a key read from the file before this is
    /// read again.
    pub(crate) fn cleared(&self) {
        self.clears.fetch_add(1, Ordering::AcqRel);
    }

    /// How many keys memory holds.
    #[allow(dead_code)] // for debugging and tests
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).map.len()).sum()
    }
}

fn apply<V, R>(slot: &mut Slot<V>, stamp: &mut u64, f: impl FnOnce(&mut V) -> Result<(R, bool)>) -> Result<R> {
    let (r, changed) = f(&mut slot.v)?;
    if changed {
        *stamp += 1;
        slot.dirty = *stamp;
    }
    Ok(r)
}

impl<V: Held> Flush for Memory<V> {
    fn flush(&self, store: &StoreInner, force: bool) -> Result<usize> {
        if !force && lock(&self.last_flush).elapsed() + TICK_SLACK < self.period {
            return Ok(0);
        }
        let out = self.flush_now(store, self.evict_all);
        if store.check_open().is_err() {
            // The store's last flush: nothing will change this memory again.
            lock(&self.keepalive).take();
        }
        out
    }
}
