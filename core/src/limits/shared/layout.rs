//! The bytes of `kv.db-limits`, the table every process on a store maps to
//! share rate limits and `flush_every` counters (docs/format.md, "The limits
//! table"). Every offset here is part of the layout version: a change to
//! one is a new [`LAYOUT_VERSION`].
//!
//! ```text
//! 0       header (HEADER_SIZE): magic, version, secret, directory of names
//! 64 KiB  region of the first name opened, REGION_SIZE bytes
//! ...     one region per name, in the order names were first opened
//! ```
//!
//! A region is a header page, then `BUCKETS` buckets of `BUCKET_SLOTS` tags
//! (8 bytes each, all tags first so that a flush reads them in one sweep),
//! then the slots in the same order. A key lives in one of two buckets its
//! hash picks; its tag is the rest of that hash.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64};

use portable_atomic::AtomicU128;

/// The file's first eight bytes.
pub(crate) const MAGIC: [u8; 8] = *b"TSKVLIM\0";
/// The layout this build reads and writes.
pub(crate) const LAYOUT_VERSION: u32 = 1;
/// The header, directory included: a multiple of every page size in use.
pub(crate) const HEADER_SIZE: u64 = 64 * 1024;
/// Names a table can hold.
pub(crate) const MAX_NAMES: usize = 2040;
/// Buckets of a region.
pub(crate) const BUCKETS: usize = 16_384;
/// Slots of a bucket.
pub(crate) const BUCKET_SLOTS: usize = 16;
/// Every slot of a region.
pub(crate) const SLOTS: usize = BUCKETS * BUCKET_SLOTS;
/// The longest path a slot holds; a longer one is kept in kv.db on every
/// change instead (`Memory` says how).
pub(crate) const MAX_SLOT_PATH: usize = 88;
/// A region's header page.
pub(crate) const REGION_HEADER: u64 = 64 * 1024;
/// Where a region's slots start, after its header and tags.
pub(crate) const SLOTS_AT: u64 = REGION_HEADER + (SLOTS * 8) as u64;
/// A region, from its header to its last slot.
pub(crate) const REGION_SIZE: u64 = SLOTS_AT + (SLOTS * std::mem::size_of::<Slot>()) as u64;

const _: () = assert!(std::mem::size_of::<Header>() as u64 <= HEADER_SIZE);
const _: () = assert!(std::mem::size_of::<RegionHeader>() as u64 <= REGION_HEADER);
const _: () = assert!(std::mem::size_of::<Slot>() == 128);
const _: () = assert!(REGION_SIZE.is_multiple_of(64 * 1024));

/// What a region holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum RegionKind {
    RateLimit = 1,
    Counters = 2,
}

/// The file's header.
#[repr(C)]
pub(crate) struct Header {
    pub magic: [u8; 8],
    pub version: AtomicU32,
    pub header_size: u32,
    /// The key of every path's hash, drawn when the file is laid out, so
    /// that nobody outside can pick keys that share a bucket.
    pub secret: [u8; 16],
    /// Where the next region goes.
    pub next_offset: AtomicU64,
    /// Names in the directory.
    pub names: AtomicU32,
    pub _pad: [u8; 20],
    pub directory: [Entry; MAX_NAMES],
}

/// A name's place in the directory. Written whole under the directory lock,
/// then published by `ready`.
#[repr(C)]
pub(crate) struct Entry {
    /// 1 once the region is laid out.
    pub ready: AtomicU32,
    pub kind: AtomicU32,
    /// The name's id in kv.db's `buckets` table.
    pub bucket: AtomicI64,
    pub offset: AtomicU64,
    /// Counters: the `flush_every` every handle of the name uses, in ms.
    pub period_ms: AtomicU64,
}

/// The header page of a region.
#[repr(C)]
pub(crate) struct RegionHeader {
    pub bucket: AtomicI64,
    pub kind: AtomicU32,
    pub _pad: u32,
    /// Until this time (ms) kv.db may hold a live row the region lacks, so a
    /// key the region does not hold is read from the file.
    pub read_until: AtomicI64,
    /// Odd while a clear of the name runs; moves twice a clear.
    pub clears: AtomicU64,
    /// Live slots, and slots being filled.
    pub held: AtomicU64,
    /// When a flush last wrote the region (real time, ms).
    pub last_flush_ms: AtomicI64,
}

/// One key: its state, the state kv.db holds for it, and its path.
#[repr(C, align(16))]
pub(crate) struct Slot {
    /// The key's state ([`State`]).
    pub state: AtomicU128,
    /// The state kv.db holds, as of the last flush; `state == written`
    /// means the key is clean.
    pub written: AtomicU128,
    pub len: AtomicU64,
    pub path: [AtomicU64; MAX_SLOT_PATH / 8],
}

/// A slot's state word: the low 64 bits are the value (a due time, a
/// counter), the high 64 bits are flags, a generation and a payload.
///
/// ```text
/// bit 127       live: the slot holds its key
/// bits 112..126 generation: moves each time the slot takes a key, so a
///               compare-and-swap on a slot that changed hands fails
/// bits 64..111  payload (48 bits): counters keep their expiry here
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct State(pub u128);

const LIVE: u128 = 1 << 127;
const GEN_SHIFT: u32 = 112;
const GEN_MASK: u128 = 0x7fff;
const PAYLOAD_MASK: u64 = (1 << 48) - 1;

impl State {
    pub fn live(self) -> bool {
        self.0 & LIVE != 0
    }

    pub fn generation(self) -> u16 {
        ((self.0 >> GEN_SHIFT) & GEN_MASK) as u16
    }

    pub fn value(self) -> i64 {
        self.0 as u64 as i64
    }

    pub fn payload(self) -> u64 {
        ((self.0 >> 64) as u64) & PAYLOAD_MASK
    }

    /// A live state of generation `generation`.
    pub fn new(generation: u16, value: i64, payload: u64) -> State {
        debug_assert!(payload <= PAYLOAD_MASK);
        State(
            LIVE | ((u128::from(generation) & GEN_MASK) << GEN_SHIFT)
                | (u128::from(payload & PAYLOAD_MASK) << 64)
                | u128::from(value as u64),
        )
    }

    /// The same value with another value and payload.
    pub fn with(self, value: i64, payload: u64) -> State {
        State::new(self.generation(), value, payload)
    }

    /// This state, no longer live (its key left the slot).
    pub fn dead(self) -> State {
        State(self.0 & !LIVE)
    }

    /// The generation the slot's next key gets.
    pub fn next_generation(self) -> u16 {
        (self.generation().wrapping_add(1) & GEN_MASK as u16).max(1)
    }
}

/// The largest payload: 48 bits.
pub(crate) const MAX_PAYLOAD: u64 = PAYLOAD_MASK;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_keeps_its_value_payload_and_generation_apart() {
        let s = State::new(0x7fff, -5, MAX_PAYLOAD);
        assert!(s.live());
        assert_eq!((s.value(), s.payload(), s.generation()), (-5, MAX_PAYLOAD, 0x7fff));
        let d = s.dead();
        assert!(!d.live());
        assert_eq!((d.value(), d.payload(), d.generation()), (-5, MAX_PAYLOAD, 0x7fff));
        assert_eq!(d.next_generation(), 1, "generation 0 is the empty slot's");
        assert_eq!(State::new(3, i64::MIN, 0).with(i64::MAX, 7).value(), i64::MAX);
    }
}
