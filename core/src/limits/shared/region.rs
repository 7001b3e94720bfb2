//! One name's region of the limits table: find a key's slot without a
//! lock, change it with one compare-and-swap, put new keys in under the
//! region's key lock, and let the flush see what kv.db lacks.
//!
//! Invariants:
//! - A slot is live for one key at a time, and a key is live in at most one
//!   slot: new keys go in only under the key lock, after a look that did not
//!   find the key live in either of its buckets.
//! - A live slot's tag and path do not change while it is live. A slot
//!   changes hands only while it is not live, and then takes a new
//!   generation, so a compare-and-swap read from its last key fails.
//! - `written` is the state kv.db holds for the slot's key: a slot whose
//!   state equals it is clean and may leave (its state dies), and only a
//!   clean slot leaves, except under a clear.

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use siphasher::sip128::SipHasher13;

use super::super::lock;
use super::file_lock::{self, ByteLock, HeldByte};
use super::layout::{
    BUCKET_SLOTS, BUCKETS, Entry, MAX_SLOT_PATH, REGION_HEADER, RegionHeader, SLOTS, SLOTS_AT, Slot, State,
};
use super::{Map, RegionKind, Table, io_error};
use crate::error::{Error, Result};

/// A key's slot as a look found it: its index and its state then.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub slot: usize,
    pub state: State,
}

/// Where a key may live: its tag and its two buckets.
#[derive(Clone, Copy)]
pub(crate) struct Place {
    tag: u64,
    buckets: [usize; 2],
}

/// What putting a key in did.
pub(crate) enum Put {
    /// The key went into this slot.
    New(Found),
    /// The key was there already (another thread or process put it in).
    There(Found),
    /// A clear ran since the caller read the key's row: read it again.
    Cleared,
    /// Both of the key's buckets are full of live keys.
    Full,
}

/// A name's region, mapped.
pub(crate) struct Region {
    table: Arc<Table>,
    map: Map,
    keys: ByteLock,
    flush: ByteLock,
    hasher: SipHasher13,
    period_ms: u64,
    kind: RegionKind,
    /// Clears of this process whose key lock is held, until their commit.
    clearing: Mutex<usize>,
}

/// Lays out a new region: its header; the tags and slots are the file's
/// zeros, which read as empty.
pub(super) fn lay_out(map: &Map, bucket: i64, kind: RegionKind, read_until: i64) {
    // SAFETY: a fresh mapping of REGION_SIZE bytes, no other process maps it
    // yet (it is not in the directory), and RegionHeader fits its page.
    let h = unsafe { &*(map.ptr as *const RegionHeader) };
    h.bucket.store(bucket, Ordering::Release);
    h.kind.store(kind as u32, Ordering::Release);
    h.read_until.store(read_until, Ordering::Release);
}

impl Region {
    pub(super) fn new(table: Arc<Table>, index: usize, map: Map, entry: &Entry) -> Region {
        let secret = table.header().secret;
        let kind = match entry.kind.load(Ordering::Acquire) {
            1 => RegionKind::RateLimit,
            _ => RegionKind::Counters,
        };
        Region {
            period_ms: entry.period_ms.load(Ordering::Acquire),
            kind,
            table,
            map,
            keys: ByteLock::new(file_lock::keys_byte(index)),
            flush: ByteLock::new(file_lock::flush_byte(index)),
            hasher: SipHasher13::new_with_key(&secret),
            clearing: Mutex::new(0),
        }
    }

    fn file(&self) -> &File {
        &self.table.file
    }

    /// The `flush_every` of the counters that laid the region out, in ms.
    pub(crate) fn period_ms(&self) -> u64 {
        self.period_ms
    }

    pub(crate) fn header(&self) -> &RegionHeader {
        // SAFETY: the region's first page, laid out by `lay_out`; every field
        // that changes is an atomic.
        unsafe { &*(self.map.ptr as *const RegionHeader) }
    }

    fn tag(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < SLOTS);
        // SAFETY: the tags are SLOTS u64s after the region's header page,
        // inside the mapping, 8-aligned.
        unsafe { &*(self.map.ptr.add(REGION_HEADER as usize + i * 8) as *const AtomicU64) }
    }

    fn slot(&self, i: usize) -> &Slot {
        debug_assert!(i < SLOTS);
        // SAFETY: the slots are SLOTS Slots after the tags, inside the
        // mapping, 16-aligned (SLOTS_AT is a multiple of 16).
        unsafe { &*(self.map.ptr.add(SLOTS_AT as usize + i * std::mem::size_of::<Slot>()) as *const Slot) }
    }

    /// Where `path` may live. The hash is keyed with the table's secret, so
    /// keys cannot be picked to crowd one bucket.
    #[inline]
    pub(crate) fn place(&self, path: &[u8]) -> Place {
        let h = self.hasher.hash(path);
        let first = (h.h2 as usize) % BUCKETS;
        let mut second = ((h.h2 >> 32) as usize) % BUCKETS;
        if second == first {
            second = first ^ 1;
        }
        Place {
            tag: h.h1 | 1,
            buckets: [first, second],
        }
    }

    fn same_path(&self, slot: &Slot, path: &[u8]) -> bool {
        if slot.len.load(Ordering::Acquire) != path.len() as u64 {
            return false;
        }
        let mut word = [0u8; 8];
        for (i, chunk) in path.chunks(8).enumerate() {
            word.fill(0);
            word[..chunk.len()].copy_from_slice(chunk);
            if slot.path[i].load(Ordering::Relaxed) != u64::from_le_bytes(word) {
                return false;
            }
        }
        true
    }

    /// The slot where `path` is live, without a lock. A slot that changes
    /// hands meanwhile may be missed or seen stale; a compare-and-swap on
    /// the state found then fails, and the caller looks again.
    #[inline]
    pub(crate) fn find(&self, place: Place, path: &[u8]) -> Option<Found> {
        for b in place.buckets {
            for i in b * BUCKET_SLOTS..(b + 1) * BUCKET_SLOTS {
                if self.tag(i).load(Ordering::Acquire) != place.tag {
                    continue;
                }
                let slot = self.slot(i);
                let state = State(slot.state.load(Ordering::Acquire));
                if state.live() && self.same_path(slot, path) {
                    return Some(Found { slot: i, state });
                }
            }
        }
        None
    }

    /// The state of slot `i` now.
    #[inline]
    pub(crate) fn state(&self, i: usize) -> State {
        State(self.slot(i).state.load(Ordering::Acquire))
    }

    /// Replaces state `old` of slot `i` with `new`, if it is still `old`.
    #[inline]
    pub(crate) fn swap(&self, i: usize, old: State, new: State) -> std::result::Result<(), State> {
        self.slot(i)
            .state
            .compare_exchange(old.0, new.0, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(State)
    }

    /// Puts `path` in with `value` and `payload`, which kv.db holds for it
    /// (so the slot starts clean), unless a clear moved `clears` past
    /// `epoch` since the caller read them. Under the key lock.
    pub(crate) fn put(&self, place: Place, path: &[u8], value: i64, payload: u64, epoch: u64) -> Result<Put> {
        debug_assert!(path.len() <= MAX_SLOT_PATH);
        let _keys = self.hold_keys()?;
        if self.header().clears.load(Ordering::Acquire) != epoch {
            return Ok(Put::Cleared);
        }
        if let Some(found) = self.find(place, path) {
            return Ok(Put::There(found));
        }
        let free = |b: usize| {
            (b * BUCKET_SLOTS..(b + 1) * BUCKET_SLOTS)
                .filter(|&i| !self.state(i).live())
                .collect::<smallvec::SmallVec<[usize; BUCKET_SLOTS]>>()
        };
        // The first bucket while it has room, so that most looks read one
        // bucket's tags; the second takes a key only when the first is full.
        let (a, b) = (free(place.buckets[0]), free(place.buckets[1]));
        let Some(&i) = a.first().or(b.first()) else {
            return Ok(Put::Full);
        };
        let slot = self.slot(i);
        let state = State::new(self.state(i).next_generation(), value, payload);
        // The path before the tag and the tag before the state: a look that
        // sees the live state sees the path it belongs to.
        let mut words = [0u64; MAX_SLOT_PATH / 8];
        for (w, chunk) in words.iter_mut().zip(path.chunks(8)) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            *w = u64::from_le_bytes(word);
        }
        for (dst, w) in slot.path.iter().zip(words) {
            dst.store(w, Ordering::Relaxed);
        }
        slot.len.store(path.len() as u64, Ordering::Release);
        self.tag(i).store(place.tag, Ordering::Release);
        slot.written.store(state.0, Ordering::Release);
        slot.state.store(state.0, Ordering::Release);
        Ok(Put::New(Found { slot: i, state }))
    }

    /// Holds the key lock: no key goes in while it is held.
    pub(crate) fn hold_keys(&self) -> Result<HeldByte<'_>> {
        self.keys
            .hold(self.file())
            .map_err(|e| io_error(&self.table.path, "locking", e))
    }

    /// Begins a clear: no key goes in until [`Region::end_clear`], which
    /// may run on another thread, after the clear's commit. Clears of one
    /// group share the hold.
    pub(crate) fn begin_clear(&self) -> Result<()> {
        let mut clearing = lock(&self.clearing);
        if *clearing == 0 {
            self.keys
                .acquire(self.file())
                .map_err(|e| io_error(&self.table.path, "locking", e))?;
            self.header().clears.fetch_add(1, Ordering::AcqRel);
        }
        *clearing += 1;
        Ok(())
    }

    /// Ends a clear [`Region::begin_clear`] began.
    pub(crate) fn end_clear(&self) {
        let mut clearing = lock(&self.clearing);
        debug_assert!(*clearing > 0);
        *clearing = clearing.saturating_sub(1);
        if *clearing == 0 {
            self.header().clears.fetch_add(1, Ordering::AcqRel);
            self.keys.release(self.file());
        }
    }

    /// The count of clears once none runs: odd while one does. A count left
    /// odd by a process that died inside its clear is settled here, once
    /// the kernel has let go of its key lock.
    pub(crate) fn clears_settled(&self) -> Result<u64> {
        let clears = &self.header().clears;
        let epoch = clears.load(Ordering::Acquire);
        if epoch.is_multiple_of(2) {
            return Ok(epoch);
        }
        let _keys = self.hold_keys()?;
        let epoch = clears.load(Ordering::Acquire);
        if !epoch.is_multiple_of(2) {
            let _ = clears.compare_exchange(epoch, epoch + 1, Ordering::AcqRel, Ordering::Acquire);
        }
        Ok(clears.load(Ordering::Acquire))
    }

    /// Holds the flush lock: one process flushes a region at a time. With
    /// `wait` false, `None` when another holds it.
    pub(crate) fn hold_flush(&self, wait: bool) -> Result<Option<HeldByte<'_>>> {
        let held = if wait {
            self.flush.hold(self.file()).map(Some)
        } else {
            self.flush.try_hold(self.file())
        };
        held.map_err(|e| io_error(&self.table.path, "locking", e))
    }

    /// Every live slot: its index and state.
    pub(crate) fn live(&self) -> impl Iterator<Item = Found> + '_ {
        (0..SLOTS).filter_map(move |i| {
            if self.tag(i).load(Ordering::Relaxed) == 0 {
                return None; // never held a key
            }
            let state = self.state(i);
            state.live().then_some(Found { slot: i, state })
        })
    }

    /// The path of slot `i`, if it still holds state `state`'s key.
    pub(crate) fn path(&self, i: usize, state: State) -> Option<Vec<u8>> {
        let slot = self.slot(i);
        let len = (slot.len.load(Ordering::Acquire) as usize).min(MAX_SLOT_PATH);
        let mut path = Vec::with_capacity(len);
        for w in &slot.path[..len.div_ceil(8)] {
            path.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        path.truncate(len);
        let now = self.state(i);
        (now.live() && now.generation() == state.generation()).then_some(path)
    }

    /// The state kv.db holds for slot `i`'s key.
    pub(crate) fn written(&self, i: usize) -> State {
        State(self.slot(i).written.load(Ordering::Acquire))
    }

    /// Records that kv.db now holds `state` for slot `i`'s key, unless the
    /// slot changed hands since (its new key set its own).
    pub(crate) fn mark_written(&self, i: usize, state: State) {
        let now = self.state(i);
        if now.live() && now.generation() == state.generation() {
            self.slot(i).written.store(state.0, Ordering::Release);
        }
    }

    /// Lets slot `i`'s key go if its state is still `state`, and, unless
    /// `any`, kv.db holds it. Says whether it went.
    pub(crate) fn evict(&self, i: usize, state: State, any: bool) -> bool {
        if !any && self.written(i) != state {
            return false;
        }
        self.swap(i, state, state.dead()).is_ok()
    }

    /// Refuses a region of another kind than `kind`, which the directory
    /// would otherwise share between names of two kinds.
    pub(crate) fn check_kind(&self, kind: RegionKind, name: &str) -> Result<()> {
        if self.kind == kind {
            return Ok(());
        }
        Err(Error::corrupt(format!(
            "{} gives {name:?} the region of another kind: the table does not belong to this kv.db",
            self.table.path.display()
        )))
    }
}
