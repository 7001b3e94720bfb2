//! The limit store's sweep: what it answers and the count it
//! leaves, with two handles on one kv.db, one sweeping while the other
//! writes; the count kept exact when others delete its expired rows (the
//! store's maintenance in a process that never opened the limit store, a
//! full limit store's sweep of every name); and, ignored, how long a sweep
//! holds the writer over 1,000,000 entries (`cargo test -p tinystore
//! --release --test limit_store_sweep -- --ignored --nocapture`).

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{manual, reopen};
use tinystore::{Change, Commit, LimitEntry, LimitStore, Swept};

fn entry(value: &str, expires_at: i64) -> LimitEntry {
    LimitEntry {
        value: value.to_owned(),
        expires_at,
    }
}

/// Puts `value` under each key, expiring at `expires_at`, in one update.
fn put_all(ls: &LimitStore, keys: &[String], expires_at: i64) {
    ls.update(keys, |_, _| {
        keys.iter().map(|_| Change::Put(entry("1", expires_at))).collect()
    })
    .unwrap();
}

/// The completion form's full answer, waited for.
fn sweep_swept(ls: &LimitStore) -> Swept {
    let (tx, rx) = mpsc::sync_channel(1);
    ls.sweep_then(move |r| tx.send(r).unwrap()).unwrap();
    rx.recv().unwrap().unwrap()
}

fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

#[test]
fn store_a_sweep_answers_the_expired_it_removed_and_the_live_left_while_another_handle_writes() {
    let (dir, a) = manual();
    let b = reopen(dir.path());
    let first = LimitStore::open(&a).unwrap();
    let second = LimitStore::open(&b).unwrap();
    let now = a.clock().now_millis();
    put_all(&first, &keys("short", 7), now + 1000);
    put_all(&second, &keys("long", 5), now + 600_000);
    // A bucket of values with expired rows of its own: the limit store's
    // sweep answers only for its entries.
    let other = a.bucket::<i64>("sessions").ttl(Duration::from_secs(1)).open().unwrap();
    other.set("s", &1).unwrap();
    for s in [&a, &b] {
        s.clock().advance(Duration::from_secs(2)).unwrap();
    }
    assert_eq!(first.entries().unwrap(), 12, "expired entries are held until swept");

    // The second handle writes while the first sweeps: both go through the
    // writer of their own store, so one waits for the other's transaction.
    let (tx, rx) = mpsc::sync_channel(1);
    first.sweep_then(move |r| tx.send(r).unwrap()).unwrap();
    let at = b.clock().now_millis();
    put_all(&second, &keys("new", 3), at + 600_000);
    let swept = rx.recv().unwrap().unwrap();
    assert_eq!(swept.removed, 7);
    // The new keys may land before or after the sweep.
    assert!(swept.entries == 5 || swept.entries == 8, "{swept:?}");
    assert_eq!(first.entries().unwrap(), 8);
    assert_eq!(second.entries().unwrap(), 8);

    let again = sweep_swept(&second);
    assert_eq!(again, Swept { removed: 0, entries: 8 });
    assert_eq!(other.get("s").unwrap(), None, "the value's row expired");
    assert_eq!(
        a.maintain().unwrap().expired,
        1,
        "and only the limit store's rows were swept"
    );
}

/// The bound is judged on the count, so the count must be the entries there
/// are even when a process that never opened the limit store (it may not
/// even know one exists) deletes its expired rows in its maintenance.
#[test]
fn store_another_store_that_never_opened_the_limit_store_sweeps_its_entries_and_the_count_stays_exact() {
    let (dir, a) = manual();
    // Opened before the limit stores exist: it learns of them from the file.
    let b = reopen(dir.path());
    let first = LimitStore::open(&a).unwrap();
    let second = LimitStore::builder(&a).name("second-store").open().unwrap();
    let now = a.clock().now_millis();
    put_all(&first, &keys("short", 6), now + 1000);
    put_all(&first, &keys("long", 4), now + 600_000);
    put_all(&second, &keys("short", 3), now + 1000);
    put_all(&second, &keys("long", 1), now + 600_000);
    // Expired rows of a bucket of values in the same sweep: they move no count.
    let sessions = a.bucket::<i64>("sessions").ttl(Duration::from_secs(1)).open().unwrap();
    sessions.set("s", &1).unwrap();
    for s in [&a, &b] {
        s.clock().advance(Duration::from_secs(2)).unwrap();
    }
    assert_eq!(b.maintain().unwrap().expired, 10);
    assert_eq!((first.entries().unwrap(), second.entries().unwrap()), (4, 1));
    assert_eq!(
        (first.sweep().unwrap(), second.sweep().unwrap()),
        (0, 0),
        "nothing left to remove"
    );
    put_all(&first, &keys("more", 2), a.clock().now_millis() + 600_000);
    assert_eq!(first.entries().unwrap(), 6);
    // Entries that expire later, swept later, by either store.
    put_all(&first, &keys("later", 3), a.clock().now_millis() + 5000);
    for s in [&a, &b] {
        s.clock().advance(Duration::from_secs(10)).unwrap();
    }
    assert_eq!(a.maintain().unwrap().expired, 3);
    assert_eq!(first.entries().unwrap(), 6);
    assert_eq!(b.maintain().unwrap().expired, 0);
    assert_eq!(first.entries().unwrap(), 6);
}

/// A full limit store, refusing a new key, first deletes the expired rows
/// of every name; the other limit stores whose rows went must not be left
/// counting them, or they would refuse keys they have room for.
#[test]
fn store_a_full_store_sweeping_other_names_expired_entries_keeps_their_counts_exact() {
    let (dir, a) = manual();
    let b = reopen(dir.path());
    let full = LimitStore::builder(&a).name("full").max_entries(3).open().unwrap();
    let other = LimitStore::builder(&b).name("other").max_entries(4).open().unwrap();
    let now = a.clock().now_millis();
    put_all(&full, &keys("held", 3), now + 600_000);
    put_all(&other, &keys("short", 2), now + 1000);
    put_all(&other, &keys("long", 2), now + 600_000);
    for s in [&a, &b] {
        s.clock().advance(Duration::from_secs(2)).unwrap();
    }
    let at = a.clock().now_millis();
    let refused = full
        .update(&["new"], |_, _| vec![Change::Put(entry("1", at + 60_000))])
        .unwrap_err();
    assert_eq!(refused.kind(), tinystore::ErrorKind::Limit, "{refused}");
    assert_eq!(full.entries().unwrap(), 3);
    assert_eq!(
        other.entries().unwrap(),
        2,
        "the full store's sweep moved the other's count"
    );
    assert_eq!(other.sweep().unwrap(), 0, "its expired entries were already gone");
    // It has room for two more keys, as its count says.
    put_all(&other, &keys("new", 2), at + 600_000);
    assert_eq!(other.entries().unwrap(), 4);
    assert_eq!(a.maintain().unwrap().expired, 0);
}

/// How long a sweep holds the writer over 1,000,000 entries: the time of
/// the blocking sweep alone on the writer (its transaction and commit), over
/// five rounds with none expired, then five with 2,000 expired each. A few
/// small updates first, so no round pays for the fill's checkpoint.
#[test]
#[ignore = "a measure, not a test: run it alone with --release --ignored"]
fn measure_sweep_writer_hold_over_a_million_entries() {
    let (_dir, store) = manual();
    // A long deadline: the fill keeps many updates queued on a busy machine.
    let ls = LimitStore::builder(&store)
        .in_flight(256)
        .max_entries(2_000_000)
        .deadline(Duration::from_secs(600))
        .open()
        .unwrap();
    let now = store.clock().now_millis();
    let started = Instant::now();
    fill(&ls, 1_000_000, now);
    eprintln!("filled 1,000,000 entries in {:?}", started.elapsed());
    for i in 0..3 {
        put_all(&ls, &[format!("warm{i}")], now + 3_600_000);
    }
    let rounds = |what: &str| {
        let mut took = Vec::new();
        for _ in 0..5 {
            if what != "none" {
                store.clock().advance(Duration::from_secs(1)).unwrap();
            }
            let t = Instant::now();
            let swept = sweep_swept(&ls);
            took.push(t.elapsed());
            assert_eq!(swept.removed, if what == "none" { 0 } else { 2000 });
        }
        took.sort();
        eprintln!("sweep with {what} expired, 5 rounds: {took:?} (median {:?})", took[2]);
    };
    rounds("none");
    rounds("2,000");
}

/// Writes `n` entries, 64 keys an update, many updates in flight: 2,000
/// of them expiring 1 s after `now`, 2,000 after 2 s, and so on to 5 s;
/// the rest an hour after.
fn fill(ls: &LimitStore, n: usize, now: i64) {
    let (tx, rx) = mpsc::channel::<bool>();
    let mut in_flight = 0;
    for chunk in (0..n).collect::<Vec<_>>().chunks(64) {
        if in_flight >= 64 {
            assert!(rx.recv().unwrap(), "an update of the fill failed");
            in_flight -= 1;
        }
        let keys: Vec<String> = chunk.iter().map(|i| format!("key{i}")).collect();
        let changes = chunk
            .iter()
            .map(|&i| {
                let at = if i < 10_000 {
                    now + 1000 * (1 + i as i64 / 2000)
                } else {
                    now + 3_600_000
                };
                Change::Put(entry("1", at))
            })
            .collect();
        let u = ls.begin(&keys).unwrap();
        let tx = tx.clone();
        u.commit_then(changes, move |c| {
            let _ = tx.send(matches!(c, Commit::Done(_)));
        })
        .unwrap();
        in_flight += 1;
    }
    for _ in 0..in_flight {
        assert!(rx.recv().unwrap(), "an update of the fill failed");
    }
}
