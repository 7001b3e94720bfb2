//! Readers that keep their read-mark lock between reads, against another
//! process: a kept lock never hides another process's commit from a read
//! after it (KV-19), and a process that reads without pause never stops
//! this process's WAL from restarting. `core/tests/read_locks.rs` checks
//! the same within one process.
//!
//! These run on the real clock: what they check is how a lease in real
//! time meets SQLite's locks, which a test clock does not drive. The
//! counts they read are the process's, so the tests here take turns.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tinystore::{Options, Store, read_lock_counts};
use tinystore_process_tests::role;

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

/// Another process on the store at `dir`, the helper's `reader` role
/// (`src/child/processes.rs`), driven line by line: it answers each line
/// on stdin with one line on stdout.
struct Other {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Other {
    fn start(dir: &Path) -> Other {
        let mut child = common::child(role::READER, &[dir.as_os_str()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut other = Other { child, input, output };
        assert_eq!(other.ask("hello"), "ready");
        other
    }

    fn ask(&mut self, line: &str) -> String {
        writeln!(self.input, "{line}").unwrap();
        self.input.flush().unwrap();
        let mut answer = String::new();
        assert!(
            self.output.read_line(&mut answer).unwrap() > 0,
            "the other process ended"
        );
        answer.trim_end().to_string()
    }

    fn finish(mut self) {
        assert_eq!(self.ask("bye"), "bye");
        drop(self.input);
        assert!(self.child.wait().unwrap().success(), "the other process failed");
    }
}

#[test]
fn kv19_a_read_after_another_process_commits_sees_it_though_its_lock_was_kept() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let b = store.bucket::<i64>("n").open().unwrap();
    let mut other = Other::start(dir.path());
    for n in 0..20 {
        assert_eq!(other.ask(&format!("set {n}")), "set");
        read_until_kept(|| assert_eq!(b.get("k").unwrap(), Some(n)));
        assert_eq!(other.ask(&format!("set {}", n + 1000)), "set");
        assert_eq!(
            b.get("k").unwrap(),
            Some(n + 1000),
            "round {n}: a kept lock hid the other process's commit"
        );
    }
    other.finish();
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
fn the_wal_restarts_while_another_process_reads_without_pause() {
    let _turn = one_at_a_time();
    for gap in [SPARSE, STEADY] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with(dir.path(), Options::new().keep_read_locks(false)).unwrap();
        store.bucket::<i64>("n").open().unwrap().set("k", &1).unwrap();
        let mut other = Other::start(dir.path());
        assert_eq!(other.ask("read"), "reading");
        let frames = big_writes(&store, gap);
        let kept: u64 = other.ask("stop").parse().unwrap();
        other.finish();
        if gap == SPARSE {
            assert!(kept > 0, "the other process never kept a lock");
        }
        assert!(
            frames <= WAL_AT_MOST,
            "writes every {gap:?}: the WAL grew to {frames} frames while another process read: it never restarted"
        );
    }
}
