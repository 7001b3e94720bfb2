//! The clock under jumps (KV-6, KV-10, KV-17): a jump forwards
//! expires exactly the keys that are due and nothing else; the clock never
//! moves back, so no expired key comes back and no version repeats; and
//! versions come from the file, not the clock, so they never repeat across
//! reopens either.
//!
//! The system clock stepping back under a running process is tested in
//! `core/process-tests/tests/clock_steps_back.rs`.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use tinystore::{Bucket, ErrorKind, ListOptions, Version};

const MS: u64 = 1;
const SEC: u64 = 1000;
const HOUR: u64 = 3_600_000;
const DAY: u64 = 24 * HOUR;
const YEAR: u64 = 365 * DAY;

/// Keys and their ttl in ms (`None`: never expires), on both sides of each jump.
fn spans() -> Vec<(String, Option<u64>)> {
    let mut v: Vec<(String, Option<u64>)> = [
        MS,
        999 * MS,
        SEC,
        SEC + 1,
        59 * SEC,
        HOUR - 1,
        HOUR,
        HOUR + 1,
        DAY,
        10 * YEAR,
        10 * YEAR + 1,
        100 * YEAR,
    ]
    .into_iter()
    .map(|ms| (format!("ttl-{ms}"), Some(ms)))
    .collect();
    v.push(("never".into(), None));
    v
}

/// Checks every key against the time: live exactly when its expiry is
/// after now, with the version it was written at; `list` agrees.
fn check_at(b: &Bucket<i64>, written: &BTreeMap<String, (Version, Option<i64>)>, now: i64, what: &str) {
    let mut live = Vec::new();
    for (k, (v, exp)) in written {
        let due = exp.is_some_and(|e| e <= now);
        let got = b.entry(k).unwrap();
        assert_eq!(got.is_none(), due, "{what}: {k} (expires {exp:?}, now {now})");
        assert_eq!(b.has(k).unwrap(), !due, "{what}: has {k}");
        if let Some(e) = got {
            assert_eq!(e.version, *v, "{what}: {k} kept its version");
            live.push(k.clone());
        }
    }
    let listed: Vec<String> = b
        .list(&ListOptions {
            after: None,
            limit: Some(1000),
        })
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.key.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, live, "{what}: list");
}

#[test]
fn kv17_a_clock_jump_forwards_expires_what_is_due_and_nothing_else() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let start = store.clock().now_millis();
    let mut written = BTreeMap::new();
    for (i, (k, ttl)) in spans().into_iter().enumerate() {
        let v = match ttl {
            Some(ms) => b.key(&k).ttl(Duration::from_millis(ms)).set(&(i as i64)),
            None => b.set(&k, &(i as i64)),
        }
        .unwrap();
        written.insert(k, (v, ttl.map(|ms| start + ms as i64)));
    }
    check_at(&b, &written, start, "before any jump");
    let mut expired_so_far = 0;
    for jump in [MS, 998 * MS, MS, 59 * SEC, HOUR, DAY, 10 * YEAR, 100 * YEAR] {
        store.clock().advance(Duration::from_millis(jump)).unwrap();
        let now = store.clock().now_millis();
        let what = format!("after a jump of {jump} ms");
        check_at(&b, &written, now, &what);
        // Maintenance deletes exactly the rows that became due.
        let due = written.values().filter(|(_, e)| e.is_some_and(|e| e <= now)).count();
        assert_eq!(store.maintain().unwrap().expired, due - expired_so_far, "{what}");
        expired_so_far = due;
        check_at(&b, &written, now, &format!("{what}, swept"));
    }
}

#[test]
fn kv17_the_largest_jump_saturates_and_never_moves_the_clock_back() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let v1 = b.key("soon").ttl(Duration::from_secs(1)).set(&1).unwrap();
    b.set("never", &2).unwrap();
    let before = store.clock().now_millis();
    store.clock().advance(Duration::MAX).unwrap();
    let after = store.clock().now_millis();
    assert!(after >= before, "the clock moved back: {before} -> {after}");
    store.clock().advance(Duration::from_secs(1)).unwrap();
    assert!(store.clock().now_millis() >= after, "the clock moved back at its end");
    assert_eq!(b.get("soon").unwrap(), None, "an expired key came back");
    assert_eq!(b.get("never").unwrap(), Some(2));
    // Writes at the end of time: a ttl saturates instead of wrapping.
    let v2 = b.key("late").ttl(Duration::MAX).set(&3).unwrap();
    assert!(v2.get() > v1.get());
    let e = store.clock().set(SystemTime::UNIX_EPOCH).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(b.get("soon").unwrap(), None);
}

#[test]
fn kv10_versions_never_repeat_across_clock_jumps_and_reopens_to_an_earlier_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut versions = Vec::new();
    for round in 0..4u64 {
        // Each run starts its clock earlier than the last one ended, as a
        // machine whose clock was set back would.
        let at = common::start() - Duration::from_secs(3600 * round);
        let store = tinystore::Store::open_with(dir.path(), tinystore::Options::new().test_clock(at)).unwrap();
        let b = store.bucket::<i64>("b").open().unwrap();
        for i in 0..5 {
            versions.push(b.set(format!("k{i}"), &(i as i64)).unwrap().get());
            versions.push(b.key("t").ttl(Duration::from_secs(1)).set(&0).unwrap().get());
            store.clock().advance(Duration::from_secs(7200)).unwrap();
            assert_eq!(b.get("t").unwrap(), None, "round {round}: an expired key came back");
            assert!(b.take("k0").unwrap().is_some() || i > 0);
        }
        store.close().unwrap();
    }
    let mut sorted = versions.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, versions, "versions rise and never repeat: {versions:?}");
}
