//! Processes on one file (KV-19): two busy processes take turns at the
//! write lock, so neither waits for the other to run out of writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tinystore::Store;

const ROLE: &str = "TINYSTORE_PROCESSES_CHILD";
/// Writes each process makes, 64 in flight.
const WRITES: usize = 640;
const IN_FLIGHT: usize = 64;

/// The child: waits at the start line, then writes its own keys as fast as
/// its writer takes them.
#[test]
fn writer_child() {
    let Ok(dir) = std::env::var(ROLE) else { return };
    let dir = PathBuf::from(dir);
    let me = std::process::id();
    let store = Store::open(dir.join("store")).unwrap();
    let writes = store.bucket::<i64>("writes").open().unwrap().under(me as i64);
    let writes = writes.raw();
    std::fs::write(dir.join(format!("ready-{me}")), b"").unwrap();
    let go = dir.join("go");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !go.exists() {
        assert!(Instant::now() < deadline, "no start line");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Keep 64 writes in flight, as an event loop does: the writer always
    // has its next group queued when it commits.
    let (tx, rx) = std::sync::mpsc::channel();
    let submit = |n: usize| {
        let tx = tx.clone();
        writes.set_then(
            &(n as i64).to_be_bytes(),
            tinystore::Raw::Int(n as i64),
            Default::default(),
            move |r| tx.send(r).unwrap(),
        )
    };
    let mut sent = 0;
    while sent < IN_FLIGHT {
        submit(sent).unwrap();
        sent += 1;
    }
    for _ in 0..WRITES {
        rx.recv().unwrap().unwrap();
        if sent < WRITES {
            submit(sent).unwrap();
            sent += 1;
        }
    }
    store.close().unwrap();
}

fn spawn(dir: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer_child", "--nocapture", "--test-threads=1"])
        .env(ROLE, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(child: std::process::Child) -> u32 {
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "a writer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    pid
}

/// A measurement more than a check: how the turns come out depends on how
/// the machine schedules two busy processes, and on a loaded CI machine one
/// run in a few fell under the bound. The sign itself is checked by the unit
/// test in `storage/turns.rs`. Run with
/// `cargo test -p tinystore --test kv_processes -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement of turn-taking under load; run with --ignored on a quiet machine"]
fn kv19_two_busy_processes_take_turns_at_the_write_lock() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (spawn(dir.path()), spawn(dir.path()));
    // Both open the store before the start line, so neither has a head start.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("ready-"))
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "the writers never got ready");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::fs::write(dir.path().join("go"), b"").unwrap();
    let (a, b) = (finish(a), finish(b));
    // Versions are the file's revisions, so they order the commits of both
    // processes. Without turns, the process that first has the lock keeps it
    // while it has writes queued, and the other's writes mostly come after.
    let store = Store::open(dir.path().join("store")).unwrap();
    let writes = store.bucket::<i64>("writes").open().unwrap();
    let versions = |pid: u32| -> Vec<i64> {
        let mut v: Vec<i64> = writes
            .under(pid as i64)
            .all()
            .map(|e| e.unwrap().version.get())
            .collect();
        v.sort();
        assert_eq!(v.len(), WRITES, "every write of {pid} is there");
        v
    };
    let (va, vb) = (versions(a), versions(b));
    let (first_done, later) = match va.last() < vb.last() {
        true => (*va.last().unwrap(), &vb),
        false => (*vb.last().unwrap(), &va),
    };
    let before = later.iter().filter(|&&v| v < first_done).count();
    // Taking turns group by group, the later process has all but about its
    // last group in before the other finishes (576 of 640 in every run on
    // the development machine, at load 11); without turns the busy process
    // kept the lock for runs of groups and the later one had 320 to 512 in.
    assert!(
        before >= WRITES - WRITES / 8,
        "one process kept the write lock: the other had {before} of {WRITES} writes in before it finished"
    );
    eprintln!(
        "two busy processes: the one that finished later had {before} of {WRITES} writes in before the other finished"
    );
}
