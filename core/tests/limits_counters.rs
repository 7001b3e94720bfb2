//! KV-14: counters, durable and `flush_every`.

mod limits_common;

use std::sync::mpsc;
use std::time::Duration;

use limits_common::{open, rows};
use tinystore::{Counters, ErrorKind, MEMORY_BOUND, Store};

const SEC: Duration = Duration::from_secs(1);

/// Both kinds of counters on one store: durable, and in memory.
fn both(store: &Store, name: &str, ttl: Option<Duration>) -> [Counters; 2] {
    let open = |suffix: &str, every: Option<Duration>| {
        let mut b = store.counters(&format!("{name}-{suffix}"));
        if let Some(t) = ttl {
            b = b.ttl(t);
        }
        if let Some(d) = every {
            b = b.flush_every(d);
        }
        b.open().unwrap()
    };
    [open("durable", None), open("memory", Some(SEC))]
}

#[test]
fn kv14_add_returns_the_new_value_max_keeps_the_larger() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for c in both(&store, "attempts", None) {
        assert_eq!(c.get("ip").unwrap(), 0, "{c:?}: a missing counter is 0");
        assert_eq!(c.add("ip", 1).unwrap(), 1);
        assert_eq!(c.add("ip", 2).unwrap(), 3);
        assert_eq!(c.add("ip", -5).unwrap(), -2);
        assert_eq!(c.get("ip").unwrap(), -2);
        assert_eq!(c.max("ip", 7).unwrap(), 7);
        assert_eq!(c.max("ip", 3).unwrap(), 7, "{c:?}: max keeps the larger");
        assert_eq!(
            c.max("new", -3).unwrap(),
            0,
            "{c:?}: max of a missing counter and -3 is 0"
        );
        assert!(c.delete("ip").unwrap());
        assert_eq!(c.get("ip").unwrap(), 0);
        assert!(!c.delete("ip").unwrap(), "{c:?}: a second delete finds nothing");
        assert_eq!(c.add(42, 1).unwrap(), 1);
        assert_eq!(c.get("42").unwrap(), 1, "{c:?}: 42 and \"42\" are one key");
        assert_eq!(c.under("a").add("k", 1).unwrap(), 1);
        assert_eq!(c.under("b").get("k").unwrap(), 0, "{c:?}: branches count apart");
        let e = c.add("", 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid);
        assert_eq!(e.bucket(), Some(c.name()));
    }
    store.maintain().unwrap();
    for c in both(&store, "attempts", None) {
        assert_eq!(c.get("42").unwrap(), 1, "{c:?}: after a flush");
        assert_eq!(c.get("ip").unwrap(), 0, "{c:?}: a delete is written too");
    }
}

#[test]
fn kv14_ttl_starts_at_first_add_and_does_not_slide() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let [durable, memory] = both(&store, "guesses", Some(Duration::from_secs(15 * 60)));
    for c in [&durable, &memory] {
        assert_eq!(c.add("ip", 1).unwrap(), 1);
    }
    store.clock().advance(Duration::from_secs(10 * 60)).unwrap();
    for c in [&durable, &memory] {
        assert_eq!(c.add("ip", 1).unwrap(), 2);
    }
    store.maintain().unwrap();
    store
        .clock()
        .advance(Duration::from_secs(5 * 60) - Duration::from_millis(1))
        .unwrap();
    for c in [&durable, &memory] {
        assert_eq!(
            c.get("ip").unwrap(),
            2,
            "{c:?}: alive until 15 minutes after the first add"
        );
    }
    store.clock().advance(Duration::from_millis(1)).unwrap();
    for c in [&durable, &memory] {
        assert_eq!(c.get("ip").unwrap(), 0, "{c:?}: the later add did not slide the window");
        assert_eq!(c.add("ip", 1).unwrap(), 1, "{c:?}: an expired counter starts again");
    }
    store
        .clock()
        .advance(Duration::from_secs(15 * 60) - Duration::from_millis(1))
        .unwrap();
    for c in [&durable, &memory] {
        assert_eq!(
            c.get("ip").unwrap(),
            1,
            "{c:?}: the new window is 15 minutes from its first add"
        );
    }
    store.clock().advance(Duration::from_millis(1)).unwrap();
    for c in [&durable, &memory] {
        assert_eq!(c.get("ip").unwrap(), 0);
    }
}

#[test]
fn kv14_overflow_is_limit_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for c in both(&store, "big", None) {
        c.add("up", i64::MAX - 1).unwrap();
        let e = c.add("up", 2).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{c:?}");
        assert_eq!(e.bucket(), Some(c.name()));
        assert_eq!(e.path(), Some("up"));
        assert_eq!(c.get("up").unwrap(), i64::MAX - 1, "{c:?}: unchanged");
        assert_eq!(c.add("up", 1).unwrap(), i64::MAX);
        c.add("down", i64::MIN).unwrap();
        assert_eq!(c.add("down", -1).unwrap_err().kind(), ErrorKind::Limit);
        assert_eq!(c.get("down").unwrap(), i64::MIN);
    }
    store.maintain().unwrap();
    for c in both(&store, "big", None) {
        assert_eq!(c.get("up").unwrap(), i64::MAX, "{c:?}: the file holds an integer");
    }
}

#[test]
fn kv14_racing_adds_count_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for c in both(&store, "hits", None) {
        std::thread::scope(|s| {
            for _ in 0..32 {
                s.spawn(|| {
                    for _ in 0..20 {
                        c.add("page", 1).unwrap();
                    }
                });
            }
        });
        assert_eq!(c.get("page").unwrap(), 640, "{c:?}");
    }
    store.maintain().unwrap();
    drop(store);
    let store = open(dir.path());
    for c in both(&store, "hits", None) {
        assert_eq!(c.get("page").unwrap(), 640, "{c:?}: after reopen");
    }
}

#[test]
fn kv14_flush_every_is_written_by_maintain_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store
        .counters("views")
        .flush_every(Duration::from_secs(5))
        .open()
        .unwrap();
    assert_eq!(c.add("home", 3).unwrap(), 3);
    assert_eq!(c.get("home").unwrap(), 3, "readable before a flush");
    assert_eq!(rows(dir.path(), "views"), 0, "memory only until a flush");
    let m = store.maintain().unwrap();
    assert_eq!(m.flushed, 1);
    assert_eq!(rows(dir.path(), "views"), 1);
    // A second store on the file shares the memory: it sees a change at
    // once, before any flush writes it.
    let other = open(dir.path());
    let seen = other
        .counters("views")
        .flush_every(Duration::from_secs(5))
        .open()
        .unwrap();
    assert_eq!(seen.get("home").unwrap(), 3);
    assert_eq!(c.add("home", 1).unwrap(), 4);
    assert_eq!(seen.get("home").unwrap(), 4, "seen at once by the other store");
    assert_eq!(limits_common::file_sum(dir.path(), "views"), 3, "not written yet");
    drop(c); // a dropped handle loses nothing: the store writes memory at close
    store.close().unwrap();
    assert_eq!(limits_common::file_sum(dir.path(), "views"), 4, "written on close");
    assert_eq!(seen.get("home").unwrap(), 4);
    assert_eq!(store.counters("views").open().unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn kv14_completion_forms() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let [durable, memory] = both(&store, "done", None);
    let (tx, rx) = mpsc::channel();
    let t = tx.clone();
    durable.add_then("k", 2, move |r| t.send(r).unwrap()).unwrap();
    assert_eq!(rx.recv().unwrap().unwrap(), 2);
    assert_eq!(rows(dir.path(), "done-durable"), 1, "done runs once the add is durable");
    let t = tx.clone();
    memory.add_then("k", 2, move |r| t.send(r).unwrap()).unwrap();
    assert_eq!(
        rx.try_recv().unwrap().unwrap(),
        2,
        "a flush_every counter answers at once"
    );
    let t = tx.clone();
    durable.max_then("k", 9, move |r| t.send(r).unwrap()).unwrap();
    assert_eq!(rx.recv().unwrap().unwrap(), 9);
    let t = tx.clone();
    memory.max_then("k", 9, move |r| t.send(r).unwrap()).unwrap();
    assert_eq!(rx.try_recv().unwrap().unwrap(), 9);
    for c in [&durable, &memory] {
        let (tx, rx) = mpsc::channel();
        c.delete_then("k", move |r| tx.send(r).unwrap()).unwrap();
        assert!(rx.recv().unwrap().unwrap());
        assert_eq!(c.get("k").unwrap(), 0);
    }
    let (tx, rx) = mpsc::channel();
    durable.add_then("big", i64::MAX, |_| {}).unwrap();
    durable.add_then("big", 1, move |r| tx.send(r).unwrap()).unwrap();
    assert_eq!(rx.recv().unwrap().unwrap_err().kind(), ErrorKind::Limit);
}

#[test]
fn kv14_another_flush_every_on_one_name_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let _first = store.counters("c").flush_every(SEC).open().unwrap();
    let again = store.counters("c").flush_every(SEC).open();
    assert!(again.is_ok(), "the same period shares the memory");
    for other in [store.counters("c").flush_every(2 * SEC), store.counters("c")] {
        let e = other.open().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid);
        assert_eq!(e.bucket(), Some("c"));
        assert!(e.message().contains("flush_every"), "{e}");
    }
    let _durable = store.counters("d").open().unwrap();
    assert_eq!(
        store.counters("d").flush_every(SEC).open().unwrap_err().kind(),
        ErrorKind::Invalid
    );
    let e = store
        .counters("e")
        .flush_every(Duration::from_millis(500))
        .open()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
}

#[test]
fn kv02_counters_keep_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.counters("attempts").open().unwrap();
    let e = store.bucket::<i64>("attempts").open().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    store.bucket::<i64>("plain").open().unwrap();
    assert_eq!(store.counters("plain").open().unwrap_err().kind(), ErrorKind::Invalid);
    assert_eq!(store.counters("Bad!").open().unwrap_err().kind(), ErrorKind::Invalid);
}

#[test]
fn kv14_clear_removes_a_branch_from_file_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for c in both(&store, "per-user", None) {
        c.under(1).add("a", 5).unwrap();
        c.under(1).under("x").add("b", 5).unwrap();
        c.under(10).add("a", 7).unwrap();
        store.maintain().unwrap();
        c.under(1).add("a", 1).unwrap(); // in memory only, for flush_every
        c.under(1).clear().unwrap();
        assert_eq!(c.under(1).get("a").unwrap(), 0, "{c:?}");
        assert_eq!(
            c.under(1).under("x").get("b").unwrap(),
            0,
            "{c:?}: branches under it too"
        );
        assert_eq!(c.under(10).get("a").unwrap(), 7, "{c:?}: nothing beside");
        store.maintain().unwrap();
        assert_eq!(c.under(1).get("a").unwrap(), 0, "{c:?}: no flush writes it back");
        assert_eq!(
            c.under(1).add("a", 1).unwrap(),
            1,
            "{c:?}: a key added after the clear is new"
        );
        let (tx, rx) = mpsc::channel();
        c.clear_then(move |r| tx.send(r).unwrap()).unwrap();
        rx.recv().unwrap().unwrap();
        assert_eq!(c.under(10).get("a").unwrap(), 0);
    }
}

#[test]
fn kv14_durable_counters_under_a_cleared_big_branch_restart_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.counters("many").open().unwrap();
    let b = c.under("big");
    // More than a clear deletes at once: hidden by a mark, swept later.
    for i in 0..(tinystore::CLEAR_BOUND + 1) {
        b.add_then(i as i64, 1, |_| {}).unwrap();
    }
    assert_eq!(b.add(0, 1).unwrap(), 2);
    b.clear().unwrap();
    assert_eq!(b.get(0).unwrap(), 0);
    assert_eq!(
        b.add(0, 1).unwrap(),
        1,
        "a counter under the cleared branch restarts at 0"
    );
    let m = store.maintain().unwrap();
    assert_eq!(m.cleared, tinystore::CLEAR_BOUND);
    assert_eq!(b.get(0).unwrap(), 1);
}

/// The memory bound: a new key past it flushes first; while the flush
/// fails, new keys are `Limit` and held keys keep counting; nothing is lost.
#[test]
fn kv14_memory_bound_flushes_then_refuses_new_keys() {
    limits_common::capture_logs();
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.counters("bounded").flush_every(SEC).open().unwrap();
    for i in 0..MEMORY_BOUND {
        c.add(i as u64, 1).unwrap();
    }
    assert!(
        !limits_common::logged(log::Level::Warn, "\"bounded\"").is_empty(),
        "a warning when the name passes 80% of its bound"
    );
    assert_eq!(rows(dir.path(), "bounded"), 0);
    // Full: the next new key flushes the memory first, then counts.
    assert_eq!(c.add("one-more", 1).unwrap(), 1);
    assert_eq!(rows(dir.path(), "bounded"), MEMORY_BOUND);

    // Fill memory again with changes, then make every write of the name fail.
    for i in 0..(MEMORY_BOUND - 1) {
        c.add(i as u64, 1).unwrap();
    }
    let sql = rusqlite::Connection::open(store.file()).unwrap();
    sql.busy_timeout(Duration::from_secs(10)).unwrap();
    let id: i64 = sql
        .query_row("SELECT id FROM buckets WHERE name = 'bounded'", [], |r| r.get(0))
        .unwrap();
    sql.execute_batch(&format!(
        "CREATE TRIGGER refuse BEFORE UPDATE ON cells WHEN NEW.bucket = {id} BEGIN SELECT RAISE(ABORT, 'disk says no'); END;"
    ))
    .unwrap();
    let e = c.add("new-key", 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert_eq!(e.bucket(), Some("bounded"));
    assert_eq!(e.path(), Some("new-key"));
    assert!(e.message().contains("100000"), "{e}");
    assert_eq!(c.add(7u64, 1).unwrap(), 3, "a key memory holds keeps counting");
    assert_eq!(c.get("new-key").unwrap(), 0, "the refused key changed nothing");
    assert!(!limits_common::logged(log::Level::Error, "limit-store-full").is_empty());

    sql.execute_batch("DROP TRIGGER refuse").unwrap();
    assert_eq!(
        c.add("new-key", 1).unwrap(),
        1,
        "once a flush works, new keys count again"
    );
    store.close().unwrap();
    let store = open(dir.path());
    let c = store.counters("bounded").flush_every(SEC).open().unwrap();
    assert_eq!(c.get(7u64).unwrap(), 3, "nothing held was lost");
    assert_eq!(c.get((MEMORY_BOUND - 1) as u64).unwrap(), 1);
    assert_eq!(c.get(0u64).unwrap(), 2);
    assert_eq!(c.get("new-key").unwrap(), 1);
}

/// A key too long for the shared table is counted in the file at each
/// change, flush_every or not.
#[test]
fn kv14_a_key_too_long_for_the_table_is_counted_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.counters("views").flush_every(SEC).open().unwrap();
    let long = "p".repeat(200);
    assert_eq!(c.add(long.as_str(), 2).unwrap(), 2);
    assert_eq!(c.add(long.as_str(), 3).unwrap(), 5);
    assert_eq!(
        limits_common::file_sum(dir.path(), "views"),
        5,
        "in the file with no flush"
    );
    assert_eq!(c.get(long.as_str()).unwrap(), 5);
    assert!(c.delete(long.as_str()).unwrap());
    assert_eq!(rows(dir.path(), "views"), 0);
}
