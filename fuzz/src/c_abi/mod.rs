//! The C ABI fuzz check: arbitrary bytes drive the exported
//! `ts_*` functions of `bindings/c` the ways a Go (or C) caller can get them
//! wrong, within what the ABI's conventions leave to the caller: text that
//! is not UTF-8, names and keys of any bytes and length, owners encoded
//! wrongly, value and `want` kinds out of range, bools that are not 0 or 1,
//! negative and extreme spans, counts and expiry times, null handles, null
//! out and `err` pointers, page indexes past the end, calls on a transaction
//! or snapshot that has ended, cancels fired early, the clock set back, and
//! every handle used after its store was closed.
//!
//! For every call: the code is one of the table's, an error fills `err`
//! with the same code and a UTF-8 message that is not a caught panic, a
//! success leaves `err` null, and bytes handed out are freed by the ABI's
//! own free. After the run the store reopens, and a key set before the run
//! in a bucket no call names reads back unchanged.
//!
//! This module is compiled twice: into the fuzz target `c_abi` (over the C
//! ABI's sources built as an rlib, `fuzz/c_abi`), and into the C ABI's own
//! unit tests, where `replay` runs `fuzz/corpus/c_abi/` under `cargo test`.
//! Either way the `ts_*` items are found at the crate root.
//!
//! Its parts: `input` reads the fuzz bytes as arguments, `call_args` makes
//! the pointers and out structs a call is given, `checks` holds the promises
//! every call is checked against, `run` is one input's store from open to
//! reopen, and the calls themselves are grouped by what they act on:
//! `bucket_calls`, `handle_calls` (counters, rate limits, quotas, once),
//! `store_calls` (transactions, snapshots, clock, maintenance, close) and
//! `no_handle_calls` (parsers, caller-built errors, null handles).

mod bucket_calls;
mod call_args;
mod checks;
mod handle_calls;
mod input;
mod no_handle_calls;
mod run;
mod store_calls;

pub use run::c_abi;

use input::Input;
use run::Handles;

/// The codes of the error table: `TS_OK` to `TS_CANCELLED`.
const CODES: std::ops::RangeInclusive<i32> = 0..=8;
const TS_OK: i32 = 0;
const TS_INVALID: i32 = 1;
const TS_CLOSED: i32 = 5;
/// The test clock's start, ms since the epoch (2026-10-20).
const START_MS: i64 = 1_792_486_800_000;
/// The most calls one input makes, so that an input's cost stays bounded.
const MAX_CALLS: usize = 48;

/// One call, chosen and filled in by the input.
fn step(h: &mut Handles, input: &mut Input) {
    let op = input.u8() % 20;
    let closed = h.closed;
    match op {
        0 => bucket_calls::bucket_open(h, input, closed),
        1 => bucket_calls::set(h, input, closed),
        2 | 3 => bucket_calls::get_or_take(h, input, closed, op),
        4 => bucket_calls::has_delete_expire_clear_create(h, input, closed),
        5 => bucket_calls::list(h, input, closed),
        6 => handle_calls::counters(h, input, closed),
        7 => handle_calls::allow_or_use(h, input, closed),
        8 => handle_calls::once(h, input, closed),
        9 => no_handle_calls::parse_duration_and_rate(input),
        10 => no_handle_calls::key_error(input),
        11 => store_calls::transaction(h, input, closed),
        12 => store_calls::snapshot(h, input, closed),
        13 => store_calls::set_clock(h, input),
        14 => store_calls::maintain(h, input, closed),
        15 => handle_calls::open_other_handle(h, input, closed),
        16 => no_handle_calls::null_handles(input),
        17 => store_calls::close(h, input),
        _ => bucket_calls::get_as_each_kind(h, input, closed),
    }
}

#[cfg(test)]
mod replay {
    use std::path::PathBuf;

    /// Replays `fuzz/corpus/c_abi/` (KV-18: bad input through the C ABI is
    /// refused, never a crash), on stable Rust in `cargo test`.
    #[test]
    fn kv18_c_abi_corpus() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/c_abi");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{} holds no inputs", dir.display());
        for f in &files {
            let data = std::fs::read(f).unwrap();
            let caught = std::panic::catch_unwind(|| super::c_abi(&data));
            assert!(caught.is_ok(), "c_abi: the input {} fails its check", f.display());
        }
        eprintln!("c_abi: {} corpus inputs replayed", files.len());
    }
}
