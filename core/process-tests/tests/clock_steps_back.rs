//! The system clock stepping back (KV-6, KV-10, KV-17) under a running
//! process and across a restart: no expired key comes back and no version
//! repeats. The process is the helper's `clock` role
//! (`src/child/clock.rs`), whose clock libfaketime moves between the steps
//! this test sends (Debian's `libfaketime`, which `mk/reliability.mk`
//! installs); without it the test is skipped with the reason printed, and
//! fails when `CI` is set.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::UNIX_EPOCH;

use tinystore_process_tests::{role, start};

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

/// Runs a child on the store in `dir` through `steps` (name, clock in s);
/// panics with its stderr unless it passes them all.
fn run_child(lib: &str, dir: &Path, steps: &[(&str, u64)]) {
    let stamp_file = dir.join("faketime");
    stamp(&stamp_file, steps[0].1);
    let mut child = common::child(role::CLOCK, &[dir.join("store").as_os_str()])
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
    let Some(lib) = libfaketime() else {
        return common::cannot_run_here(
            "libfaketime is not installed (apt-get install libfaketime; mk/reliability.mk does it)",
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let base = start().duration_since(UNIX_EPOCH).unwrap().as_secs();
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
