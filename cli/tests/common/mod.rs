//! What the command's tests share: running `tinystore`, and the
//! PostgreSQL server CI starts (`make pg-start`; make exports
//! TINYSTORE_TEST_PG).
#![allow(dead_code)]

use std::process::Command;

/// Runs the command: whether it succeeded, its stdout and its stderr.
pub fn tinystore(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tinystore"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The server's location; without one the test fails, saying how to start one.
pub fn server() -> String {
    match std::env::var("TINYSTORE_TEST_PG") {
        Ok(s) if !s.is_empty() => s,
        _ => panic!(
            "the PostgreSQL tests need a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then \
             `export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run them through make"
        ),
    }
}

/// A location in a schema of this run's own (`<test>_<name>_<pid>`), so
/// that reruns start empty.
pub fn location(test: &str, name: &str) -> String {
    let sep = if server().contains('?') { '&' } else { '?' };
    format!("{}{sep}schema={test}_{name}_{}", server(), std::process::id())
}
