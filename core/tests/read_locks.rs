//! Readers that keep their read-mark lock between reads (`read_locks`):
//! a kept lock saves the kernel's two lock calls while the file is quiet,
//! never hides a commit from a read after it (KV-19), and never stops a
//! writer's WAL from restarting, in this process or another.
//!
//! These run on the real clock: what they check is how a lease in real
//! time meets SQLite's locks, which a test clock does not drive. The
//! counts they read are the process's, so the tests here take turns.
//! The same promises against another process's reads and commits are in
//! `core/process-tests/tests/read_locks_other_process.rs`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tinystore::{Options, Store, read_lock_counts};

/// The tests here read the process's counts, so they run one at a time.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads with `get` until ten reads in a row find their lock kept, every
/// reader of the store's then keeping one: a reader keeps its lock only
/// once it has seen the file quiet for `read_locks::QUIET` (20 ms), and
/// each reader counts from its own first look.
fn read_until_kept(get: impl Fn()) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let before = read_lock_counts();
        for _ in 0..10 {
            get();
        }
        let after = read_lock_counts();
        if after.taken == before.taken && after.reused >= before.reused + 10 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "reads did not find their lock kept within 10 s"
        );
        std::thread::yield_now();
    }
}

#[test]
fn reads_of_a_quiet_file_keep_their_lock() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let b = store.bucket::<i64>("n").open().unwrap();
    b.set("k", &7).unwrap();
    read_until_kept(|| assert_eq!(b.get("k").unwrap(), Some(7)));
    let before = read_lock_counts();
    for _ in 0..1000 {
        assert_eq!(b.get("k").unwrap(), Some(7));
    }
    let after = read_lock_counts();
    // A lock is given back when unused for 2 ms, so a read that waited for
    // its core that long takes it again; the rest find it kept.
    assert!(
        after.reused - before.reused >= 900,
        "only {} of 1,000 reads of a quiet file found their lock kept ({} took it)",
        after.reused - before.reused,
        after.taken - before.taken
    );
}

#[test]
fn no_lock_is_kept_when_asked_not_to_or_on_a_test_clock() {
    let _turn = one_at_a_time();
    for options in [
        Options::new().keep_read_locks(false),
        Options::new().test_clock(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with(dir.path(), options).unwrap();
        let b = store.bucket::<i64>("n").open().unwrap();
        b.set("k", &7).unwrap();
        let quiet = Instant::now();
        while quiet.elapsed() < Duration::from_millis(50) {
            b.get("k").unwrap();
        }
        let before = read_lock_counts();
        for _ in 0..200 {
            assert_eq!(b.get("k").unwrap(), Some(7));
        }
        assert_eq!(
            read_lock_counts(),
            before,
            "a reader of this store used the keeping VFS"
        );
    }
}

#[test]
fn kv19_a_read_after_another_stores_commit_sees_it_though_its_lock_was_kept() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let reader = Store::open(dir.path()).unwrap();
    let writer = Store::open_with(dir.path(), Options::new().keep_read_locks(false)).unwrap();
    let r = reader.bucket::<i64>("n").open().unwrap();
    let w = writer.bucket::<i64>("n").open().unwrap();
    for n in 0..20 {
        w.set("k", &n).unwrap();
        read_until_kept(|| assert_eq!(r.get("k").unwrap(), Some(n)));
        w.set("k", &(n + 1000)).unwrap();
        assert_eq!(
            r.get("k").unwrap(),
            Some(n + 1000),
            "round {n}: a kept lock hid a commit"
        );
        w.delete("k").unwrap();
        assert_eq!(r.get("k").unwrap(), None, "round {n}: a kept lock hid a delete");
    }
}

/// Frames in kv.db-wal, from its size (32-byte header, 24 bytes a frame).
fn wal_frames(dir: &Path, page: u64) -> u64 {
    let len = std::fs::metadata(dir.join("kv.db-wal")).map_or(0, |m| m.len());
    len.saturating_sub(32) / (page + 24)
}

/// Writes `WRITES` values of 200 KiB each (about 50 pages), one every
/// `gap`. Returns the WAL's length in frames at the end; the WAL file never
/// shrinks, so that is the most it held.
fn big_writes(store: &Store, gap: Duration) -> u64 {
    let big = store.bucket::<Vec<u8>>("big").open().unwrap();
    let value = vec![7u8; 200 * 1024];
    for i in 0..WRITES {
        let at = Instant::now();
        big.set(format!("v{}", i % 4), &value).unwrap();
        if let Some(left) = gap.checked_sub(at.elapsed()) {
            // Real time is the point here: the lease runs on it.
            std::thread::sleep(left);
        }
    }
    wal_frames(store.dir(), 4096)
}

/// 80 writes of about 50 pages make some 4,000 frames. A WAL that restarts
/// once a checkpoint copied it all stays near SQLite's 1,000-frame mark; a
/// WAL kept from restarting holds them all.
const WRITES: usize = 80;
const WAL_AT_MOST: u64 = 2_500;

/// Gaps between writes: 30 ms, longer than readers wait before they keep a
/// lock again, so that every commit finds them keeping one taken before it;
/// and 5 ms, steady writes, under which no lock may be kept at all.
const SPARSE: Duration = Duration::from_millis(30);
const STEADY: Duration = Duration::from_millis(5);

#[test]
fn the_wal_restarts_while_this_process_reads_without_pause() {
    let _turn = one_at_a_time();
    for gap in [SPARSE, STEADY] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let n = store.bucket::<i64>("n").open().unwrap();
        n.set("k", &1).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (n, stop) = (n.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        n.get("k").unwrap();
                    }
                })
            })
            .collect();
        let before = read_lock_counts().reused;
        let frames = big_writes(&store, gap);
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        if gap == SPARSE {
            assert!(read_lock_counts().reused > before, "the readers never kept a lock");
        }
        assert!(
            frames <= WAL_AT_MOST,
            "writes every {gap:?}: the WAL grew to {frames} frames under steady reads: it never restarted"
        );
    }
}
