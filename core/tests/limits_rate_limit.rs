//! KV-12: rate limits, GCRA, state in memory written every second.

mod limits_common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use limits_common::{open, rows, t0};
use tinystore::{ErrorKind, RateLimit, Store};

const MINUTE: Duration = Duration::from_secs(60);

fn guesses(store: &Store) -> RateLimit {
    store
        .rate_limit("sign-in-guesses")
        .rate(5, MINUTE)
        .burst(5)
        .open()
        .unwrap()
}

#[test]
fn kv12_burst_passes_then_refuses_with_retry_at() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let rl = guesses(&store);
    for left in [4, 3, 2, 1, 0] {
        let a = rl.allow("10.0.0.1").unwrap();
        assert!(a.ok);
        assert_eq!(a.left, left);
        assert_eq!(a.retry_at, None);
        assert!(a.windows.is_empty(), "a rate limit has no windows");
    }
    let refused = rl.allow("10.0.0.1").unwrap();
    assert!(!refused.ok, "a refusal is an answer, not an error");
    assert_eq!(refused.left, 0);
    assert_eq!(
        refused.retry_at,
        Some(t0() + Duration::from_secs(12)),
        "5 a minute: one every 12 s"
    );
    assert!(rl.allow("10.0.0.2").unwrap().ok, "another key counts apart");
    assert!(
        rl.under("tenant").allow("10.0.0.1").unwrap().ok,
        "another branch counts apart"
    );

    store
        .clock()
        .advance(Duration::from_secs(12) - Duration::from_millis(1))
        .unwrap();
    assert!(!rl.allow("10.0.0.1").unwrap().ok, "not before retry_at");
    store.clock().advance(Duration::from_millis(1)).unwrap();
    let a = rl.allow("10.0.0.1").unwrap();
    assert!(a.ok, "at retry_at exactly one more passes");
    assert_eq!(a.left, 0);
    assert!(!rl.allow("10.0.0.1").unwrap().ok);
}

#[test]
fn kv12_allow_n_takes_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let rl = store.rate_limit("api").rate(10, Duration::from_secs(1)).open().unwrap();
    assert_eq!(rl.burst(), 10, "the burst is the rate's count when not given");
    let a = rl.allow_n("k", 7).unwrap();
    assert!(a.ok);
    assert_eq!(a.left, 3);
    let refused = rl.allow_n("k", 4).unwrap();
    assert!(!refused.ok);
    assert_eq!(refused.left, 3, "how many would pass now");
    assert_eq!(refused.retry_at, Some(t0() + Duration::from_millis(100)));
    assert!(rl.allow_n("k", 3).unwrap().ok, "the refusal took nothing");
    assert!(!rl.allow("k").unwrap().ok);
    for n in [0, 11] {
        let e = rl.allow_n("k", n).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "n = {n}");
        assert_eq!(e.bucket(), Some("api"));
        assert_eq!(e.path(), Some("k"));
    }
}

/// After a burst, any second lets the rate through and no more: there is
/// no window edge where a fresh burst waits.
#[test]
fn kv12_no_window_edge_lets_twice_the_rate_through() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let rl = store
        .rate_limit("edge")
        .rate(10, Duration::from_secs(1))
        .open()
        .unwrap();
    let mut passed: Vec<u64> = Vec::new(); // ms since t0
    let mut now = 0;
    while now < 5_000 {
        while rl.allow("k").unwrap().ok {
            passed.push(now);
        }
        store.clock().advance(Duration::from_millis(10)).unwrap();
        now += 10;
    }
    assert_eq!(passed.iter().filter(|&&t| t == 0).count(), 10, "the burst at once");
    assert_eq!(passed.len(), 10 + 49, "then one every 100 ms");
    for start in (0..4_000).step_by(10) {
        let in_second = passed.iter().filter(|&&t| t > start && t <= start + 1_000).count();
        assert!(in_second <= 10, "{in_second} passed in the second after {start} ms");
    }
}

#[test]
fn kv12_racing_threads_pass_exactly_the_burst() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let rl = store
        .rate_limit("race")
        .rate(50, Duration::from_secs(3600))
        .open()
        .unwrap();
    let passed = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| {
                for _ in 0..20 {
                    if rl.allow("hot").unwrap().ok {
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(passed.load(Ordering::Relaxed), 50);
}

#[test]
fn kv12_a_restart_keeps_a_spent_burst_spent() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let rl = guesses(&store);
    for _ in 0..5 {
        assert!(rl.allow("ip").unwrap().ok);
    }
    assert_eq!(rows(dir.path(), "sign-in-guesses"), 0, "in memory until a flush");
    store.close().unwrap();
    let store = open(dir.path());
    let rl = guesses(&store);
    let a = rl.allow("ip").unwrap();
    assert!(!a.ok, "the spent burst stayed spent");
    assert_eq!(a.retry_at, Some(t0() + Duration::from_secs(12)));
    assert!(rl.allow("other").unwrap().ok);
    drop(rl);
    drop(store); // dropping the last handle writes memory too
    let store = open(dir.path());
    assert!(!guesses(&store).allow("ip").unwrap().ok);
}

#[test]
fn kv12_a_quiet_key_is_forgotten_and_its_row_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let rl = guesses(&store);
    for _ in 0..5 {
        rl.allow("ip").unwrap();
    }
    let m = store.maintain().unwrap();
    assert_eq!(m.flushed, 1);
    assert_eq!(rows(dir.path(), "sign-in-guesses"), 1);
    store.clock().advance(MINUTE - Duration::from_millis(1)).unwrap();
    assert_eq!(store.maintain().unwrap().expired, 0, "not yet as good as new");
    store.clock().advance(Duration::from_millis(1)).unwrap();
    let m = store.maintain().unwrap();
    assert_eq!(m.expired, 1, "a key as good as new: its row is deleted");
    assert_eq!(rows(dir.path(), "sign-in-guesses"), 0);
    assert_eq!(rl.allow("ip").unwrap().left, 4, "the full burst again");
}

#[test]
fn kv12_peek_counts_nothing_and_reset_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let rl = guesses(&store);
    assert_eq!(rl.peek("ip").unwrap().left, 5, "a quiet key has its whole burst");
    assert_eq!(rl.peek("ip").unwrap().left, 5, "peek took nothing");
    rl.allow("ip").unwrap();
    assert_eq!(rl.peek("ip").unwrap().left, 4, "as many as would pass now");
    for _ in 0..4 {
        rl.allow("ip").unwrap();
    }
    let p = rl.peek("ip").unwrap();
    assert!(!p.ok);
    assert_eq!(p.left, 0);
    assert_eq!(p.retry_at, Some(t0() + Duration::from_secs(12)));
    store.maintain().unwrap();
    assert_eq!(rows(dir.path(), "sign-in-guesses"), 1);
    rl.reset("ip").unwrap();
    assert!(rl.peek("ip").unwrap().ok);
    store.maintain().unwrap();
    assert_eq!(
        rows(dir.path(), "sign-in-guesses"),
        0,
        "reset deletes the row at the next flush"
    );
    assert_eq!(rl.allow("ip").unwrap().left, 4);
    // peek reads a key memory does not hold from the file.
    let other = open(dir.path());
    for _ in 0..4 {
        rl.allow("ip").unwrap();
    }
    store.maintain().unwrap();
    assert!(!guesses(&other).peek("ip").unwrap().ok);
}

#[test]
fn kv12_bad_rates_are_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let cases = [
        ("no rate", store.rate_limit("a")),
        ("0 per second", store.rate_limit("a").rate(0, Duration::from_secs(1))),
        ("a zero span", store.rate_limit("a").rate(5, Duration::ZERO)),
        (
            "faster than 1/ns",
            store.rate_limit("a").rate(5, Duration::from_nanos(4)),
        ),
        ("a burst of 0", store.rate_limit("a").rate(5, MINUTE).burst(0)),
        (
            "an absurd span",
            store.rate_limit("a").rate(1, Duration::from_secs(1_000 * 365 * 86_400)),
        ),
        ("a bad name", store.rate_limit("Bad").rate(5, MINUTE)),
    ];
    for (what, b) in cases {
        let e = b.open().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "{what}: {e}");
    }
    assert!(store.names().unwrap().is_empty(), "nothing was written");
    store.bucket::<i64>("codes").open().unwrap();
    let e = store.rate_limit("codes").rate(5, MINUTE).open().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "a name keeps its kind");
    guesses(&store);
    assert_eq!(
        store
            .quota("sign-in-guesses")
            .window("w", 1, MINUTE)
            .open()
            .unwrap_err()
            .kind(),
        ErrorKind::Invalid
    );
}

/// Past 100,000 keys a new key makes room by writing memory and letting
/// written keys go; a live count that leaves memory is read back from the
/// file, never forgotten.
#[test]
fn kv12_memory_bound_never_forgets_a_live_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let rl = store
        .rate_limit("bounded")
        .rate(1, Duration::from_secs(3600))
        .open()
        .unwrap();
    for i in 0..tinystore::MEMORY_BOUND as u64 {
        assert!(rl.allow(i).unwrap().ok);
    }
    assert_eq!(rows(dir.path(), "bounded"), 0);
    assert!(rl.allow("one-more").unwrap().ok, "a new key past the bound made room");
    assert_eq!(
        rows(dir.path(), "bounded"),
        tinystore::MEMORY_BOUND,
        "by writing memory first"
    );
    let a = rl.allow(0u64).unwrap();
    assert!(!a.ok, "a key that left memory comes back spent, read from the file");
    assert_eq!(a.retry_at, Some(t0() + Duration::from_secs(3600)));
}

/// The background thread of an ordinary store writes the limits every
/// second, with no call of the user's. The deadline only catches a thread
/// that never writes: how soon it writes is the benchmark's business.
#[test]
fn kv12_an_ordinary_store_writes_every_second() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let rl = store
        .rate_limit("bg")
        .rate(5, Duration::from_secs(3600))
        .open()
        .unwrap();
    rl.allow("ip").unwrap();
    let start = Instant::now();
    while rows(dir.path(), "bg") == 0 {
        assert!(start.elapsed() < Duration::from_secs(30), "not written within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A table laid out by another version of TinyStore, held open by another
/// process, is refused with an error that says so, and left as it was; a
/// table nobody holds is laid out anew.
#[test]
fn kv12_a_table_of_another_layout_held_open_is_refused_untouched() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let table = dir.path().join(tinystore::TABLE_FILE);
    let mut head = b"TSKVLIM\0".to_vec();
    head.extend_from_slice(&2u32.to_le_bytes());
    head.resize(65_536, 0);
    std::fs::File::create(&table).unwrap().write_all(&head).unwrap();
    // Another process's hold: a flock of another open file description.
    let other = std::fs::File::open(&table).unwrap();
    // SAFETY: flock on a descriptor this File owns.
    assert_eq!(unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_SH) }, 0);
    let e = store
        .rate_limit("guesses")
        .rate(5, Duration::from_secs(60))
        .open()
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert!(
        e.message().contains("version 2") && e.message().contains("knows version 1"),
        "{e}"
    );
    assert_eq!(std::fs::read(&table).unwrap(), head, "left as it was");
    drop(other);
    assert!(
        guesses(&store).allow("ip").unwrap().ok,
        "alone, the store lays the table out anew"
    );
    assert_eq!(std::fs::read(&table).unwrap()[8..12], 1u32.to_le_bytes());
}

/// A key too long for the shared table is decided in a write of its own,
/// on the file: the same limit, every process, nothing to flush.
#[test]
fn kv12_a_key_too_long_for_the_table_is_limited_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let long = "k".repeat(200);
    let rl = guesses(&store);
    for left in (0..5).rev() {
        let a = rl.allow(long.as_str()).unwrap();
        assert!(a.ok);
        assert_eq!(a.left, left);
    }
    assert!(!rl.allow(long.as_str()).unwrap().ok, "the burst is spent");
    assert_eq!(rows(dir.path(), "sign-in-guesses"), 1, "written at once, with no flush");
    assert_eq!(rl.peek(long.as_str()).unwrap().left, 0);
    rl.reset(long.as_str()).unwrap();
    assert_eq!(rows(dir.path(), "sign-in-guesses"), 0, "reset deletes the row");
    assert!(rl.allow(long.as_str()).unwrap().ok);
}
