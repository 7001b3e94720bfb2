//! Limits, `once`, the limit store and config across processes: what one
//! process wrote, another sees, and what one process runs, another does not
//! run again. Each other process is a role of the helper
//! (`src/child/limits.rs`).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::{finish, said};
use tinystore::{LimitStore, ONCE_LEASE, ONCE_POLL, Options, Store};
use tinystore_process_tests::{ANSWER, guesses, messages, role, settings, start};

/// The helper in `role` on the store in `dir`, its stdout piped.
fn child(role: &str, dir: &std::path::Path) -> Command {
    let mut c = common::child(role, &[dir.as_os_str()]);
    c.stdout(Stdio::piped()).stderr(Stdio::inherit());
    c
}

/// KV-13: every allow is written before it returns, so a crash right after
/// loses none.
#[test]
fn kv13_an_allow_is_durable_when_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let out = child(role::QUOTA_ALLOW, dir.path()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let store = Store::open_with(dir.path(), Options::new().test_clock(start())).unwrap();
    let p = messages(&store).peek("k").unwrap();
    assert_eq!(p.window("session").unwrap().used, 2);
}

/// KV-12: a crash of the only process on the limits table forgets at most
/// what the last second changed: at most one more burst.
#[test]
fn kv12_a_crash_lets_at_most_one_more_burst_through() {
    let dir = tempfile::tempdir().unwrap();
    let out = child(role::RATE_CRASH, dir.path()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let store = Store::open_with(dir.path(), Options::new().test_clock(start())).unwrap();
    assert!(
        !guesses(&store).allow("flushed").unwrap().ok,
        "what was written survived the crash"
    );
    let passed = (0..20)
        .filter(|_| guesses(&store).allow("unflushed").unwrap().ok)
        .count();
    assert_eq!(passed, 5, "what was not written is lost: one burst more, not more");
}

/// KV-14: a crash of the only process loses at most the changes since the
/// last flush, and a durable change that returned survives it.
#[test]
fn kv14_a_crash_loses_at_most_one_period() {
    let dir = tempfile::tempdir().unwrap();
    let out = child(role::COUNTERS_CRASH, dir.path()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let store = Store::open_with(dir.path(), Options::new().test_clock(start())).unwrap();
    let memory = store
        .counters("memory")
        .flush_every(Duration::from_secs(1))
        .open()
        .unwrap();
    assert_eq!(
        memory.get("k").unwrap(),
        5,
        "what the flush wrote survived; the 3 after it were lost"
    );
    let durable = store.counters("durable").open().unwrap();
    assert_eq!(durable.get("k").unwrap(), 8, "a durable add that returned survives");
}

/// KV-11: two processes run `once` on one key at the same moment: fn runs
/// once, and both get its answer.
#[test]
fn kv11_two_processes_run_fn_once() {
    let dir = tempfile::tempdir().unwrap();
    Store::open(dir.path()).unwrap().close().unwrap(); // the file exists before both start
    let kids: Vec<_> = (0..2)
        .map(|_| child(role::ONCE_RUN, dir.path()).spawn().unwrap())
        .collect();
    let answers: Vec<String> = kids
        .into_iter()
        .map(|k| {
            let out = finish(k, Duration::from_secs(60));
            assert!(out.status.success(), "{out:?}");
            said(&out.stdout, ANSWER).expect("the child answered")
        })
        .collect();
    assert_eq!(answers[0], answers[1], "both got the one answer");
    let ran = std::fs::read_to_string(dir.path().join("ran")).unwrap();
    assert_eq!(ran.lines().count(), 1, "fn ran once: {ran:?}");
}

/// KV-11: the process running a key is killed with SIGKILL mid-run:
/// another process runs the key within the documented bound, ONCE_LEASE
/// plus a poll after the death, and not while the first was alive.
#[test]
fn kv11_killed_process_lets_another_run() {
    let dir = tempfile::tempdir().unwrap();
    Store::open(dir.path()).unwrap().close().unwrap();
    let mut first = child(role::ONCE_HANG, dir.path()).spawn().unwrap();
    let mut said_started = String::new();
    BufReader::new(first.stdout.as_mut().unwrap())
        .read_line(&mut said_started)
        .unwrap();
    assert_eq!(said_started.trim(), "started", "the first child never started fn");
    let second = child(role::ONCE_TAKE_OVER, dir.path()).spawn().unwrap();
    // Real time: leases are about real processes. Longer than a lease, so
    // that a second process that took over a live claim would have run.
    std::thread::sleep(ONCE_LEASE + ONCE_POLL);
    assert!(
        !dir.path().join("b-ran").exists(),
        "the second waits while the first lives"
    );
    first.kill().unwrap(); // SIGKILL: no destructor, no release
    let killed = SystemTime::now();
    first.wait().unwrap();
    let out = finish(second, Duration::from_secs(60));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(said(&out.stdout, ANSWER).as_deref(), Some("from the second"));
    let b_ran: u64 = std::fs::read_to_string(dir.path().join("b-ran"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let after_kill =
        Duration::from_millis(b_ran).saturating_sub(killed.duration_since(SystemTime::UNIX_EPOCH).unwrap());
    let bound = ONCE_LEASE + ONCE_POLL + Duration::from_millis(1500); // slack for a loaded machine
    assert!(after_kill <= bound, "ran {after_kill:?} after the kill, over {bound:?}");
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store
            .once::<String>("jobs")
            .open()
            .unwrap()
            .get("k")
            .unwrap()
            .as_deref(),
        Some("from the second")
    );
}

/// The limit store's `update` from two processes at once never loses a
/// count.
#[test]
fn contract_concurrent_updates_in_two_processes_never_lose_a_count() {
    let dir = tempfile::tempdir().unwrap();
    Store::open(dir.path()).unwrap().close().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            common::child(role::LIMIT_STORE_COUNT, &[dir.path().as_os_str(), "100".as_ref()])
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        assert!(finish(c, Duration::from_secs(120)).status.success());
    }
    let store = Store::open(dir.path()).unwrap();
    let ls = LimitStore::open(&store).unwrap();
    let entry = ls.read(&["one-key"]).unwrap().remove(0).expect("counted");
    assert_eq!(entry.value, "200");
}

/// KV-20: a config's watcher sees a change another process made, and one
/// made in this process.
#[test]
fn kv20_watch_sees_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let cfg = settings(&store).unwrap();
    let mut watch = cfg.watch();
    let out = child(role::CONFIG_UPDATE, dir.path()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // The watcher reads the config's stamp once a second; the deadline only
    // catches a watcher that never sees the change.
    let seen = watch
        .next_within(Duration::from_secs(30))
        .expect("the other process's change is seen")
        .unwrap();
    assert_eq!(seen.rps, 777);
    assert_eq!(cfg.get().unwrap().rps, 777);
    // A change in this process reaches the watcher before `update`
    // returns, without a poll: it is there with no wait at all.
    cfg.update(|s| s.port = 1234).unwrap();
    let seen = watch
        .next_within(Duration::ZERO)
        .expect("this process's change is seen at once")
        .unwrap();
    assert_eq!(seen.port, 1234);
    assert!(
        watch.next_within(Duration::from_millis(300)).is_none(),
        "no change, no wake-up"
    );
}
