//! The memory budget (`Options::memory`): calls hold the memory
//! of their values, wait for their turn when it is spent, and inside a
//! transaction take what is free or are `Limit` at once. The load test with
//! 64 writers and 64 readers is `bench/src/bin/memory.rs`.

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Barrier};

use tinystore::{ErrorKind, MAX_VALUE, Options, Raw, RawBucket, Store, WriteOptions};

fn budgeted(bytes: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(dir.path(), Options::new().test_clock(common::start()).memory(bytes)).unwrap();
    (dir, store)
}

#[test]
fn a_budget_below_the_largest_value_is_refused_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("store");
    let Err(e) = Store::open_with(&at, Options::new().memory(MAX_VALUE - 1)) else {
        panic!("a budget under 1 MiB opened")
    };
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.to_string().contains("memory budget 1048575 bytes"), "{e}");
    assert!(!at.exists(), "a refused open creates nothing");
}

#[test]
fn under_a_budget_every_call_works_and_gives_its_memory_back() {
    let (_d, store) = budgeted(MAX_VALUE);
    let b = store.bucket::<String>("blobs").open().unwrap();
    // Each call holds the whole budget in turn: if one kept its memory the
    // next would wait forever, so finishing is the check.
    for i in 0..20u8 {
        b.set(format!("k{i}"), &format!("{i:02}{}", "x".repeat(299_998)))
            .unwrap();
        assert_eq!(b.get(format!("k{i}")).unwrap().unwrap().len(), 300_000);
    }
    assert!(!b.create("k0", &"small".into()).unwrap());
    assert!(b.take("k1").unwrap().unwrap().starts_with("01"));
    assert_eq!(b.all().collect::<Result<Vec<_>, _>>().unwrap().len(), 19);
    let raw = b.raw();
    raw.set(b"raw", Raw::Bytes(vec![9; 1000]), WriteOptions::default())
        .unwrap();
    let (tx, rx) = mpsc::channel();
    raw.set_then(b"then", Raw::Bytes(vec![9; 1000]), WriteOptions::default(), move |r| {
        tx.send(r).unwrap()
    })
    .unwrap();
    rx.recv().unwrap().unwrap();
    store.view(|v| v.with(&b).get("k2")).unwrap().unwrap();
    store.tx(|tx| tx.with(&b).set("k3", &"three".into())).unwrap();
}

#[test]
fn racing_writers_and_readers_all_finish_under_a_small_budget() {
    let (_d, store) = budgeted(2 * MAX_VALUE);
    let b = store.bucket::<String>("blobs").open().unwrap();
    let start = Arc::new(Barrier::new(16));
    let value = Arc::new("7".repeat(512 * 1024));
    std::thread::scope(|s| {
        for t in 0..16 {
            let (b, start, value) = (b.clone(), start.clone(), value.clone());
            s.spawn(move || {
                start.wait();
                for i in 0..8 {
                    let key = format!("t{t}-{i}");
                    if t % 2 == 0 {
                        b.set(&key, &value).unwrap();
                    } else {
                        let _ = b.get(format!("t{}-{i}", t - 1)).unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(b.all().collect::<Result<Vec<_>, _>>().unwrap().len(), 64);
}

#[test]
fn inside_a_transaction_a_call_that_cannot_have_its_memory_is_limit_at_once() {
    let (_d, store) = budgeted(MAX_VALUE);
    let b = store.bucket::<String>("blobs").open().unwrap();
    b.set("k", &"one".into()).unwrap();
    let other = RawBucket::open(&store, "other", None, None).unwrap();
    let (tx_done, done) = mpsc::channel();
    let out = store.tx(|tx| {
        // A write outside the transaction holds 600 KB until it commits,
        // which it cannot do before this transaction ends: a read in here
        // that waited for memory would wait for itself.
        other
            .set_then(
                b"big",
                Raw::Bytes(vec![2; 600_000]),
                WriteOptions::default(),
                move |r| tx_done.send(r).unwrap(),
            )
            .unwrap();
        let e = tx.with(&b).get("k").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        assert!(e.to_string().contains("run the transaction again"), "{e}");
        assert_eq!((e.bucket(), e.path()), (Some("blobs"), Some("k")), "{e}");
        // Even a small typed write holds the largest value until it is
        // encoded, so it is refused too, before it encodes anything.
        let e = tx.with(&b).set("small", &"three".into()).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::Limit,
            "a typed write holds the largest value until encoded: {e}"
        );
        Ok(())
    });
    out.unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(
        other.entry(b"big").unwrap().unwrap().value,
        Raw::Bytes(vec![2; 600_000])
    );
    // With the outside write committed, the same read has its memory.
    store.tx(|tx| tx.with(&b).get("k")).unwrap().unwrap();
}

#[test]
fn writes_submitted_together_under_a_spent_budget_do_not_wait_for_themselves() {
    // A binding submits a burst of writes inside `submit_together`; under a
    // budget the fourth waits for memory that only the first three give
    // back when they commit, so they must reach the writer first.
    let (_d, store) = budgeted(2 * MAX_VALUE);
    let raw = RawBucket::open(&store, "blobs", None, None).unwrap();
    let (tx, rx) = mpsc::channel();
    tinystore::submit_together(|| {
        for i in 0..16 {
            let tx = tx.clone();
            raw.set_then(
                format!("k{i}").as_bytes(),
                Raw::Bytes(vec![7; 600_000]),
                WriteOptions::default(),
                move |r| tx.send(r).unwrap(),
            )
            .unwrap();
        }
    });
    for _ in 0..16 {
        rx.recv().unwrap().unwrap();
    }
    assert_eq!(raw.all().collect::<Result<Vec<_>, _>>().unwrap().len(), 16);
}
