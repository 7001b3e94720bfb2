//! App servers on one PostgreSQL database share one budget (KV-12 to
//! KV-14): four processes spend one quota, one counter and one rate limit,
//! and between them pass exactly the quota's limit, count every add, and
//! pass no more than `burst + rate × T` requests of the rate limit in T.
//! Each is the helper's `pg-limits` role (`src/child/postgres_limits.rs`)
//! on the server CI starts.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use tinystore::Store;
use tinystore_process_tests::pg_limits::{self, ADDS, BURST, HOURLY, QUOTA_TRIES, RATE};
use tinystore_process_tests::role;

const SERVERS: usize = 4;

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

fn said(out: &str, prefix: &str) -> u128 {
    out.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in {out:?}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn kv12_kv13_kv14_four_processes_share_one_budget() {
    // A schema of this run's own, so that reruns start empty.
    let schema = format!("kv12_procs_{}", std::process::id());
    let location = format!("{}?schema={schema}", server());
    let seed = Store::open(&location).unwrap();
    let mut children: Vec<_> = (0..SERVERS)
        .map(|_| {
            let mut c = common::child(role::PG_LIMITS, &[location.as_ref()])
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
    let (mut quota_passed, mut rate_passed) = (0, 0);
    let (mut first, mut last) = (u128::MAX, 0);
    for c in children {
        let out = common::finish(c, Duration::from_secs(60));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let out = String::from_utf8(out.stdout).unwrap();
        quota_passed += said(&out, "quota-passed ");
        rate_passed += said(&out, "rate-passed ");
        first = first.min(said(&out, "rate-first "));
        last = last.max(said(&out, "rate-last "));
    }

    assert!(QUOTA_TRIES * SERVERS > HOURLY as usize);
    assert_eq!(quota_passed, u128::from(HOURLY), "the quota passed its limit exactly");
    let p = pg_limits::quota(&seed).peek("u").unwrap();
    assert_eq!(p.window("hourly").unwrap().used, HOURLY);
    assert_eq!(
        p.window("daily").unwrap().used,
        HOURLY,
        "every use counted in both windows"
    );
    assert_eq!(pg_limits::counters(&seed).get("k").unwrap(), ADDS * SERVERS as i64);

    // The database judged every request between the first one's sending and
    // the last one's answer, on this machine's clock.
    let t = last - first;
    let most = u128::from(BURST) + u128::from(RATE) * t / 1_000_000_000 + 1;
    println!("{rate_passed} requests passed in {t} ns; burst + rate x T = {most}");
    assert!(
        rate_passed <= most,
        "{rate_passed} requests passed in {t} ns, over burst + rate x T = {most}"
    );
    // And the limit lets the rate through, not far less.
    let least = u128::from(BURST) + u128::from(RATE) * t / 4_000_000_000;
    assert!(
        rate_passed >= least,
        "only {rate_passed} requests passed in {t} ns, under {least}"
    );
    seed.close().unwrap();
}
