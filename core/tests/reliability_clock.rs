//! The clock under jumps (KV-6, KV-10, KV-17): a jump forwards
//! expires exactly the keys that are due and nothing else; the clock never
//! moves back, so no expired key comes back and no version repeats; and
//! versions come from the file, not the clock, so they never repeat across
//! reopens either.
//!
//! The system clock stepping back is tested in a child process whose
//! clock libfaketime moves (Debian's `libfaketime`, which
//! `mk/reliability.mk` installs); without it that test is skipped with
//! the reason printed, and fails when `CI` is set.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tinystore::{Bucket, ErrorKind, ListOptions, Store, Version};

const MS: u64 = 1;
const SEC: u64 = 1000;
const HOUR: u64 = 3_600_000;
const DAY: u64 = 24 * HOUR;
const YEAR: u64 = 365 * DAY;

/// Keys and their ttl in ms (`None`: never expires), on both sides of each jump.
fn spans() -> Vec<(String, Option<u64>)> {
    let mut v: Vec<(String, Option<u64>)> = [
        MS,
        999 * MS,
        SEC,
        SEC + 1,
        59 * SEC,
        HOUR - 1,
        HOUR,
        HOUR + 1,
        DAY,
        10 * YEAR,
        10 * YEAR + 1,
        100 * YEAR,
    ]
    .into_iter()
    .map(|ms| (format!("ttl-{ms}"), Some(ms)))
    .collect();
    v.push(("never".into(), None));
    v
}

/// Checks every key against the time: live exactly when its expiry is
/// after now, with the version it was written at; `list` agrees.
fn check_at(b: &Bucket<i64>, written: &BTreeMap<String, (Version, Option<i64>)>, now: i64, what: &str) {
    let mut live = Vec::new();
    for (k, (v, exp)) in written {
        let due = exp.is_some_and(|e| e <= now);
        let got = b.entry(k).unwrap();
        assert_eq!(got.is_none(), due, "{what}: {k} (expires {exp:?}, now {now})");
        assert_eq!(b.has(k).unwrap(), !due, "{what}: has {k}");
        if let Some(e) = got {
            assert_eq!(e.version, *v, "{what}: {k} kept its version");
            live.push(k.clone());
        }
    }
    let listed: Vec<String> = b
        .list(&ListOptions {
            after: None,
            limit: Some(1000),
        })
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.key.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, live, "{what}: list");
}

#[test]
fn kv17_a_clock_jump_forwards_expires_what_is_due_and_nothing_else() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let start = store.clock().now_millis();
    let mut written = BTreeMap::new();
    for (i, (k, ttl)) in spans().into_iter().enumerate() {
        let v = match ttl {
            Some(ms) => b.key(&k).ttl(Duration::from_millis(ms)).set(&(i as i64)),
            None => b.set(&k, &(i as i64)),
        }
        .unwrap();
        written.insert(k, (v, ttl.map(|ms| start + ms as i64)));
    }
    check_at(&b, &written, start, "before any jump");
    let mut expired_so_far = 0;
    for jump in [MS, 998 * MS, MS, 59 * SEC, HOUR, DAY, 10 * YEAR, 100 * YEAR] {
        store.clock().advance(Duration::from_millis(jump)).unwrap();
        let now = store.clock().now_millis();
        let what = format!("after a jump of {jump} ms");
        check_at(&b, &written, now, &what);
        // Maintenance deletes exactly the rows that became due.
        let due = written.values().filter(|(_, e)| e.is_some_and(|e| e <= now)).count();
        assert_eq!(store.maintain().unwrap().expired, due - expired_so_far, "{what}");
        expired_so_far = due;
        check_at(&b, &written, now, &format!("{what}, swept"));
    }
}

#[test]
fn kv17_the_largest_jump_saturates_and_never_moves_the_clock_back() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let v1 = b.key("soon").ttl(Duration::from_secs(1)).set(&1).unwrap();
    b.set("never", &2).unwrap();
    let before = store.clock().now_millis();
    store.clock().advance(Duration::MAX).unwrap();
    let after = store.clock().now_millis();
    assert!(after >= before, "the clock moved back: {before} -> {after}");
    store.clock().advance(Duration::from_secs(1)).unwrap();
    assert!(store.clock().now_millis() >= after, "the clock moved back at its end");
    assert_eq!(b.get("soon").unwrap(), None, "an expired key came back");
    assert_eq!(b.get("never").unwrap(), Some(2));
    // Writes at the end of time: a ttl saturates instead of wrapping.
    let v2 = b.key("late").ttl(Duration::MAX).set(&3).unwrap();
    assert!(v2.get() > v1.get());
    let e = store.clock().set(SystemTime::UNIX_EPOCH).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(b.get("soon").unwrap(), None);
}

#[test]
fn kv10_versions_never_repeat_across_clock_jumps_and_reopens_to_an_earlier_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut versions = Vec::new();
    for round in 0..4u64 {
        // Each run starts its clock earlier than the last one ended, as a
        // machine whose clock was set back would.
        let at = common::start() - Duration::from_secs(3600 * round);
        let store = tinystore::Store::open_with(dir.path(), tinystore::Options::new().test_clock(at)).unwrap();
        let b = store.bucket::<i64>("b").open().unwrap();
        for i in 0..5 {
            versions.push(b.set(format!("k{i}"), &(i as i64)).unwrap().get());
            versions.push(b.key("t").ttl(Duration::from_secs(1)).set(&0).unwrap().get());
            store.clock().advance(Duration::from_secs(7200)).unwrap();
            assert_eq!(b.get("t").unwrap(), None, "round {round}: an expired key came back");
            assert!(b.take("k0").unwrap().is_some() || i > 0);
        }
        store.close().unwrap();
    }
    let mut sorted = versions.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, versions, "versions rise and never repeat: {versions:?}");
}

// ---- the system clock stepping back, under libfaketime ----

const CHILD: &str = "TINYSTORE_CLOCK_CHILD";

fn libfaketime() -> Option<&'static str> {
    [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
}

/// Sets the child's clock: libfaketime reads this file at each call, as
/// "@YYYY-MM-DD hh:mm:ss" (a time that then runs on), which `date` writes.
fn stamp(path: &Path, secs: u64) {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+@%Y-%m-%d %H:%M:%S"])
        .output()
        .unwrap();
    std::fs::write(path, out.stdout).unwrap();
}

/// The child: a store on the system clock, driven step by step by the
/// parent, which moves the clock between steps. Prints `ok <step>` or the
/// failure.
#[test]
fn clock_child() {
    let Ok(dir) = std::env::var(CHILD) else { return };
    let store = Store::open(&dir).unwrap();
    let b = store.bucket::<i64>("b").open().unwrap();
    let stdin = std::io::stdin();
    let mut seen_max = 0i64;
    let mut last_version = 0i64;
    // A restarted child finds the count the last one left.
    let mut kept = b.get("kept").unwrap().unwrap_or(2);
    for line in stdin.lock().lines() {
        let step = line.unwrap();
        let now = store.clock().now_millis();
        assert!(
            now >= seen_max,
            "{step}: the store's clock moved back: {seen_max} -> {now}"
        );
        seen_max = now;
        match step.as_str() {
            "write" => {
                let v = b.key("short").ttl(Duration::from_secs(60)).set(&1).unwrap();
                assert!(v.get() > last_version);
                last_version = v.get();
                b.set("kept", &2).unwrap();
            }
            "expired" | "still-expired" => {
                assert_eq!(b.get("short").unwrap(), None, "{step}: an expired key came back");
                assert!(!b.has("short").unwrap(), "{step}");
                assert_eq!(b.take("short").unwrap(), None, "{step}");
                assert!(!b.expire("short", Duration::from_secs(60)).unwrap(), "{step}");
                let keys: Vec<_> = b.all().map(|e| e.unwrap().key).collect();
                assert_eq!(keys.len(), 1, "{step}: only kept is listed");
                assert_eq!(b.get("kept").unwrap(), Some(kept));
                kept += 1;
                let v = b.set("kept", &kept).unwrap();
                assert!(v.get() > last_version, "{step}: a version repeated");
                last_version = v.get();
            }
            _ => panic!("unknown step {step}"),
        }
        println!("ok {step}");
        std::io::stdout().flush().unwrap();
    }
    store.close().unwrap();
}

/// Runs a child on the store in `dir` through `steps` (name, clock in s);
/// panics with its stderr unless it passes them all.
fn run_child(lib: &str, dir: &Path, steps: &[(&str, u64)]) {
    let stamp_file = dir.join("faketime");
    stamp(&stamp_file, steps[0].1);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "clock_child", "--nocapture", "--test-threads=1"])
        .env(CHILD, dir.join("store"))
        .env("LD_PRELOAD", lib)
        .env("FAKETIME_TIMESTAMP_FILE", &stamp_file)
        .env("FAKETIME_NO_CACHE", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("TZ", "UTC")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_child = child.stdin.take().unwrap();
    let mut from_child = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut step = |name: &str, at: u64| {
        stamp(&stamp_file, at);
        writeln!(to_child, "{name}").unwrap();
        to_child.flush().unwrap();
        loop {
            match from_child.next() {
                Some(Ok(l)) if l.contains(&format!("ok {name}")) => return true,
                Some(Ok(_)) => continue,
                _ => return false,
            }
        }
    };
    let mut passed = 0;
    for &(name, at) in steps {
        if !step(name, at) {
            break;
        }
        passed += 1;
    }
    drop(to_child);
    let out = child.wait_with_output().unwrap();
    assert!(
        passed == steps.len() && out.status.success(),
        "the child failed after {passed} steps:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn kv17_system_clock_stepping_back_revives_no_key_and_repeats_no_version() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let Some(lib) = libfaketime() else {
        let why = "libfaketime is not installed (apt-get install libfaketime; mk/reliability.mk does it)";
        assert!(std::env::var("CI").is_err(), "{why}");
        eprintln!("skipped: {why}");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let base = common::start().duration_since(UNIX_EPOCH).unwrap().as_secs();
    run_child(
        lib,
        dir.path(),
        &[
            ("write", base),
            ("expired", base + 120),          // two minutes on: the 60 s key is due
            ("still-expired", base),          // the clock steps back two minutes
            ("still-expired", base - 86_400), // and a day further
            ("still-expired", base + 30),     // forward again, still before the expiry seen
        ],
    );
    // The program stops, and the clock is set back before it starts again:
    // the file remembers how late it was, so the key stays expired.
    run_child(
        lib,
        dir.path(),
        &[("still-expired", base), ("still-expired", base - 86_400)],
    );
    eprintln!(
        "system clock stepped back under libfaketime, while open and across a restart: no key revived, no version repeated"
    );
}
