//! KV-13: quotas, windows counted all or none in one durable write (that
//! the write is durable when `allow` returns, across a crash:
//! `core/process-tests/tests/limits_processes.rs`).

mod limits_common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use limits_common::{open, t0};
use tinystore::{ErrorKind, Quota, Store};

const HOUR: Duration = Duration::from_secs(3600);
const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);

/// A small plan: 3 messages per 5 hours, 4 per week.
fn messages(store: &Store) -> Quota {
    store
        .quota("messages")
        .window("session", 3, 5 * HOUR)
        .window("weekly", 4, WEEK)
        .open()
        .unwrap()
}

#[test]
fn kv13_a_use_counts_in_every_window_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let q = messages(&store);
    for left in [2, 1, 0] {
        let a = q.allow(7).unwrap();
        assert!(a.ok);
        assert_eq!(a.left, left, "left is the least over the windows");
    }
    let a = q.allow(7).unwrap();
    assert!(!a.ok, "the session window is full");
    assert_eq!(
        a.retry_at,
        Some(t0() + 5 * HOUR),
        "retry when the refusing window resets"
    );
    let weekly = a.window("weekly").unwrap();
    assert_eq!(
        (weekly.used, weekly.limit, weekly.left),
        (3, 4, 1),
        "the refusal counted nowhere"
    );
    assert_eq!(weekly.resets_at, Some(t0() + WEEK));

    store.clock().advance(5 * HOUR).unwrap();
    let a = q.allow(7).unwrap();
    assert!(a.ok, "a new session window");
    assert_eq!(a.window("session").unwrap().used, 1);
    assert_eq!(a.window("weekly").unwrap().used, 4);
    assert_eq!(a.left, 0);

    let a = q.allow(7).unwrap();
    assert!(!a.ok, "the weekly window is full");
    assert_eq!(a.retry_at, Some(t0() + WEEK), "retry when the weekly window resets");
    let session = a.window("session").unwrap();
    assert_eq!(
        session.used, 1,
        "a refusal by the weekly window leaves the session window untouched"
    );
    assert_eq!(session.left, 2);
    assert_eq!(a.left, 0);
    assert_eq!(q.peek(7).unwrap().window("session").unwrap().used, 1);
    assert!(q.allow(8).unwrap().ok, "another key counts apart");
    assert!(q.under("team").allow(7).unwrap().ok, "another branch counts apart");
}

#[test]
fn kv13_both_windows_refusing_retry_when_both_reset() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let q = store
        .quota("q")
        .window("short", 2, HOUR)
        .window("long", 2, 2 * HOUR)
        .open()
        .unwrap();
    q.allow_n("k", 2).unwrap();
    let a = q.allow("k").unwrap();
    assert!(!a.ok);
    assert_eq!(a.retry_at, Some(t0() + 2 * HOUR), "the later of the refusing windows");
}

#[test]
fn kv13_a_window_starts_at_the_first_use_after_the_last_ended() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let q = messages(&store);
    store.clock().advance(HOUR + Duration::from_secs(17)).unwrap();
    let first = store.clock().now();
    let a = q.allow("k").unwrap();
    assert_eq!(
        a.window("session").unwrap().resets_at,
        Some(first + 5 * HOUR),
        "not a clock edge"
    );
    store.clock().advance(2 * HOUR).unwrap();
    assert_eq!(
        q.allow("k").unwrap().window("session").unwrap().resets_at,
        Some(first + 5 * HOUR)
    );
    store.clock().advance(3 * HOUR).unwrap();
    let p = q.peek("k").unwrap();
    let s = p.window("session").unwrap();
    assert_eq!(
        (s.used, s.resets_at),
        (0, None),
        "an ended window has not started again"
    );
    store.clock().advance(Duration::from_secs(600)).unwrap();
    let second = store.clock().now();
    let a = q.allow("k").unwrap();
    assert_eq!(a.window("session").unwrap().resets_at, Some(second + 5 * HOUR));
    assert_eq!(a.window("session").unwrap().used, 1);
    assert_eq!(a.window("weekly").unwrap().used, 3, "the weekly window runs on");
}

#[test]
fn kv13_peek_refund_and_reset() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let q = messages(&store);
    let p = q.peek("k").unwrap();
    assert!(p.ok);
    assert_eq!(p.left, 3);
    assert_eq!(p.window("session").unwrap().resets_at, None);
    q.allow_n("k", 2).unwrap();
    assert_eq!(q.peek("k").unwrap().left, 1, "peek counted nothing");
    assert_eq!(q.peek("k").unwrap().left, 1);

    let r = q.refund("k").unwrap();
    assert_eq!(r.window("session").unwrap().used, 1);
    assert_eq!(r.window("weekly").unwrap().used, 1);
    let r = q.refund_n("k", 3).unwrap();
    assert_eq!(r.window("session").unwrap().used, 0, "never below zero");
    assert_eq!(r.window("weekly").unwrap().used, 0);

    q.allow_n("k", 2).unwrap();
    store.clock().advance(5 * HOUR).unwrap();
    q.allow("k").unwrap(); // a new session window: 1; weekly: 3
    store.clock().advance(5 * HOUR).unwrap();
    let r = q.refund("k").unwrap();
    assert_eq!(
        r.window("session").unwrap().used,
        0,
        "the session window has reset since"
    );
    assert_eq!(r.window("session").unwrap().resets_at, None);
    assert_eq!(r.window("weekly").unwrap().used, 2, "the weekly one has not");

    q.reset("k").unwrap();
    let p = q.peek("k").unwrap();
    assert_eq!(p.left, 3);
    assert_eq!(p.window("weekly").unwrap().resets_at, None, "reset forgets the key");
}

#[test]
fn kv13_n_over_the_smallest_limit_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let q = messages(&store);
    let a = q.allow_n("k", 3).unwrap();
    assert!(a.ok, "the whole smallest limit at once passes");
    assert!(!q.allow_n("k", 1).unwrap().ok);
    q.reset("k").unwrap();
    q.allow_n("k", 2).unwrap();
    assert!(!q.allow_n("k", 2).unwrap().ok, "2 more do not fit: none counted");
    assert_eq!(q.peek("k").unwrap().window("weekly").unwrap().used, 2);
    for n in [0, 4] {
        let e = q.allow_n("k", n).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "n = {n}");
        assert_eq!(e.bucket(), Some("messages"));
        assert_eq!(e.path(), Some("k"));
        assert_eq!(q.refund_n("k", n).unwrap_err().kind(), ErrorKind::Invalid);
    }
}

#[test]
fn kv13_racing_allows_pass_exactly_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let q = store.quota("race").window("daily", 10, 24 * HOUR).open().unwrap();
    let passed = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..40 {
            s.spawn(|| {
                if q.allow("hot").unwrap().ok {
                    passed.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(passed.load(Ordering::Relaxed), 10);
    assert_eq!(q.peek("hot").unwrap().window("daily").unwrap().used, 10);
}

#[test]
fn kv13_windows_may_change_between_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    messages(&store).allow_n("k", 2).unwrap();
    store.close().unwrap();

    let store = open(dir.path());
    let changed = store
        .quota("messages")
        .window("session", 5, 5 * HOUR)
        .window("daily", 10, 24 * HOUR)
        .open()
        .unwrap();
    let p = changed.peek("k").unwrap();
    let s = p.window("session").unwrap();
    assert_eq!(
        (s.used, s.limit, s.left),
        (2, 5, 3),
        "a changed limit counts what its window used"
    );
    assert_eq!(
        p.window("daily").unwrap().resets_at,
        None,
        "an added window starts at the next use"
    );
    assert!(p.window("weekly").is_none());
    let a = changed.allow("k").unwrap();
    assert_eq!(a.window("daily").unwrap().used, 1);
    assert_eq!(a.window("session").unwrap().used, 3);
    store.close().unwrap();

    let store = open(dir.path());
    let back = messages(&store);
    let p = back.peek("k").unwrap();
    assert_eq!(
        p.window("weekly").unwrap().used,
        0,
        "a window no longer given was forgotten"
    );
    assert_eq!(p.window("session").unwrap().used, 3);
    assert!(!p.ok, "3 of 3 in the session window");
}

#[test]
fn kv13_bad_quotas_are_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let nine = (0..9).fold(store.quota("q"), |b, i| b.window(&format!("w{i}"), 1, HOUR));
    let cases = [
        ("no window", store.quota("q")),
        ("nine windows", nine),
        ("an uppercase name", store.quota("q").window("Daily", 1, HOUR)),
        ("a name starting with a digit", store.quota("q").window("1d", 1, HOUR)),
        ("a name of 33 bytes", store.quota("q").window(&"a".repeat(33), 1, HOUR)),
        ("a limit of 0", store.quota("q").window("daily", 0, HOUR)),
        (
            "a span under 1 ms",
            store.quota("q").window("daily", 1, Duration::from_micros(999)),
        ),
        (
            "a name twice",
            store.quota("q").window("d", 1, HOUR).window("d", 2, HOUR),
        ),
        ("a bad quota name", store.quota("Q").window("d", 1, HOUR)),
    ];
    for (what, b) in cases {
        let e = b.open().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "{what}: {e}");
    }
    assert!(store.names().unwrap().is_empty(), "nothing was written");
    let eight = (0..8).fold(store.quota("q"), |b, i| b.window(&format!("w{i}"), 1, HOUR));
    eight.open().unwrap();
    store
        .quota("q")
        .window(&format!("a{}", "_".repeat(31)), 1, Duration::from_millis(1))
        .open()
        .unwrap();
    store.counters("plain").open().unwrap();
    assert_eq!(
        store.quota("plain").window("d", 1, HOUR).open().unwrap_err().kind(),
        ErrorKind::Invalid
    );
}

#[test]
fn kv13_completion_forms() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let q = messages(&store);
    let (tx, rx) = mpsc::channel();
    let t = tx.clone();
    q.allow_n_then("k", 2, move |r| t.send(r).unwrap()).unwrap();
    assert_eq!(rx.recv().unwrap().unwrap().left, 1);
    let t = tx.clone();
    q.refund_n_then("k", 1, move |r| t.send(r).unwrap()).unwrap();
    assert_eq!(rx.recv().unwrap().unwrap().left, 2);
    let (done, rx) = mpsc::channel();
    q.reset_then("k", move |r| done.send(r).unwrap()).unwrap();
    rx.recv().unwrap().unwrap();
    assert_eq!(q.peek("k").unwrap().left, 3);
    assert_eq!(q.allow_n_then("k", 9, |_| {}).unwrap_err().kind(), ErrorKind::Invalid);
}
