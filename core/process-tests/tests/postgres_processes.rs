//! App servers on one PostgreSQL database (KV-5): processes that race to
//! `take` the same keys get each key exactly once between them. Each is the
//! helper's `pg-take` role (`src/child/postgres.rs`) on the server CI starts.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use tinystore::Store;
use tinystore_process_tests::role;

/// The CI server (TINYSTORE_TEST_PG, which make exports after
/// `make pg-start`); without one the test fails, saying how to start one.
fn server() -> String {
    match std::env::var("TINYSTORE_TEST_PG") {
        Ok(s) if !s.is_empty() => s,
        _ => panic!(
            "the PostgreSQL tests need a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then \
             `export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run them through make"
        ),
    }
}

#[test]
fn kv05_take_raced_by_four_processes_has_one_winner_per_key() {
    let keys = 200;
    // A schema of this run's own, so that reruns start empty.
    let schema = format!("kv05_procs_{}", std::process::id());
    let location = format!("{}?schema={schema}", server());
    let seed = Store::open(&location).unwrap();
    let codes = seed.bucket::<i64>("codes").open().unwrap();
    for i in 0..keys {
        codes.set(format!("c{i}"), &(i as i64)).unwrap();
    }
    let mut children: Vec<_> = (0..4)
        .map(|_| {
            let mut c = common::child(role::PG_TAKE, &[location.as_ref(), keys.to_string().as_ref()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut line = String::new();
            BufReader::new(c.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
            assert_eq!(line.trim(), "ready");
            c
        })
        .collect();
    for c in &mut children {
        writeln!(c.stdin.as_mut().unwrap(), "go").unwrap();
    }
    let mut wins = vec![0; keys];
    for c in children {
        let out = common::finish(c, Duration::from_secs(60));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let i: usize = line.strip_prefix("won c").unwrap().parse().unwrap();
            wins[i] += 1;
        }
    }
    assert_eq!(wins, vec![1; keys], "each key has exactly one winner");
    assert_eq!(codes.all().count(), 0);
}

/// KV-11 across app servers: a waiter on another server waits while the
/// holder of a key's run lives, and runs the key as soon as the holder's
/// process is killed (its session, and with it its advisory lock, ends).
#[test]
fn kv11_a_killed_owner_on_postgres_is_taken_over_at_once() {
    let schema = format!("kv11_procs_{}", std::process::id());
    let location = format!("{}?schema={schema}", server());
    Store::open(&location).unwrap().close().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let piped = |c: &mut std::process::Command| {
        c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    };
    let mut cmd = common::child(role::PG_ONCE_HANG, &[location.as_ref()]);
    piped(&mut cmd);
    let mut first = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(first.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "started", "the first child never started fn");
    let mut cmd = common::child(role::PG_ONCE_TAKE_OVER, &[location.as_ref(), dir.path().as_os_str()]);
    piped(&mut cmd);
    let mut second = cmd.spawn().unwrap();
    let mut out = BufReader::new(second.stdout.take().unwrap());
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "waiting", "the second never found the key held");
    assert!(
        !dir.path().join("b-ran").exists(),
        "the second waits while the first lives"
    );
    first.kill().unwrap(); // SIGKILL: no destructor, no release
    let killed = std::time::SystemTime::now();
    first.wait().unwrap();
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        rest
    });
    let status = common::finish(second, Duration::from_secs(60));
    let rest = reader.join().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    assert_eq!(
        common::said(rest.as_bytes(), tinystore_process_tests::ANSWER).as_deref(),
        Some("from the second")
    );
    let b_ran: u64 = std::fs::read_to_string(dir.path().join("b-ran"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let after_kill =
        Duration::from_millis(b_ran).saturating_sub(killed.duration_since(std::time::SystemTime::UNIX_EPOCH).unwrap());
    let bound = tinystore::ONCE_POLL_POSTGRES + Duration::from_millis(1500); // slack for a loaded machine
    assert!(after_kill <= bound, "ran {after_kill:?} after the kill, over {bound:?}");
    let store = Store::open(&location).unwrap();
    let jobs = store.once::<String>("jobs").open().unwrap();
    assert_eq!(jobs.get("k").unwrap().as_deref(), Some("from the second"));
    assert_eq!(jobs.run("k", || Ok("a third".to_owned())).unwrap(), "from the second");
}
