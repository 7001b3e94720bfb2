//! Keys held in memory and written to the file every period: the state of
//! `flush_every` counters and of rate limits (KV-12, KV-14), in the limits
//! table that every process on the store maps ([`super::shared`]).
//!
//! Invariants:
//! - A key enters the table at its first change, read from the file once
//!   (by whichever process changes it first); after that every process
//!   changes it in the table, until a flush writes it.
//! - A key whose state kv.db lacks (dirty) never leaves the table except
//!   into the file: a live count is never evicted to make room. Keys leave
//!   only when a new key finds the name at its bound: first the clean keys
//!   as good as new (a rate limit's spent due time, a counter that is not
//!   live), then, if that leaves the name nearly full, every clean key. A
//!   slot costs the same whether it holds a key or not, and a key that
//!   stays is changed again without a lock.
//! - A rate limit reads a key from the file only while the file may hold a
//!   live row the table lacks: until the latest expiry among the name's
//!   rows when its region was laid out, or among the live keys it let go
//!   of. After that a key the table does not hold is new, and costs no read.
//! - At most [`MEMORY_BOUND`] keys a name, across every process. A new key
//!   past the bound flushes first; if the flush fails the new key is
//!   `Limit`, and the keys held keep counting. A warning is logged when a
//!   name passes 80% of it.
//! - A flush reads what it writes inside its writer op, so a `clear` that a
//!   writer (of any process) ran before it is never undone by it; new keys
//!   wait for a running clear's commit, so none comes back from before it.
//! - A path longer than a slot holds ([`MAX_SLOT_PATH`]) is not held: its
//!   changes are written to kv.db as they happen (the handles do that).
//! - The memory keeps itself alive until the store's last flush at close,
//!   so dropping every handle loses nothing.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::lock;
use super::shared::{Found, MAX_SLOT_PATH, Place, Put, Region, State};
use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::raw::Raw;
use crate::storage;
use crate::store::Flush;
use crate::store::{Store, StoreInner};

/// The most keys one counters or rate limit name holds in memory.
pub const MEMORY_BOUND: usize = 100_000;
/// A warning is logged when a name's memory passes this many keys (80%).
const WARN_AT: usize = MEMORY_BOUND / 5 * 4;
/// Making room lets live keys go too when letting go of those as good as
/// new leaves more than this many.
const ROOMY: usize = MEMORY_BOUND / 10 * 9;
/// Keys written per transaction by a flush.
const FLUSH_BATCH: usize = 10_000;
/// How early a periodic flush may run: the store's tick is a second, so a
/// period measured to the tick would otherwise slip to every other tick.
const TICK_SLACK: Duration = Duration::from_millis(250);
/// A full memory logs its refusals at most this often.
const FULL_LOG_EVERY: Duration = Duration::from_secs(60);

/// The state of one key as the table holds it: a value and a 48-bit payload.
pub(crate) trait Held: Copy + Send + 'static {
    /// The state of a key the file does not hold.
    const NEW: Self;
    /// The row that keeps this state, as an integer value and an expiry, or
    /// `None` when the key is as good as new and its row goes.
    fn row(&self, now_ms: i64) -> Option<(i64, Option<i64>)>;
    /// The state as a slot keeps it.
    fn pack(&self) -> (i64, u64);
    /// The state a slot keeps.
    fn unpack(value: i64, payload: u64) -> Self;
}

/// The keys of one counters or rate limit name, in the shared table.
pub(crate) struct Memory<V> {
    me: Weak<Memory<V>>,
    /// Holds this memory until the store's last flush.
    keepalive: Mutex<Option<Arc<Memory<V>>>>,
    name: String,
    what: &'static str,
    bucket: i64,
    region: Arc<Region>,
    period: Duration,
    flushing: Mutex<()>,
    room: Mutex<()>,
    warned: AtomicBool,
    last_full_log: Mutex<Option<Instant>>,
    _held: PhantomData<fn() -> V>,
}

impl<V: Held> Memory<V> {
    /// A memory for the name `name` (id `bucket`) over its region, written
    /// every `period`, registered with the store's flushes.
    pub(crate) fn new(
        store: &Store,
        name: &str,
        what: &'static str,
        bucket: i64,
        period: Duration,
        region: Arc<Region>,
    ) -> Arc<Memory<V>> {
        let m = Arc::new_cyclic(|me| Memory {
            me: me.clone(),
            keepalive: Mutex::new(None),
            name: name.to_owned(),
            what,
            bucket,
            region,
            period,
            flushing: Mutex::new(()),
            room: Mutex::new(()),
            warned: AtomicBool::new(false),
            last_full_log: Mutex::new(None),
            _held: PhantomData,
        });
        *lock(&m.keepalive) = Some(m.clone());
        let weak: Weak<dyn Flush> = Arc::downgrade(&m) as Weak<dyn Flush>;
        store.register_flush(weak);
        m
    }

    /// Whether the table holds keys of this path's length; a longer one is
    /// written to kv.db at each change.
    #[inline]
    pub(crate) fn holds(path: &[u8]) -> bool {
        path.len() <= MAX_SLOT_PATH
    }

    /// The state the table holds for `path`, if it holds the key.
    pub(crate) fn get(&self, path: &[u8]) -> Option<V> {
        let found = self.region.find(self.region.place(path), path)?;
        Some(unpack(found.state))
    }

    /// Whether a key the table does not hold must be read from the file at `now_ms`.
    pub(crate) fn must_read(&self, now_ms: i64) -> bool {
        now_ms < self.region.header().read_until.load(Ordering::Acquire)
    }

    /// Changes the state of `path` with `f`, which returns its answer and
    /// whether it changed the state; `f` runs again if another thread or
    /// process changed the key first. A key the table does not hold is read
    /// with `load` first (when the file may hold it), making room if the
    /// table is full.
    pub(crate) fn change<R>(
        &self,
        store: &StoreInner,
        path: &[u8],
        now_ms: i64,
        load: impl Fn() -> Result<V>,
        mut f: impl FnMut(&mut V) -> Result<(R, bool)>,
    ) -> Result<R> {
        debug_assert!(Self::holds(path));
        let place = self.region.place(path);
        let mut full_once = false;
        loop {
            if let Some(found) = self.region.find(place, path)
                && let Some(r) = self.apply(found, &mut f)?
            {
                return Ok(r);
            }
            let put = self.put(store, place, path, now_ms, &load)?;
            match put {
                Put::New(found) | Put::There(found) => {
                    if let Some(r) = self.apply(found, &mut f)? {
                        return Ok(r);
                    }
                }
                Put::Cleared => {}
                Put::Full if !full_once => {
                    full_once = true;
                    self.make_room(store, true)?;
                }
                Put::Full => return Err(self.full(store, "both buckets of this key are full of live keys")),
            }
        }
    }

    /// Changes the slot a look found, by compare-and-swap; `None` when the
    /// slot no longer holds the key.
    fn apply<R>(&self, found: Found, f: &mut impl FnMut(&mut V) -> Result<(R, bool)>) -> Result<Option<R>> {
        let mut s = found.state;
        loop {
            if !s.live() || s.generation() != found.state.generation() {
                return Ok(None);
            }
            let mut v: V = unpack(s);
            let (r, changed) = f(&mut v)?;
            if !changed {
                return Ok(Some(r));
            }
            let (value, payload) = v.pack();
            match self.region.swap(found.slot, s, s.with(value, payload)) {
                Ok(()) => return Ok(Some(r)),
                Err(now) => s = now,
            }
        }
    }

    /// Puts a key in: reads it from the file when it may be there, within
    /// the bound, after any running clear.
    fn put(
        &self,
        store: &StoreInner,
        place: Place,
        path: &[u8],
        now_ms: i64,
        load: &impl Fn() -> Result<V>,
    ) -> Result<Put> {
        let epoch = self.region.clears_settled()?;
        self.reserve(store)?;
        let loaded = if self.must_read(now_ms) { load() } else { Ok(V::NEW) };
        let put = loaded.and_then(|v| {
            let (value, payload) = v.pack();
            self.region.put(place, path, value, payload, epoch)
        });
        if !matches!(put, Ok(Put::New(_))) {
            self.region.header().held.fetch_sub(1, Ordering::AcqRel);
        }
        put
    }

    /// Takes a place for a new key, making room when memory is full.
    fn reserve(&self, store: &StoreInner) -> Result<()> {
        let held = &self.region.header().held;
        loop {
            let n = held.fetch_add(1, Ordering::AcqRel) as usize + 1;
            if n <= MEMORY_BOUND {
                if n >= WARN_AT && !self.warned.swap(true, Ordering::AcqRel) {
                    log::warn!(
                        store = store.log_id;
                        "tinystore: the memory of {} {:?} holds {n} keys, past 80% of its bound of {MEMORY_BOUND} \
                         (kind: limit-store-filling); past the bound a new key waits for a flush",
                        self.what,
                        self.name
                    );
                }
                return Ok(());
            }
            held.fetch_sub(1, Ordering::AcqRel);
            self.make_room(store, false)?;
        }
    }

    /// Flushes so that written keys can go; refuses when that frees nothing.
    /// `any` makes room though the bound is not reached.
    fn make_room(&self, store: &StoreInner, any: bool) -> Result<()> {
        let _room = lock(&self.room);
        let held = || self.region.header().held.load(Ordering::Acquire) as usize;
        if !any && held() < MEMORY_BOUND {
            return Ok(()); // another thread made room
        }
        let flushed = self.flush_now(store, true, true);
        if any || held() < MEMORY_BOUND {
            return flushed.map(|_| ());
        }
        let why = match flushed {
            Err(e) => format!("writing them to make room failed ({})", e.message()),
            Ok(_) => "every one changed again before it could be written".to_owned(),
        };
        Err(self.full(store, &why))
    }

    fn full(&self, store: &StoreInner, why: &str) -> Error {
        let mut last = lock(&self.last_full_log);
        if last.is_none_or(|t| t.elapsed() >= FULL_LOG_EVERY) {
            *last = Some(Instant::now());
            log::error!(
                store = store.log_id;
                "tinystore: the memory of {} {:?} is full ({MEMORY_BOUND} keys) and {why}; \
                 new keys are refused (kind: limit-store-full)",
                self.what,
                self.name
            );
        }
        Error::limit(format!(
            "the memory of {} {:?} holds {MEMORY_BOUND} keys, its bound, and {why}; \
             a new key is refused until a flush makes room, while the keys it holds keep counting",
            self.what, self.name
        ))
    }

    /// Writes every key whose state kv.db lacks, 10,000 a transaction, then
    /// lets clean keys go (with `evict_all`, every one). One process
    /// flushes a name at a time: unless `wait`, a flush another holds is
    /// left to it. Returns how many keys were written.
    pub(crate) fn flush_now(&self, store: &StoreInner, evict_all: bool, wait: bool) -> Result<usize> {
        let _flushing = lock(&self.flushing);
        let Some(_flush) = self.region.hold_flush(wait)? else {
            return Ok(0);
        };
        let region = &self.region;
        let dirty: Vec<(usize, State, Vec<u8>)> = region
            .live()
            .filter(|f| region.written(f.slot) != f.state)
            .filter_map(|f| region.path(f.slot, f.state).map(|p| (f.slot, f.state, p)))
            .collect();
        let mut written = 0;
        let mut result = Ok(());
        for chunk in dirty.chunks(FLUSH_BATCH) {
            let Some(me) = self.me.upgrade() else { break };
            let chunk = chunk.to_vec();
            let weight = chunk.iter().map(|(_, _, p)| p.len() + 16).sum();
            match store
                .writer
                .call(weight, move |w: &mut WriteCtx<'_>| me.write_chunk(w, chunk))
            {
                Ok(done) => {
                    written += done.len();
                    for (i, s) in done {
                        region.mark_written(i, s);
                    }
                }
                Err(e) => {
                    result = Err(e.in_bucket(&self.name));
                    break;
                }
            }
        }
        self.evict(store.clock.now_millis(), evict_all);
        region
            .header()
            .last_flush_ms
            .store(super::real_millis(), Ordering::Release);
        result.map(|()| written)
    }

    /// Writes the keys of `chunk` still dirty, as the table holds them now.
    fn write_chunk(&self, w: &mut WriteCtx<'_>, chunk: Vec<(usize, State, Vec<u8>)>) -> Result<Vec<(usize, State)>> {
        let mut done = Vec::with_capacity(chunk.len());
        for (i, seen, path) in chunk {
            let s = self.region.state(i);
            if !s.live() || s.generation() != seen.generation() {
                continue; // cleared, or gone clean
            }
            let v: V = unpack(s);
            match v.row(w.now) {
                Some((value, expires)) => {
                    let version = w.next_version();
                    storage::put(w.conn, self.bucket, &path, version, expires, &Raw::Int(value), None)?;
                }
                None => storage::delete(w.conn, self.bucket, &path, None)?,
            }
            done.push((i, s));
        }
        Ok(done)
    }

    /// Lets clean keys go when `all` (a new key needs room): those as good
    /// as new, then every clean one if the name is still nearly full.
    fn evict(&self, now_ms: i64, all: bool) {
        if !all {
            return;
        }
        let header = self.region.header();
        let mut live_until = i64::MIN;
        for live_too in [false, true] {
            if live_too && (header.held.load(Ordering::Acquire) as usize) < ROOMY {
                break;
            }
            let mut removed = 0;
            for f in self.region.live() {
                let row = unpack::<V>(f.state).row(now_ms);
                if (row.is_none() || live_too) && self.region.evict(f.slot, f.state, false) {
                    removed += 1;
                    if let Some((_, expires)) = row {
                        // Its row lives on in the file: read it when it comes back.
                        live_until = live_until.max(expires.unwrap_or(i64::MAX));
                    }
                }
            }
            header.held.fetch_sub(removed, Ordering::AcqRel);
        }
        header.read_until.fetch_max(live_until, Ordering::AcqRel);
        if (header.held.load(Ordering::Acquire) as usize) < WARN_AT {
            self.warned.store(false, Ordering::Release);
        }
    }

    /// Drops the keys of paths in `[lo, hi)`: a clear of their branch, run
    /// inside the clear's write. No key goes in until [`Memory::cleared`],
    /// which the caller runs after the commit.
    pub(crate) fn drop_range(&self, lo: &[u8], hi: &[u8]) -> Result<()> {
        let header = self.region.header();
        self.region.begin_clear()?;
        let mut removed = 0;
        for f in self.region.live() {
            let Some(path) = self.region.path(f.slot, f.state) else {
                continue;
            };
            if path.as_slice() < lo || path.as_slice() >= hi {
                continue;
            }
            let mut s = f.state;
            while s.live() && s.generation() == f.state.generation() {
                match self.region.swap(f.slot, s, s.dead()) {
                    Ok(()) => {
                        removed += 1;
                        break;
                    }
                    Err(now) => s = now,
                }
            }
        }
        header.held.fetch_sub(removed, Ordering::AcqRel);
        Ok(())
    }

    /// Marks a clear whose [`Memory::drop_range`] ran committed (or failed):
    /// new keys may go in again, and read the file as the clear left it.
    pub(crate) fn cleared(&self) {
        self.region.end_clear();
    }

    /// How many keys memory holds.
    #[allow(dead_code)] // for debugging and tests
    pub(crate) fn len(&self) -> usize {
        self.region.live().count()
    }
}

fn unpack<V: Held>(s: State) -> V {
    V::unpack(s.value(), s.payload())
}

impl<V: Held> Flush for Memory<V> {
    fn flush(&self, store: &StoreInner, force: bool) -> Result<usize> {
        let last = self.region.header().last_flush_ms.load(Ordering::Acquire);
        let since = Duration::from_millis(super::real_millis().saturating_sub(last).max(0) as u64);
        if !force && since + TICK_SLACK < self.period {
            return Ok(0);
        }
        let out = self.flush_now(store, false, force);
        if store.check_open().is_err() {
            // The store's last flush: nothing will change this memory again.
            lock(&self.keepalive).take();
        }
        out
    }
}
