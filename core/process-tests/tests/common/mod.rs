//! What the process tests share: the helper they start, and how a test
//! that cannot run on this machine says so.
#![allow(dead_code)] // each test file uses some of these

use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The helper binary of this package (`src/child/`).
pub const CHILD: &str = env!("CARGO_BIN_EXE_tinystore-test-child");

/// A command that runs the helper in `role` with `args`.
pub fn child(role: &str, args: &[&std::ffi::OsStr]) -> Command {
    let mut c = Command::new(CHILD);
    c.arg(role).args(args);
    c
}

/// A test that needs what this machine lacks: fails when `CI` is set, so
/// that a CI run cannot pass without it; elsewhere prints why and lets the
/// test return.
pub fn cannot_run_here(why: &str) {
    assert!(std::env::var_os("CI").is_none(), "cannot run here: {why}");
    eprintln!("skipped: {why}");
}

/// Waits for a child at most `within`, so that a run that never ends fails
/// the test instead of hanging it; returns its output.
pub fn finish(mut child: Child, within: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > within {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("a child ran over {within:?}: {out:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// What a child printed after `prefix` on a line.
pub fn said(out: &[u8], prefix: &str) -> Option<String> {
    String::from_utf8_lossy(out)
        .lines()
        .find_map(|l| l.strip_prefix(prefix).map(str::to_owned))
}
