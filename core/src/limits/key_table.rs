//! The maps of a limit memory's shards, keyed by path, where one hash of a
//! path picks both its shard and its place in the shard's table.
//!
//! A hot-key `allow` from Node costs a few hundred nanoseconds, and hashing
//! its path twice (once for the shard, once inside a standard map) was a
//! tenth of the engine's part of it. So the path is hashed once, with
//! foldhash, and the shard comes from bits of that hash the table never
//! uses itself.
//!
//! The hash takes a random seed per memory, which a caller cannot see: keys
//! come from users (IP addresses, account ids), and a name holds at most
//! [`super::memory::MEMORY_BOUND`] keys, which bounds what colliding keys
//! could cost. SipHash, the standard map's, costs several times as much.

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// The hash of a path, from which [`KeyHash::shard`] and the table's place come.
#[derive(Clone, Copy)]
pub(crate) struct PathHash(u64);

/// Hashes paths for one memory: the same seed for every shard.
pub(crate) struct KeyHash(foldhash::fast::RandomState);

impl KeyHash {
    /// A hasher with a fresh random seed.
    pub(crate) fn new() -> Self {
        Self(foldhash::fast::RandomState::default())
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
