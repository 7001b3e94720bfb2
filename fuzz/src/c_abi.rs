//! The C ABI fuzz check (issue #10): arbitrary bytes drive the exported
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
//! This file is compiled twice: into the fuzz target `c_abi` (over the C
//! ABI's sources built as an rlib, `fuzz/c_abi`), and into the C ABI's own
//! unit tests, where `replay` runs `fuzz/corpus/c_abi/` under `cargo test`.
//! Either way the `ts_*` items are found at the crate root.

use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{
    TsAllowance, TsBucket, TsCounters, TsEntry, TsError, TsErrorView, TsMaintenance, TsOnce, TsPage, TsQuota,
    TsRateLimit, TsStore, TsStoreOptions, TsValue, TsWriteOptions, ts_bucket_clear, ts_bucket_create, ts_bucket_delete,
    ts_bucket_expire, ts_bucket_free, ts_bucket_get, ts_bucket_has, ts_bucket_list, ts_bucket_open, ts_bucket_set,
    ts_bucket_take, ts_bytes_free, ts_cancel_fire, ts_cancel_free, ts_cancel_new, ts_claim_abandon, ts_claim_keep,
    ts_counters_add, ts_counters_free, ts_counters_get, ts_counters_open, ts_error_free, ts_error_view, ts_key_error,
    ts_once_begin, ts_once_free, ts_once_get, ts_once_open, ts_page_entry, ts_page_free, ts_page_len, ts_page_next,
    ts_parse_duration, ts_parse_rate, ts_quota_free, ts_quota_open, ts_quota_use, ts_rate_limit_allow,
    ts_rate_limit_free, ts_rate_limit_open, ts_snapshot_close, ts_snapshot_free, ts_snapshot_get, ts_snapshot_open,
    ts_store_close, ts_store_free, ts_store_maintain, ts_store_open, ts_store_set_clock, ts_tx_begin, ts_tx_commit,
    ts_tx_free, ts_tx_get, ts_tx_hold_thread, ts_tx_rollback, ts_tx_set,
};

/// The codes of the error table: `TS_OK` to `TS_CANCELLED`.
const CODES: std::ops::RangeInclusive<i32> = 0..=8;
const TS_OK: i32 = 0;
const TS_INVALID: i32 = 1;
const TS_CLOSED: i32 = 5;
/// The test clock's start, ms since the epoch (2026-10-20).
const START_MS: i64 = 1_792_486_800_000;
/// The most calls one input makes, so that an input's cost stays bounded.
const MAX_CALLS: usize = 48;

/// Reads the fuzz input as the arguments of calls; past its end, zeros.
struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    fn done(&self) -> bool {
        self.data.is_empty()
    }

    fn u8(&mut self) -> u8 {
        let Some((&b, rest)) = self.data.split_first() else {
            return 0;
        };
        self.data = rest;
        b
    }

    fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// Eight bytes as an integer, or (often) one of the values at the edges.
    fn i64(&mut self) -> i64 {
        match self.u8() % 8 {
            0 => 0,
            1 => i64::MIN,
            2 => i64::MAX,
            3 => -1,
            4 => i64::from(self.u8()),
            5 => 60_000_000_000, // a minute in ns
            _ => {
                let mut b = [0u8; 8];
                for x in &mut b {
                    *x = self.u8();
                }
                i64::from_le_bytes(b)
            }
        }
    }

    /// A kind code: the table's, and one either side.
    fn kind(&mut self) -> i32 {
        i32::from(self.u8() % 12) - 1
    }

    /// One length byte and that many bytes (cut short at the end).
    fn bytes(&mut self) -> &'a [u8] {
        let n = (self.u8() as usize).min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }

    /// Owners as the ABI reads them (u32 lengths and bytes), often wrong.
    fn owners(&mut self) -> Vec<u8> {
        match self.u8() % 4 {
            0 | 1 => Vec::new(),
            2 => {
                let mut out = Vec::new();
                for _ in 0..=self.u8() % 2 {
                    let o = self.bytes();
                    out.extend_from_slice(&(o.len() as u32).to_le_bytes());
                    out.extend_from_slice(o);
                }
                out
            }
            _ => self.bytes().to_vec(),
        }
    }

    /// A key: mostly short text the calls share, sometimes any bytes.
    fn key(&mut self) -> Vec<u8> {
        match self.u8() % 4 {
            0 => b"k".to_vec(),
            1 => vec![b'a' + self.u8() % 4],
            2 => Vec::new(),
            _ => self.bytes().to_vec(),
        }
    }
}

/// A pointer to `b` and its length; sometimes null with a length, which the
/// ABI reads as empty.
fn ptr(b: &[u8], null_it: bool) -> (*const u8, usize) {
    if null_it {
        (null(), b.len())
    } else {
        (b.as_ptr(), b.len())
    }
}

/// Checks the code of a call and the error it left, and frees the error.
fn checked(what: &str, code: i32, err: *mut TsError, asked: bool) -> i32 {
    assert!(CODES.contains(&code), "{what}: code {code} is not in the table");
    if !asked {
        assert!(err.is_null(), "{what}: an error was written through a null err");
        return code;
    }
    if code == TS_OK {
        assert!(err.is_null(), "{what}: succeeded and left an error");
        return code;
    }
    assert!(!err.is_null(), "{what}: failed with {code} and no error");
    let mut view = TsErrorView {
        code: -1,
        message: null(),
        message_len: 0,
        bucket: null(),
        bucket_len: 0,
        path: null(),
        path_len: 0,
    };
    unsafe { ts_error_view(err, &mut view) };
    assert_eq!(view.code, code, "{what}: the error's code differs from the call's");
    let text = |p: *const u8, n: usize| -> String {
        if p.is_null() {
            return String::new();
        }
        let b = unsafe { std::slice::from_raw_parts(p, n) };
        std::str::from_utf8(b)
            .unwrap_or_else(|_| panic!("{what}: the error holds text that is not UTF-8"))
            .to_string()
    };
    let message = text(view.message, view.message_len);
    text(view.bucket, view.bucket_len);
    text(view.path, view.path_len);
    assert!(!message.is_empty(), "{what}: an error with no message");
    assert!(!message.contains("a panic inside tinystore"), "{what}: {message}");
    unsafe { ts_error_free(err) };
    code
}

/// Calls `f` with an `err` out pointer (or null, as the input says) and checks what it left.
fn call(input: &mut Input, what: &str, f: impl FnOnce(*mut *mut TsError) -> i32) -> i32 {
    let asked = !input.u8().is_multiple_of(8);
    let mut err: *mut TsError = null_mut();
    let code = f(if asked { &mut err } else { null_mut() });
    checked(what, code, err, asked)
}

/// Frees the bytes a value handed out.
fn free_value(v: &TsValue) {
    unsafe { ts_bytes_free(v.bytes, v.len) };
}

fn value() -> TsValue {
    TsValue {
        kind: 0,
        integer: 0,
        bytes: null_mut(),
        len: 0,
    }
}

fn entry() -> TsEntry {
    TsEntry {
        value: value(),
        version: 0,
        has_expiry: false,
        expires_ms: 0,
        key: null(),
        key_len: 0,
    }
}

fn allowance() -> TsAllowance {
    // SAFETY: plain integers, bools and byte arrays, for which zero is valid.
    unsafe { std::mem::zeroed() }
}

/// Whether `name` is a handle name (KV-2): `[a-z0-9][a-z0-9_-]{0,63}`.
fn is_name(name: &[u8]) -> bool {
    (1..=64).contains(&name.len())
        && (name[0].is_ascii_lowercase() || name[0].is_ascii_digit())
        && name
            .iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
}

/// The handles of one run.
struct Handles {
    store: *mut TsStore,
    bucket: *mut TsBucket,
    counters: *mut TsCounters,
    limit: *mut TsRateLimit,
    quota: *mut TsQuota,
    once: *mut TsOnce,
    closed: bool,
}

impl Handles {
    /// The bucket the input picks: the open one, or null.
    fn bucket(&self, input: &mut Input) -> *const TsBucket {
        if input.u8().is_multiple_of(8) {
            null()
        } else {
            self.bucket
        }
    }
}

/// A directory of its own for each run: in /dev/shm when there is one, so
/// that fuzzing is not bound by fsync.
fn scratch() -> PathBuf {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let shm = PathBuf::from("/dev/shm");
    let base = if shm.is_dir() { shm } else { std::env::temp_dir() };
    base.join(format!(
        "tinystore-c-abi-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ))
}

fn open_store(dir: &str) -> *mut TsStore {
    let options = TsStoreOptions {
        manual: true,
        clock_ms: START_MS,
        readers: 1,
        memory: 0,
        mmap_size: 0,
    };
    let mut store = null_mut();
    let mut err = null_mut();
    let code = unsafe { ts_store_open(dir.as_ptr(), dir.len(), &options, &mut store, &mut err) };
    checked("open", code, err, true);
    assert_eq!(code, TS_OK, "the store did not open");
    store
}

fn open_bucket(store: *const TsStore, name: &str) -> *mut TsBucket {
    let mut b = null_mut();
    let code = unsafe { ts_bucket_open(store, name.as_ptr(), name.len(), 0, false, 0, false, &mut b, null_mut()) };
    assert_eq!(code, TS_OK, "bucket {name} did not open");
    b
}

/// The canary: a key set before the run, in a bucket no call of the run names.
const CANARY: &[u8] = b"kept";

fn read_canary(store: *const TsStore) {
    let b = open_bucket(store, "canary");
    let mut out = entry();
    let mut found = false;
    let mut err = null_mut();
    let code = unsafe { ts_bucket_get(b, null(), 0, b"k".as_ptr(), 1, 3, &mut out, &mut found, &mut err) };
    checked("canary get", code, err, true);
    assert!(code == TS_OK && found, "the canary is gone");
    let got = unsafe { std::slice::from_raw_parts(out.value.bytes, out.value.len) }.to_vec();
    free_value(&out.value);
    assert_eq!(got, CANARY, "the canary changed");
    unsafe { ts_bucket_free(b) };
}

/// Runs one input against a fresh store. Panics on any broken promise.
pub fn c_abi(data: &[u8]) {
    let dir = scratch();
    let dir_text = dir.to_str().expect("a UTF-8 temp dir").to_string();
    let store = open_store(&dir_text);
    let canary = open_bucket(store, "canary");
    let code = unsafe {
        ts_bucket_set(
            canary,
            null(),
            0,
            b"k".as_ptr(),
            1,
            3,
            0,
            CANARY.as_ptr(),
            CANARY.len(),
            null(),
            null(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(code, TS_OK);
    unsafe { ts_bucket_free(canary) };
    let mut h = Handles {
        store,
        bucket: open_bucket(store, "b"),
        counters: null_mut(),
        limit: null_mut(),
        quota: null_mut(),
        once: null_mut(),
        closed: false,
    };
    unsafe {
        assert_eq!(
            ts_counters_open(store, b"c".as_ptr(), 1, 0, false, 0, false, &mut h.counters, null_mut()),
            0
        );
        assert_eq!(
            ts_rate_limit_open(
                store,
                b"r".as_ptr(),
                1,
                5,
                60_000_000_000,
                0,
                false,
                &mut h.limit,
                null_mut()
            ),
            0
        );
        let names = [1u8, 0, 0, 0, b'd'];
        assert_eq!(
            ts_quota_open(
                store,
                b"q".as_ptr(),
                1,
                names.as_ptr(),
                names.len(),
                &3,
                &60_000_000_000,
                1,
                &mut h.quota,
                null_mut()
            ),
            0
        );
        assert_eq!(
            ts_once_open(store, b"o".as_ptr(), 1, 0, false, &mut h.once, null_mut()),
            0
        );
    }

    let mut input = Input { data };
    for _ in 0..MAX_CALLS {
        if input.done() {
            break;
        }
        step(&mut h, &mut input);
    }

    unsafe {
        ts_bucket_free(h.bucket);
        ts_counters_free(h.counters);
        ts_rate_limit_free(h.limit);
        ts_quota_free(h.quota);
        ts_once_free(h.once);
        let mut err = null_mut();
        let code = ts_store_close(h.store, &mut err);
        checked("close", code, err, true);
        ts_store_free(h.store);
    }
    // Reopened, the store reads: what the run could not touch is as it was.
    let again = open_store(&dir_text);
    read_canary(again);
    unsafe {
        ts_store_close(again, null_mut());
        ts_store_free(again);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// One call, chosen and filled in by the input.
fn step(h: &mut Handles, input: &mut Input) {
    let op = input.u8() % 20;
    // A write or read on the store: after close, never a success.
    let touches = |code: i32, what: &str, closed: bool| {
        if closed {
            assert_ne!(code, TS_OK, "{what} succeeded on a closed store");
        }
    };
    let closed = h.closed;
    match op {
        0 => {
            // Opening a bucket of any name, ttl and idle.
            let name = input.bytes();
            let (np, nl) = ptr(name, input.u8().is_multiple_of(16));
            let (ttl, has_ttl, idle, has_idle) = (input.i64(), input.bool(), input.i64(), input.bool());
            let mut b = null_mut();
            let out = if input.u8().is_multiple_of(8) {
                null_mut()
            } else {
                &mut b as *mut _
            };
            let code = call(input, "bucket_open", |err| unsafe {
                ts_bucket_open(h.store, np, nl, ttl, has_ttl, idle, has_idle, out, err)
            });
            if code == TS_OK {
                let name = if np.is_null() { &[][..] } else { name };
                assert!(is_name(name), "bucket_open accepted the name {name:?}");
                assert!(
                    (!has_ttl || ttl > 0) && (!has_idle || idle > 0),
                    "a span not above 0 was accepted"
                );
                assert!(!(has_ttl && has_idle), "ttl and idle were both accepted");
            }
            touches(code, "bucket_open", closed);
            unsafe { ts_bucket_free(b) };
        }
        1 => {
            // A set of any kind, value, options and cancel.
            let b = h.bucket(input);
            let owners = input.owners();
            let key = input.key();
            let (kind, integer) = (input.kind(), input.i64());
            let v = input.bytes();
            let (vp, vl) = ptr(v, input.u8().is_multiple_of(16));
            let opts = TsWriteOptions {
                expiry: input.kind() % 4,
                expiry_value: input.i64(),
                has_if_version: input.bool(),
                if_version: input.i64(),
            };
            let o = if input.bool() { &opts as *const _ } else { null() };
            let cancel = if input.u8().is_multiple_of(8) {
                ts_cancel_new()
            } else {
                null_mut()
            };
            if !cancel.is_null() && input.bool() {
                unsafe { ts_cancel_fire(cancel) };
            }
            let mut version = 0i64;
            let code = call(input, "set", |err| unsafe {
                ts_bucket_set(
                    b,
                    owners.as_ptr(),
                    owners.len(),
                    key.as_ptr(),
                    key.len(),
                    kind,
                    integer,
                    vp,
                    vl,
                    o,
                    cancel,
                    &mut version,
                    err,
                )
            });
            unsafe { ts_cancel_free(cancel) };
            if code == TS_OK {
                assert!(
                    !b.is_null() && !key.is_empty(),
                    "set accepted a null bucket or an empty key"
                );
                assert!((0..=8).contains(&kind), "set accepted the value kind {kind}");
                assert!(
                    kind != 4 || integer == 0 || integer == 1,
                    "set accepted the bool {integer}"
                );
                assert!(version > 0, "set answered version {version}");
            }
            touches(code, "set", closed);
        }
        2 | 3 => {
            // get, or take, as any kind.
            let b = h.bucket(input);
            let owners = input.owners();
            let key = input.key();
            let want = input.kind();
            let mut out = entry();
            let mut found = false;
            let take = op == 3;
            let code = call(input, if take { "take" } else { "get" }, |err| unsafe {
                if take {
                    ts_bucket_take(
                        b,
                        owners.as_ptr(),
                        owners.len(),
                        key.as_ptr(),
                        key.len(),
                        null(),
                        want,
                        None,
                        0,
                        null(),
                        &mut out,
                        &mut found,
                        err,
                    )
                } else {
                    ts_bucket_get(
                        b,
                        owners.as_ptr(),
                        owners.len(),
                        key.as_ptr(),
                        key.len(),
                        want,
                        &mut out,
                        &mut found,
                        err,
                    )
                }
            });
            if code == TS_OK && found {
                assert!((0..=9).contains(&want), "read as the kind {want}");
                assert!(
                    want == 9 || out.value.kind == want,
                    "asked for {want}, got {}",
                    out.value.kind
                );
                assert!(out.version > 0);
                free_value(&out.value);
            }
            touches(code, "get", closed);
        }
        4 => {
            // has, delete, expire, clear, create.
            let b = h.bucket(input);
            let owners = input.owners();
            let key = input.key();
            let which = input.u8() % 5;
            let opts = TsWriteOptions {
                expiry: input.kind() % 4,
                expiry_value: input.i64(),
                has_if_version: input.bool(),
                if_version: input.i64(),
            };
            let mut found = false;
            let mut out = entry();
            let mut written = false;
            let mut version = 0;
            let kind = input.kind();
            let want = input.kind();
            let code = call(input, "has/delete/expire/clear/create", |err| unsafe {
                let (op, ol, kp, kl) = (owners.as_ptr(), owners.len(), key.as_ptr(), key.len());
                match which {
                    0 => ts_bucket_has(b, op, ol, kp, kl, &mut found, err),
                    1 => ts_bucket_delete(b, op, ol, kp, kl, &opts, null(), &mut found, err),
                    2 => ts_bucket_expire(b, op, ol, kp, kl, &opts, null(), &mut found, err),
                    3 => ts_bucket_clear(b, op, ol, null(), err),
                    _ => ts_bucket_create(
                        b,
                        op,
                        ol,
                        kp,
                        kl,
                        kind,
                        7,
                        kp,
                        kl,
                        &opts,
                        want,
                        null(),
                        &mut written,
                        &mut version,
                        &mut out,
                        err,
                    ),
                }
            });
            if code == TS_OK && which == 4 && !written {
                free_value(&out.value);
            }
            touches(code, "has/delete/expire/clear/create", closed);
        }
        5 => {
            // A page, read at any index, then freed.
            let b = h.bucket(input);
            let owners = input.owners();
            let after = input.key();
            let has_after = input.bool();
            let limit = match input.u8() % 4 {
                0 => 0,
                1 => 1001,
                2 => u32::MAX,
                _ => u32::from(input.u8()),
            };
            let want = input.kind();
            let mut page: *mut TsPage = null_mut();
            let code = call(input, "list", |err| unsafe {
                ts_bucket_list(
                    b,
                    owners.as_ptr(),
                    owners.len(),
                    after.as_ptr(),
                    after.len(),
                    has_after,
                    limit,
                    want,
                    &mut page,
                    err,
                )
            });
            if code == TS_OK {
                assert!(
                    (1..=1000).contains(&limit) || limit == 0,
                    "list accepted a page of {limit}"
                );
                let n = unsafe { ts_page_len(page) };
                for i in [0, n.saturating_sub(1), n, n + 1, usize::MAX] {
                    let mut e = entry();
                    let there = unsafe { ts_page_entry(page, i, &mut e) };
                    assert_eq!(there, i < n, "entry {i} of a page of {n}");
                }
                let (mut k, mut kl) = (null(), 0usize);
                unsafe { ts_page_next(page, &mut k, &mut kl) };
                unsafe { ts_page_next(page, null_mut(), null_mut()) };
            }
            unsafe { ts_page_free(page) };
            touches(code, "list", closed);
        }
        6 => {
            // A counter: add or max any amount.
            let c = if input.u8().is_multiple_of(8) {
                null()
            } else {
                h.counters as *const _
            };
            let owners = input.owners();
            let key = input.key();
            let (n, max) = (input.i64(), input.bool());
            let mut got = 0i64;
            let code = call(input, "counters_add", |err| unsafe {
                if input_is_get(n) {
                    ts_counters_get(c, owners.as_ptr(), owners.len(), key.as_ptr(), key.len(), &mut got, err)
                } else {
                    ts_counters_add(
                        c,
                        owners.as_ptr(),
                        owners.len(),
                        key.as_ptr(),
                        key.len(),
                        n,
                        max,
                        null(),
                        &mut got,
                        err,
                    )
                }
            });
            touches(code, "counters", closed);
        }
        7 => {
            // A rate limit's allow of any n, or a quota's use of any op.
            let owners = input.owners();
            let key = input.key();
            let n = input.i64() as u64;
            let mut a = allowance();
            let quota_op = input.kind() - 1;
            let peek = input.bool();
            let on_limit = input.bool();
            let code = call(input, "allow/use", |err| unsafe {
                if on_limit {
                    ts_rate_limit_allow(
                        h.limit,
                        owners.as_ptr(),
                        owners.len(),
                        key.as_ptr(),
                        key.len(),
                        n,
                        peek,
                        &mut a,
                        err,
                    )
                } else {
                    ts_quota_use(
                        h.quota,
                        owners.as_ptr(),
                        owners.len(),
                        key.as_ptr(),
                        key.len(),
                        quota_op,
                        n,
                        null(),
                        &mut a,
                        err,
                    )
                }
            });
            if code == TS_OK {
                assert!(a.window_count <= 8);
                assert!(
                    on_limit || (0..=3).contains(&quota_op),
                    "quota_use accepted the op {quota_op}"
                );
            }
            touches(code, "allow/use", closed);
        }
        8 => {
            // once: begin, then keep any value or abandon.
            let owners = input.owners();
            let key = input.key();
            let want = input.kind();
            let mut kept = false;
            let mut v = value();
            let mut claim = null_mut();
            let code = call(input, "once_begin", |err| unsafe {
                ts_once_begin(
                    h.once,
                    owners.as_ptr(),
                    owners.len(),
                    key.as_ptr(),
                    key.len(),
                    want,
                    null(),
                    &mut kept,
                    &mut v,
                    &mut claim,
                    err,
                )
            });
            if code == TS_OK && kept {
                free_value(&v);
                assert!(claim.is_null(), "a kept answer with a claim");
            } else if code == TS_OK {
                assert!(!claim.is_null(), "no answer and no claim");
                if input.bool() {
                    let (kind, integer) = (input.kind(), input.i64());
                    let bytes = input.bytes();
                    call(input, "claim_keep", |err| unsafe {
                        ts_claim_keep(claim, kind, integer, bytes.as_ptr(), bytes.len(), err)
                    });
                } else {
                    unsafe { ts_claim_abandon(claim) };
                }
            }
            let mut found = false;
            let mut got = value();
            let code2 = call(input, "once_get", |err| unsafe {
                ts_once_get(
                    h.once,
                    owners.as_ptr(),
                    owners.len(),
                    key.as_ptr(),
                    key.len(),
                    want,
                    &mut got,
                    &mut found,
                    err,
                )
            });
            if code2 == TS_OK && found {
                free_value(&got);
            }
            touches(code, "once_begin", closed);
        }
        9 => {
            // Durations and rates of any bytes.
            let text = input.bytes();
            let (tp, tl) = ptr(text, input.u8().is_multiple_of(16));
            let mut ns = 0i64;
            let code = call(input, "parse_duration", |err| unsafe {
                ts_parse_duration(tp, tl, &mut ns, err)
            });
            if code == TS_OK {
                assert!(ns >= 0, "a duration of {ns} ns");
            }
            let (mut count, mut per) = (0u64, 0i64);
            let code = call(input, "parse_rate", |err| unsafe {
                ts_parse_rate(tp, tl, &mut count, &mut per, err)
            });
            if code == TS_OK {
                assert!(count > 0 && per > 0, "a rate of {count} per {per} ns");
            }
        }
        10 => {
            // An error the caller builds, of any code.
            let name = input.bytes();
            let owners = input.owners();
            let key = input.key();
            let code_in = input.kind() - 1;
            let message = input.bytes();
            let code = call(input, "key_error", |err| unsafe {
                ts_key_error(
                    name.as_ptr(),
                    name.len(),
                    owners.as_ptr(),
                    owners.len(),
                    key.as_ptr(),
                    key.len(),
                    code_in,
                    message.as_ptr(),
                    message.len(),
                    err,
                )
            });
            assert_ne!(code, TS_OK, "key_error succeeded");
            if (1..=8).contains(&code_in) && std::str::from_utf8(name).is_ok() && code != TS_INVALID {
                assert_eq!(code, code_in, "key_error answered another code");
            }
        }
        11 => {
            // A transaction: a set and a get, commit or roll back, then a call after its end.
            let mut tx = null_mut();
            let code = call(input, "tx_begin", |err| unsafe {
                ts_tx_begin(h.store, null(), &mut tx, err)
            });
            touches(code, "tx_begin", closed);
            if code != TS_OK {
                return;
            }
            let b = h.bucket(input);
            if input.bool() {
                // The transaction's thread, marked, is refused a write outside
                // it and a transaction inside it at once: each would wait for
                // the writer this transaction holds, until its limit.
                unsafe { ts_tx_hold_thread(tx) };
                let code = call(input, "set outside a held transaction", |err| unsafe {
                    ts_bucket_set(
                        b,
                        null(),
                        0,
                        b"k".as_ptr(),
                        1,
                        3,
                        0,
                        b"v".as_ptr(),
                        1,
                        null(),
                        null(),
                        null_mut(),
                        err,
                    )
                });
                assert_eq!(code, TS_INVALID, "a write outside a held transaction was not refused");
                let mut inner = null_mut();
                let code = call(input, "tx_begin inside a held transaction", |err| unsafe {
                    ts_tx_begin(h.store, null(), &mut inner, err)
                });
                assert_eq!(code, TS_INVALID, "a transaction inside a held one was not refused");
            }
            let key = input.key();
            let (kind, integer) = (input.kind(), input.i64());
            let mut version = 0;
            call(input, "tx_set", |err| unsafe {
                ts_tx_set(
                    tx,
                    b,
                    null(),
                    0,
                    key.as_ptr(),
                    key.len(),
                    kind,
                    integer,
                    key.as_ptr(),
                    key.len(),
                    null(),
                    &mut version,
                    err,
                )
            });
            let mut out = entry();
            let mut found = false;
            let want = input.kind();
            let code = call(input, "tx_get", |err| unsafe {
                ts_tx_get(
                    tx,
                    b,
                    null(),
                    0,
                    key.as_ptr(),
                    key.len(),
                    want,
                    &mut out,
                    &mut found,
                    err,
                )
            });
            if code == TS_OK && found {
                free_value(&out.value);
            }
            if input.bool() {
                call(input, "tx_commit", |err| unsafe { ts_tx_commit(tx, err) });
            } else {
                unsafe { ts_tx_rollback(tx) };
            }
            let code = call(input, "tx_get after the end", |err| unsafe {
                ts_tx_get(tx, b, null(), 0, b"k".as_ptr(), 1, 3, &mut out, &mut found, err)
            });
            assert_ne!(code, TS_OK, "a call on an ended transaction succeeded");
            unsafe { ts_tx_rollback(tx) };
            unsafe { ts_tx_free(tx) };
        }
        12 => {
            // A snapshot: a read, then a read after it is closed.
            let mut snap = null_mut();
            let code = call(input, "snapshot_open", |err| unsafe {
                ts_snapshot_open(h.store, &mut snap, err)
            });
            touches(code, "snapshot_open", closed);
            if code != TS_OK {
                return;
            }
            let b = h.bucket(input);
            let key = input.key();
            let want = input.kind();
            let mut out = entry();
            let mut found = false;
            let code = call(input, "snapshot_get", |err| unsafe {
                ts_snapshot_get(
                    snap,
                    b,
                    null(),
                    0,
                    key.as_ptr(),
                    key.len(),
                    want,
                    &mut out,
                    &mut found,
                    err,
                )
            });
            if code == TS_OK && found {
                free_value(&out.value);
            }
            unsafe { ts_snapshot_close(snap) };
            let code = call(input, "snapshot_get after close", |err| unsafe {
                ts_snapshot_get(
                    snap,
                    h.bucket,
                    null(),
                    0,
                    b"k".as_ptr(),
                    1,
                    3,
                    &mut out,
                    &mut found,
                    err,
                )
            });
            assert_ne!(code, TS_OK, "a read on a closed snapshot succeeded");
            unsafe { ts_snapshot_free(snap) };
        }
        13 => {
            // The test clock set anywhere, back included.
            let ms = input.i64();
            let code = call(input, "set_clock", |err| unsafe {
                ts_store_set_clock(h.store, ms, err)
            });
            if code == TS_OK {
                assert!(ms >= START_MS, "the clock was set back to {ms}");
            }
        }
        14 => {
            let mut m = TsMaintenance {
                flushed: 0,
                renewed: 0,
                cleared: 0,
                expired: 0,
                more: false,
            };
            let out = if input.bool() { &mut m as *mut _ } else { null_mut() };
            let code = call(input, "maintain", |err| unsafe { ts_store_maintain(h.store, out, err) });
            touches(code, "maintain", closed);
        }
        15 => {
            // Handles of the other kinds, of any name and options.
            let name = input.bytes();
            let (a, b, c) = (input.i64(), input.bool(), input.i64());
            let which = input.u8() % 4;
            let code = call(input, "open a handle", |err| unsafe {
                match which {
                    0 => {
                        let mut out = null_mut();
                        let code = ts_counters_open(
                            h.store,
                            name.as_ptr(),
                            name.len(),
                            a,
                            b,
                            c,
                            input_is_get(c),
                            &mut out,
                            err,
                        );
                        ts_counters_free(out);
                        code
                    }
                    1 => {
                        let mut out = null_mut();
                        let code = ts_rate_limit_open(
                            h.store,
                            name.as_ptr(),
                            name.len(),
                            a as u64,
                            c,
                            a as u64 >> 1,
                            b,
                            &mut out,
                            err,
                        );
                        ts_rate_limit_free(out);
                        code
                    }
                    2 => {
                        let mut out = null_mut();
                        let limits = [a as u64, c as u64];
                        let spans = [c, a];
                        let count = (a as usize) % 3;
                        let code = ts_quota_open(
                            h.store,
                            b"q2".as_ptr(),
                            2,
                            name.as_ptr(),
                            name.len(),
                            limits.as_ptr(),
                            spans.as_ptr(),
                            count,
                            &mut out,
                            err,
                        );
                        ts_quota_free(out);
                        code
                    }
                    _ => {
                        let mut out = null_mut();
                        let code = ts_once_open(h.store, name.as_ptr(), name.len(), a, b, &mut out, err);
                        ts_once_free(out);
                        code
                    }
                }
            });
            if code == TS_OK && which != 2 {
                assert!(is_name(name), "a handle opened with the name {name:?}");
            }
            touches(code, "open a handle", closed);
        }
        16 => {
            // Null handles everywhere: each call is Invalid (or Closed), never a crash.
            let mut found = false;
            let mut out = entry();
            let code = call(input, "get on a null bucket", |err| unsafe {
                ts_bucket_get(null(), null(), 0, b"k".as_ptr(), 1, 3, &mut out, &mut found, err)
            });
            assert_eq!(code, TS_INVALID);
            let code = call(input, "maintain a null store", |err| unsafe {
                ts_store_maintain(null(), null_mut(), err)
            });
            assert_eq!(code, TS_INVALID);
            let mut a = allowance();
            let code = call(input, "allow on a null limit", |err| unsafe {
                ts_rate_limit_allow(null(), null(), 0, b"k".as_ptr(), 1, 1, false, &mut a, err)
            });
            assert_eq!(code, TS_INVALID);
            let code = call(input, "keep a null claim", |err| unsafe {
                ts_claim_keep(null_mut(), 3, 0, null(), 0, err)
            });
            assert_eq!(code, TS_INVALID);
            unsafe {
                ts_bucket_free(null_mut());
                ts_page_free(null_mut());
                ts_claim_abandon(null_mut());
                ts_error_free(null_mut());
                ts_bytes_free(null_mut(), 5);
                ts_cancel_fire(null());
                ts_error_view(null(), null_mut());
            }
        }
        17 => {
            // The store closed under its handles: every later call is refused.
            let code = call(input, "close", |err| unsafe { ts_store_close(h.store, err) });
            assert!(code == TS_OK || code == TS_CLOSED || h.closed);
            h.closed = true;
        }
        _ => {
            // A get of what earlier calls wrote, as every kind.
            let key = input.key();
            for want in 0..=9 {
                let mut out = entry();
                let mut found = false;
                let code = call(input, "get as each kind", |err| unsafe {
                    ts_bucket_get(
                        h.bucket,
                        null(),
                        0,
                        key.as_ptr(),
                        key.len(),
                        want,
                        &mut out,
                        &mut found,
                        err,
                    )
                });
                if code == TS_OK && found {
                    free_value(&out.value);
                }
                touches(code, "get as each kind", closed);
            }
        }
    }
}

/// Whether an amount picks the read form of a call instead (an odd choice
/// taken from a value the input gave anyway).
fn input_is_get(n: i64) -> bool {
    n & 0x100 != 0
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
