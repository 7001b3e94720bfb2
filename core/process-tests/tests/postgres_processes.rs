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
