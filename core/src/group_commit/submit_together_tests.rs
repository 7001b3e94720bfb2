//! Tests of how writes group: bursts, waiting writers, and where a write
//! commits. Separate so that the code files stay about the code.

use std::time::{Duration, SystemTime};

use crate::{Options, Raw, RawBucket, Store, WriteOptions};

/// A store with a test clock, and its bucket "b".
pub(crate) fn store_with_bucket() -> (tempfile::TempDir, Store, RawBucket) {
    let dir = tempfile::tempdir().unwrap();
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let store = Store::open_with(dir.path(), Options::new().test_clock(start)).unwrap();
    let b = RawBucket::open(&store, "b", None, None).unwrap();
    (dir, store, b)
}

/// Runs `during` while a `tx` on another thread holds the writer's
/// connection, then lets the writer go: writes made in `during` wait.
pub(crate) fn with_writer_held(store: &Store, during: impl FnOnce()) {
    let (held, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    std::thread::scope(|s| {
        s.spawn(|| {
            store
                .tx(|_| {
                    held.wait();
                    release.wait();
                    Ok(())
                })
                .unwrap()
        });
        held.wait();
        during();
        release.wait();
    });
}

#[test]
fn kv15_writes_waiting_while_the_writer_is_busy_commit_as_one_group() {
    // The writer is held busy (a `tx` on another thread holds its
    // connection) while 64 writes are submitted, so all of them wait
    // when it is next free. Without the hold the count would depend on
    // scheduling: an open burst keeps a group open only while writes
    // keep coming, and a descheduled thread ends it (BURST_GAP_AT_MOST).
    let (_dir, store, b) = store_with_bucket();
    b.set(b"warm", Raw::int(0), WriteOptions::default()).unwrap();
    let (g0, w0) = store.group_stats();
    let (tx, rx) = std::sync::mpsc::channel();
    with_writer_held(&store, || {
        super::submit_together(|| {
            for i in 0..64 {
                let tx = tx.clone();
                let key = format!("k{i}");
                b.set_then(key.as_bytes(), Raw::int(i), WriteOptions::default(), move |r| {
                    tx.send(r).unwrap()
                })
                .unwrap();
            }
        });
    });
    for _ in 0..64 {
        rx.recv().unwrap().unwrap();
    }
    let (g1, w1) = store.group_stats();
    assert_eq!(
        (g1 - g0, w1 - w0),
        (1, 64),
        "64 waiting writes are one group, one fsync"
    );
    for i in 0..64 {
        let key = format!("k{i}");
        assert_eq!(b.entry(key.as_bytes()).unwrap().map(|e| e.value), Some(Raw::int(i)));
    }
}

/// The thread a write's completion ran on, for a write submitted with
/// `submit_waited` or without it.
pub(crate) fn answered_on(b: &RawBucket, key: &[u8], waited: bool) -> std::thread::ThreadId {
    let (tx, rx) = std::sync::mpsc::channel();
    let submit = || {
        b.set_then(key, Raw::int(1), WriteOptions::default(), move |r| {
            r.unwrap();
            tx.send(std::thread::current().id()).unwrap()
        })
        .unwrap()
    };
    if waited {
        super::submit_waited(submit)
    } else {
        submit()
    };
    rx.recv().unwrap()
}

#[test]
fn a_waited_write_alone_commits_on_its_callers_thread() {
    let (_dir, store, b) = store_with_bucket();
    let me = std::thread::current().id();
    assert_ne!(
        answered_on(&b, b"queued", false),
        me,
        "a completion form commits on the writer"
    );
    // Answered inside its group: wait until the writer lets go of the
    // connection (a `tx` takes it), so that it is free for the next.
    store.tx(|_| Ok(())).unwrap();
    assert_eq!(answered_on(&b, b"here", true), me, "a waited write alone commits here");
    assert_eq!(b.entry(b"here").unwrap().map(|e| e.value), Some(Raw::int(1)));
}

#[test]
fn a_waited_write_joins_the_queue_while_the_writer_is_busy() {
    // A `tx` on another thread holds the connection: the write cannot
    // commit here, so it queues and is answered after the tx ends.
    let (_dir, store, b) = store_with_bucket();
    let me = std::thread::current().id();
    let (tx, rx) = std::sync::mpsc::channel();
    with_writer_held(&store, || {
        super::submit_waited(|| {
            b.set_then(b"k", Raw::int(1), WriteOptions::default(), move |r| {
                tx.send((std::thread::current().id(), r.is_ok())).unwrap()
            })
            .unwrap()
        });
        assert!(rx.try_recv().is_err(), "not answered while the tx holds the writer");
    });
    let (on, ok) = rx.recv().unwrap();
    assert!(ok);
    assert_ne!(on, me, "the queued write committed on the writer thread");
}

#[test]
fn kv15_a_write_awaited_inside_an_open_burst_is_answered() {
    let (_dir, _store, b) = store_with_bucket();
    let _burst = super::Burst::start();
    let (tx, rx) = std::sync::mpsc::channel();
    b.set_then(b"k", Raw::int(1), WriteOptions::default(), move |r| tx.send(r).unwrap())
        .unwrap();
    // The burst stays open: its group commits once the burst goes quiet.
    let answer = rx.recv_timeout(Duration::from_secs(10));
    assert!(
        matches!(answer, Ok(Ok(_))),
        "a write awaited inside its burst was answered: {answer:?}"
    );
}
