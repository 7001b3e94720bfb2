//! KV-15 durability, KV-16 transactions, KV-17 clock and maintenance,
//! KV-18 bad input, KV-19 files and processes.

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use tinystore::{Error, ErrorKind, Options, Raw, Store, WriteOptions};

#[test]
fn kv15_concurrent_writes_commit_together() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let (go, h) = common::hold_writer(&store);
    let (tx, rx) = mpsc::channel();
    for i in 0..64 {
        let tx = tx.clone();
        b.set_then(i, &i, move |r| tx.send(r).unwrap()).unwrap();
    }
    let (g0, w0) = store.group_stats();
    go.send(()).unwrap();
    h.join().unwrap();
    for _ in 0..64 {
        rx.recv().unwrap().unwrap();
    }
    let (g1, w1) = store.group_stats();
    assert_eq!(w1 - w0, 64);
    assert_eq!(
        g1 - g0,
        1,
        "64 writes waiting when the writer was free commit as one group"
    );
    assert_eq!(b.get(63).unwrap(), Some(63));
}

#[test]
fn kv15_a_failing_write_rolls_back_alone() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let v = b.set("guarded", &1).unwrap();
    b.set("guarded", &2).unwrap();
    let (go, h) = common::hold_writer(&store);
    let (tx, rx) = mpsc::channel();
    let t = tx.clone();
    b.set_then("a", &1, move |r| t.send(("a", r.map(|_| ()))).unwrap())
        .unwrap();
    let t = tx.clone();
    b.raw()
        .set_then(
            b"guarded",
            Raw::Int(9),
            WriteOptions {
                expiry: None,
                if_version: Some(v),
            },
            move |r| t.send(("guarded", r.map(|_| ()))).unwrap(),
        )
        .unwrap();
    let t = tx.clone();
    b.set_then("c", &3, move |r| t.send(("c", r.map(|_| ()))).unwrap())
        .unwrap();
    go.send(()).unwrap();
    h.join().unwrap();
    let got: std::collections::HashMap<_, _> = (0..3).map(|_| rx.recv().unwrap()).collect();
    assert!(got["a"].is_ok() && got["c"].is_ok());
    assert_eq!(got["guarded"].as_ref().unwrap_err().kind(), ErrorKind::Conflict);
    assert_eq!(
        (b.get("a").unwrap(), b.get("c").unwrap(), b.get("guarded").unwrap()),
        (Some(1), Some(3), Some(2))
    );
}

#[test]
fn kv15_failed_commit_answers_outcome_unknown_to_each_caller() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let (go, h) = common::hold_writer(&store);
    let (tx, rx) = mpsc::channel();
    for i in 0..3 {
        let tx = tx.clone();
        b.set_then(i, &i, move |r| tx.send(r).unwrap()).unwrap();
    }
    store.fail_next_commit_for_tests();
    go.send(()).unwrap();
    h.join().unwrap();
    let mut keys = Vec::new();
    for _ in 0..3 {
        let e = rx.recv().unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutcomeUnknown);
        assert!(e.message().contains("read the key"), "{e}");
        // The caller learns which key to read back.
        assert_eq!(e.bucket(), Some("b"), "{e}");
        keys.push(e.path().expect("the error names the key").to_owned());
    }
    keys.sort();
    assert_eq!(keys, ["0", "1", "2"]);
    b.set("after", &1).unwrap();
    assert_eq!(
        b.get("after").unwrap(),
        Some(1),
        "the store works after a failed commit"
    );
}

#[test]
fn kv15_a_caller_that_gives_up_before_its_write_starts_writes_nothing() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let (go, h) = common::hold_writer(&store);
    let (tx, rx) = mpsc::channel();
    let ticket = b.set_then("k", &1, move |r| tx.send(r).unwrap()).unwrap();
    ticket.cancel();
    go.send(()).unwrap();
    h.join().unwrap();
    let e = rx.recv().unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert_eq!((e.bucket(), e.path()), (Some("b"), Some("k")), "{e}");
    assert_eq!(b.get("k").unwrap(), None);
}

#[test]
fn kv16_tx_writes_all_or_nothing() {
    let (_d, store) = common::manual();
    let stock = store.bucket::<i64>("stock").open().unwrap();
    let orders = store.bucket::<String>("orders").open().unwrap();
    stock.set("apples", &1).unwrap();
    let r: Result<(), Error> = store.tx(|tx| {
        tx.with(&stock).take("apples")?;
        tx.with(&orders).set("o-1", &"apples".into())?;
        Err(Error::new(ErrorKind::Invalid, "payment declined"))
    });
    assert_eq!(r.unwrap_err().message(), "payment declined");
    assert_eq!(stock.get("apples").unwrap(), Some(1), "rolled back");
    assert_eq!(orders.get("o-1").unwrap(), None);
    store
        .tx(|tx| {
            assert_eq!(tx.with(&stock).take("apples")?, Some(1));
            tx.with(&orders).set("o-1", &"apples".into())?;
            assert_eq!(
                tx.with(&orders).get("o-1")?.as_deref(),
                Some("apples"),
                "a tx reads its own writes"
            );
            Ok(())
        })
        .unwrap();
    assert_eq!(
        (stock.get("apples").unwrap(), orders.get("o-1").unwrap().is_some()),
        (None, true)
    );
}

#[test]
fn kv16_two_transactions_taking_the_last_item_one_gets_it() {
    let (_d, store) = common::manual();
    let stock = store.bucket::<i64>("stock").open().unwrap();
    stock.set("last", &1).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let (store, stock, barrier) = (store.clone(), stock.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                store.tx(|tx| tx.with(&stock).take("last")).unwrap()
            })
        })
        .collect();
    let got: Vec<_> = hs.into_iter().filter_map(|h| h.join().unwrap()).collect();
    assert_eq!(got, vec![1]);
}

#[test]
fn kv16_a_write_around_the_transaction_from_inside_it_is_invalid() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let e = store.tx(|_| b.set("k", &1)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "not a deadlock");
    let e = store.tx(|_| store.tx(|_| Ok(()))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
}

#[test]
fn kv16_view_reads_one_snapshot() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("a", &1).unwrap();
    b.set("b", &1).unwrap();
    let (first, second) = store
        .view(|v| {
            let first = v.with(&b).get("a")?;
            b.set("b", &2)?; // committed after the view's first read
            Ok((first, v.with(&b).get("b")?))
        })
        .unwrap();
    assert_eq!((first, second), (Some(1), Some(1)));
    assert_eq!(b.get("b").unwrap(), Some(2));
}

#[test]
fn kv17_manual_store_runs_nothing_in_the_background() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").ttl(Duration::from_secs(1)).open().unwrap();
    b.set("k", &1).unwrap();
    store.clock().advance(Duration::from_secs(5)).unwrap();
    let conn = rusqlite::Connection::open(store.file()).unwrap();
    let rows =
        |c: &rusqlite::Connection| -> i64 { c.query_row("SELECT count(*) FROM cells", [], |r| r.get(0)).unwrap() };
    std::thread::sleep(Duration::from_millis(1500)); // longer than any background period
    assert_eq!(rows(&conn), 1, "expired but not swept: nothing runs by itself");
    let m = store.maintain().unwrap();
    assert_eq!(m.expired, 1);
    assert_eq!(rows(&conn), 0);
}

#[test]
fn kv17_clock_never_moves_back() {
    let (_d, store) = common::manual();
    let e = store.clock().set(common::start() - Duration::from_secs(1)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    store.clock().set(common::start() + Duration::from_secs(60)).unwrap();
    assert_eq!(store.clock().now(), common::start() + Duration::from_secs(60));
    let sys = Store::open(tempfile::tempdir().unwrap().path()).unwrap();
    assert_eq!(
        sys.clock().advance(Duration::from_secs(1)).unwrap_err().kind(),
        ErrorKind::Invalid
    );
}

#[test]
fn kv17_ordinary_store_deletes_expired_rows_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(dir.path(), Options::new().sweep_every(Duration::from_millis(100))).unwrap();
    let b = store.bucket::<i64>("b").ttl(Duration::from_millis(50)).open().unwrap();
    for i in 0..100 {
        b.set(i, &i).unwrap();
    }
    let conn = rusqlite::Connection::open(store.file()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n: i64 = conn.query_row("SELECT count(*) FROM cells", [], |r| r.get(0)).unwrap();
        if n == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{n} expired rows still there after 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn kv17_file_does_not_grow_under_steady_expiring_traffic() {
    let (_d, store) = common::manual();
    let b = store
        .bucket::<String>("codes")
        .ttl(Duration::from_secs(60))
        .open()
        .unwrap();
    let pages = || -> i64 {
        rusqlite::Connection::open(store.file())
            .unwrap()
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap()
    };
    let mut sizes = Vec::new();
    for round in 0..8 {
        store
            .tx(|tx| {
                for i in 0..2000 {
                    tx.with(&b).set(format!("{round}-{i}"), &"x".repeat(100))?;
                }
                Ok(())
            })
            .unwrap();
        store.clock().advance(Duration::from_secs(120)).unwrap();
        assert_eq!(store.maintain().unwrap().expired, 2000);
        sizes.push(pages());
    }
    assert_eq!(sizes[3], sizes[7], "pages after each round: {sizes:?}");
}

fn assert_unchanged(dir: &std::path::Path, f: impl FnOnce()) {
    let before = common::snapshot(dir);
    f();
    let after = common::snapshot(dir);
    let names = |s: &Vec<(String, Vec<u8>)>| s.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&before), names(&after));
    for ((n, a), (_, b)) in before.iter().zip(after.iter()) {
        if n.ends_with("-shm") {
            continue; // the shared-memory index is not the file's content
        }
        assert!(a == b, "{n} changed");
    }
}

#[test]
fn kv18_bad_input_is_invalid_naming_it_and_writes_nothing() {
    let (dir, store) = common::manual();
    let b = store.bucket::<Vec<f64>>("nums").open().unwrap();
    b.set("ok", &vec![1.0]).unwrap();
    assert_unchanged(dir.path(), || {
        let cases: Vec<(&str, Error)> = vec![
            ("\"Bad!\"", store.bucket::<i64>("Bad!").open().unwrap_err()),
            ("empty", b.set("", &vec![]).unwrap_err()),
            ("NaN", b.set("k", &vec![f64::NAN]).unwrap_err()),
            ("\"1hr\"", tinystore::parse_duration("1hr").unwrap_err()),
            ("\"5/0s\"", tinystore::parse_rate("5/0s").unwrap_err()),
            (
                "not both",
                store
                    .bucket::<i64>("t")
                    .ttl(Duration::from_secs(1))
                    .idle(Duration::from_secs(1))
                    .open()
                    .unwrap_err(),
            ),
            (
                "1001",
                b.list(&tinystore::ListOptions {
                    after: None,
                    limit: Some(1001),
                })
                .unwrap_err(),
            ),
            ("empty", b.under("").set("k", &vec![]).unwrap_err()),
        ];
        for (needle, e) in cases {
            assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
            assert!(e.to_string().contains(needle), "{e} should name {needle}");
        }
    });
}

#[test]
fn kv19_two_stores_on_one_file_see_each_others_writes() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path()).unwrap();
    let b = Store::open(dir.path()).unwrap();
    let ba = a.bucket::<i64>("shared").open().unwrap();
    let bb = b.bucket::<i64>("shared").open().unwrap();
    ba.set("x", &1).unwrap();
    assert_eq!(bb.get("x").unwrap(), Some(1));
    bb.set("y", &2).unwrap();
    assert_eq!(ba.get("y").unwrap(), Some(2));
    // both write at once: every write lands, versions stay unique
    let hs: Vec<_> = [ba.clone(), bb.clone()]
        .into_iter()
        .enumerate()
        .map(|(n, bucket)| {
            std::thread::spawn(move || {
                (0..200)
                    .map(|i| bucket.set(format!("{n}-{i}"), &i).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut versions: Vec<_> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
    versions.sort_by_key(|v| v.get());
    versions.dedup();
    assert_eq!(versions.len(), 400);
    assert_eq!(ba.all().count(), 402);
}

#[test]
fn kv19_file_of_another_application_is_refused_and_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kv.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "PRAGMA application_id = 1234; CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('mine');",
        )
        .unwrap();
    }
    let before = common::digest(&path);
    let e = Store::open(dir.path()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message().contains("another application"), "{e}");
    assert_eq!(common::digest(&path), before);
    // a plain SQLite file of someone else's, with no application id
    std::fs::remove_file(&path).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let before = common::digest(&path);
    assert_eq!(Store::open(dir.path()).err().unwrap().kind(), ErrorKind::Invalid);
    assert_eq!(common::digest(&path), before);
}

#[test]
fn kv19_file_that_is_not_sqlite_is_refused_and_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kv.db");
    std::fs::write(&path, b"these are my notes, not a database; please keep them").unwrap();
    let e = Store::open(dir.path()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("not a SQLite database"), "{e}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"these are my notes, not a database; please keep them"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no -wal or -shm left beside it"
    );
}

#[test]
fn kv19_newer_format_is_refused_and_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    Store::open(dir.path()).unwrap().close().unwrap();
    let path = dir.path().join("kv.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    let before = common::digest(&path);
    let e = Store::open(dir.path()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message().contains("format version 99"), "{e}");
    assert_eq!(common::digest(&path), before);
}

#[test]
fn kv19_calls_after_close_are_closed() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("k", &1).unwrap();
    store.close().unwrap();
    assert_eq!(b.get("k").unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(b.set("k", &2).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(b.set_then("k", &2, |_| {}).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(store.maintain().unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(store.bucket::<i64>("c").open().unwrap_err().kind(), ErrorKind::Closed);
    assert!(store.close().is_ok(), "closing twice is harmless");
}

#[test]
fn kv19_stores_creating_one_new_file_at_once_all_open_it() {
    // Several processes (here, stores with connections of their own) open a
    // store that does not exist yet, at the same moment: each must see the
    // file either empty or made, never half made and taken for another
    // application's.
    for _ in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let start = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    start.wait();
                    let store = tinystore::Store::open(dir.path()).unwrap();
                    store.bucket::<i64>("b").open().unwrap();
                });
            }
        });
    }
}
