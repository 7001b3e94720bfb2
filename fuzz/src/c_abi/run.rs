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
    TsHandle, TsStore, TsStoreOptions, ts_bucket_open, ts_counters_open, ts_handle_free, ts_once_open, ts_quota_open,
    ts_rate_limit_open, ts_store_close, ts_store_free, ts_store_open,
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

fn open_bucket(store: *const TsStore, name: &str) -> *mut TsHandle {
    let mut b = null_mut();
    let code = unsafe { ts_bucket_open(store, name.as_ptr(), name.len(), 0, false, 0, false, &mut b, null_mut()) };
    assert_eq!(code, TS_OK, "bucket {name} did not open");
    b
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
