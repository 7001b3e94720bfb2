//! The maps of a limit memory's shards, keyed by path, where one hash of a
//! path picks both its shard and its place in the shard's table.
//!
//! A hot-key `allow` from Node costs a few hundred nanoseconds, and hashing
//! its path twice (once for the shard, once inside a standard map) was a
//! tenth of the engine's part of it. So the path is hashed once, with
//! foldhash, and the shard comes from bits of that hash the table never
//! uses itself.
//!
//! Keys come from users (IP addresses, account ids), so the hash must not
//! let anyone pick keys that collide. Each memory's hash takes seeds drawn
//! from the operating system's random source (through the standard
//! library's `RandomState`), which a caller never sees and every process
//! and every limit draws anew, so keys found to collide in one are no use
//! against another.
//! foldhash does not claim more than that: an attacker who could time a
//! great many calls might learn a seed. What that could cost is bounded: a
//! name holds at most [`super::memory::MEMORY_BOUND`] keys, spread over 64
//! shards. SipHash, the standard map's hash, costs several times as much.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::OnceLock;

use foldhash::SharedSeed;
use foldhash::fast::SeedableRandomState;
use hashbrown::HashTable;

/// The hash of a path, from which [`KeyHash::shard`] and the table's place come.
#[derive(Clone, Copy)]
pub(crate) struct PathHash(u64);

/// Hashes paths for one memory: the same seed for every shard.
pub(crate) struct KeyHash(SeedableRandomState);

/// 64 bits from the operating system's random source: the standard
/// library's `RandomState` keys SipHash with them (foldhash's own seeds
/// come from addresses and the time).
fn os_random() -> u64 {
    RandomState::new().hash_one(0x7469_6e79_u64)
}

impl KeyHash {
    /// A hasher with fresh random seeds.
    pub(crate) fn new() -> Self {
        static SHARED: OnceLock<SharedSeed> = OnceLock::new();
        let shared = SHARED.get_or_init(|| SharedSeed::from_u64(os_random()));
        Self(SeedableRandomState::with_seed(os_random(), shared))
    }

    /// The hash of `path`.
    #[inline]
    pub(crate) fn of(&self, path: &[u8]) -> PathHash {
        PathHash(self.0.hash_one(path))
    }

    /// The shard of a path among `shards` (a power of two).
    ///
    /// From bits 32 and up: the table places a key by the low bits (as many
    /// as it has buckets in log 2, far fewer than 32 at [`MEMORY_BOUND`]
    /// keys) and tags it with the top seven, so keys that share a shard still
    /// spread over its table.
    ///
    /// [`MEMORY_BOUND`]: super::memory::MEMORY_BOUND
    #[inline]
    pub(crate) fn shard(h: PathHash, shards: usize) -> usize {
        debug_assert!(shards.is_power_of_two() && shards <= 1 << 16);
        ((h.0 >> 32) as usize) & (shards - 1)
    }
}

/// One shard's keys: each path with its value.
pub(crate) struct KeyTable<V> {
    table: HashTable<(Vec<u8>, V)>,
}

impl<V> KeyTable<V> {
    /// An empty table.
    pub(crate) fn new() -> Self {
        Self {
            table: HashTable::new(),
        }
    }

    /// The value of `path`, whose hash is `h`.
    #[inline]
    pub(crate) fn get(&self, h: PathHash, path: &[u8]) -> Option<&V> {
        self.table.find(h.0, |(p, _)| p == path).map(|(_, v)| v)
    }

    /// The value of `path`, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, h: PathHash, path: &[u8]) -> Option<&mut V> {
        self.table.find_mut(h.0, |(p, _)| p == path).map(|(_, v)| v)
    }

    /// The value of `path`, or `v` put in for it; `true` when `v` went in.
    /// `hash` hashes the paths already held, should the table grow.
    pub(crate) fn get_or_insert(&mut self, hash: &KeyHash, h: PathHash, path: &[u8], v: V) -> (&mut V, bool) {
        match self.table.entry(h.0, |(p, _)| p == path, |(p, _)| hash.of(p).0) {
            hashbrown::hash_table::Entry::Occupied(o) => (&mut o.into_mut().1, false),
            hashbrown::hash_table::Entry::Vacant(e) => (&mut e.insert((path.to_vec(), v)).into_mut().1, true),
        }
    }

    /// Each path with its value, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &V)> {
        self.table.iter().map(|(p, v)| (p, v))
    }

    /// Keeps the keys for which `keep` says so.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&[u8], &mut V) -> bool) {
        self.table.retain(|(p, v)| keep(p, v));
    }

    /// How many keys the table holds.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_put_in_is_found_by_its_hash_and_a_second_put_keeps_the_first() {
        let hash = KeyHash::new();
        let mut t = KeyTable::new();
        for i in 0..10_000u32 {
            let p = format!("limit\0ip:{i}").into_bytes();
            let (v, new) = t.get_or_insert(&hash, hash.of(&p), &p, i);
            assert!(new);
            assert_eq!(*v, i);
        }
        let p = b"limit\0ip:42".to_vec();
        let (v, new) = t.get_or_insert(&hash, hash.of(&p), &p, 7);
        assert!(!new);
        assert_eq!(*v, 42);
        assert_eq!(t.get(hash.of(b"limit\0ip:9999"), b"limit\0ip:9999"), Some(&9999));
        assert_eq!(t.get(hash.of(b"limit\0ip:10000"), b"limit\0ip:10000"), None);
        t.retain(|p, _| p.ends_with(b"7"));
        assert_eq!(t.len(), 1_000);
        assert!(t.iter().all(|(p, _)| p.ends_with(b"7")));
    }

    #[test]
    fn paths_spread_over_every_shard() {
        let hash = KeyHash::new();
        let mut seen = [0u32; 64];
        for i in 0..64_000u32 {
            seen[KeyHash::shard(hash.of(format!("ip:{i}").as_bytes()), 64)] += 1;
        }
        // 1,000 a shard on average: a shard under half or over twice that
        // would mean the bits taken do not depend on the path.
        assert!(seen.iter().all(|&n| (500..2_000).contains(&n)), "{seen:?}");
    }
}
