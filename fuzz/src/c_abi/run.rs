//! One input's run: a fresh store in a scratch directory, a canary key set
//! before the calls, the handles the calls share, then close, reopen and
//! the canary read back. Apart from the calls so that what surrounds every
//! input is read in one place.

use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, Ordering};

use super::call_args::{free_value, get, result, set};
use super::checks::checked;
use super::input::Input;
use super::{MAX_CALLS, START_MS, TS_OK, step};
use crate::{
    TS_OPEN_BUCKET, TS_OPEN_COUNTERS, TS_OPEN_ONCE, TS_OPEN_QUOTA, TS_OPEN_RATE_LIMIT, TsHandle, TsOpen, TsStore,
    TsStoreOptions, ts_handle_free, ts_open, ts_store_close, ts_store_free, ts_store_open,
};

/// The handles of one run.
pub(super) struct Handles {
    pub(super) store: *mut TsStore,
    pub(super) bucket: *mut TsHandle,
    pub(super) counters: *mut TsHandle,
    pub(super) limit: *mut TsHandle,
    pub(super) quota: *mut TsHandle,
    pub(super) once: *mut TsHandle,
    pub(super) closed: bool,
}

impl Handles {
    /// The bucket the input picks: the open one, or null.
    pub(super) fn bucket(&self, input: &mut Input) -> *const TsHandle {
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
        release_read_locks: false,
        share_with_group: false,
    };
    let mut store = null_mut();
    let mut err = null_mut();
    let code = unsafe { ts_store_open(dir.as_ptr(), dir.len(), &options, &mut store, &mut err) };
    checked("open", code, err, true);
    assert_eq!(code, TS_OK, "the store did not open");
    store
}

/// The handle `name` that `how` opens; a quota's windows are `names`
/// (encoded as owners), `limits` and `spans`.
fn open(
    store: *const TsStore,
    name: &str,
    how: TsOpen,
    (names, limits, spans): (&[u8], &[i64], &[i64]),
) -> *mut TsHandle {
    let mut h = null_mut();
    let (n, l, s) = (names.as_ptr(), limits.as_ptr(), spans.as_ptr());
    let code = unsafe {
        ts_open(
            store,
            name.as_ptr(),
            name.len(),
            &how,
            n,
            names.len(),
            l,
            s,
            limits.len(),
            &mut h,
            null_mut(),
        )
    };
    assert_eq!(code, TS_OK, "{name} did not open");
    h
}

/// A handle of `kind` opened with no settings.
fn open_plain(store: *const TsStore, name: &str, kind: i32) -> *mut TsHandle {
    open(
        store,
        name,
        TsOpen {
            kind,
            ..TsOpen::default()
        },
        (&[], &[], &[]),
    )
}

fn open_bucket(store: *const TsStore, name: &str) -> *mut TsHandle {
    open_plain(store, name, TS_OPEN_BUCKET)
}

/// The canary: a key set before the run, in a bucket no call of the run names.
const CANARY: &[u8] = b"kept";

fn read_canary(store: *const TsStore) {
    let b = open_bucket(store, "canary");
    let mut out = result();
    let mut err = null_mut();
    let code = unsafe { get(b, null(), b"k", 3, &mut out, &mut err) };
    checked("canary get", code, err, true);
    assert!(code == TS_OK && out.found, "the canary is gone");
    let v = &out.entry.value;
    let got = unsafe { std::slice::from_raw_parts(v.bytes, v.len) }.to_vec();
    free_value(v);
    assert_eq!(got, CANARY, "the canary changed");
    unsafe { ts_handle_free(b) };
}

/// Runs one input against a fresh store. Panics on any broken promise.
pub fn c_abi(data: &[u8]) {
    let dir = scratch();
    let dir_text = dir.to_str().expect("a UTF-8 temp dir").to_string();
    let store = open_store(&dir_text);
    let canary = open_bucket(store, "canary");
    let code = unsafe { set(canary, null(), b"k", (3, 0, CANARY), null_mut(), null_mut()) };
    assert_eq!(code, TS_OK);
    unsafe { ts_handle_free(canary) };
    let mut h = Handles {
        store,
        bucket: open_bucket(store, "b"),
        counters: open_plain(store, "c", TS_OPEN_COUNTERS),
        limit: open(
            store,
            "r",
            TsOpen {
                kind: TS_OPEN_RATE_LIMIT,
                has_rate: true,
                count: 5,
                per_ns: 60_000_000_000,
                ..TsOpen::default()
            },
            (&[], &[], &[]),
        ),
        quota: open(
            store,
            "q",
            TsOpen {
                kind: TS_OPEN_QUOTA,
                ..TsOpen::default()
            },
            (&[1, 0, 0, 0, b'd'], &[3], &[60_000_000_000]),
        ),
        once: open_plain(store, "o", TS_OPEN_ONCE),
        closed: false,
    };

    let mut input = Input { data };
    for _ in 0..MAX_CALLS {
        if input.done() {
            break;
        }
        step(&mut h, &mut input);
    }

    unsafe {
        ts_handle_free(h.bucket);
        ts_handle_free(h.counters);
        ts_handle_free(h.limit);
        ts_handle_free(h.quota);
        ts_handle_free(h.once);
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
