//! The store: open, close, the test clock and maintenance.

use std::time::SystemTime;

use tinystore::{Error, ErrorKind, Options, Result, Store, from_millis};

use crate::{TsError, guard, put, set, text};

/// An open store.
pub struct TsStore(pub(crate) Store);

/// How a store opens.
#[repr(C)]
pub struct TsStoreOptions {
    /// A test clock starting at `clock_ms`: nothing runs in the background,
    /// and `ts_store_maintain` does the flushes and sweeps.
    pub manual: bool,
    /// The test clock's start, in ms since the Unix epoch (when `manual`).
    pub clock_ms: i64,
    /// Reader connections to keep; 0 for the default.
    pub readers: i64,
    /// A memory budget in bytes (`Options::memory`, at least 1 MiB); 0 for
    /// none.
    pub memory: i64,
    /// Bytes of kv.db each reader maps (`Options::mmap_size`); 0 for the
    /// default (1 GiB, none with a memory budget), `TS_MMAP_NONE` to map
    /// nothing. The core refuses any other negative number, here and in
    /// `readers` and `memory`, as `TS_INVALID` naming it.
    pub mmap_size: i64,
    /// Readers give back their read-mark lock at every read, as plain
    /// SQLite does, instead of keeping it between reads of a quiet file
    /// (`Options::keep_read_locks(false)`). False for the default: kept,
    /// except with a test clock.
    pub release_read_locks: bool,
    /// The directory and files the store creates are its group's too, 0770
    /// and 0660 (`Options::share_with_group`). False for the default: its
    /// owner's only, 0700 and 0600.
    pub share_with_group: bool,
}

/// `mmap_size` for no mapped reads: every page a reader's cache lacks is
/// read with `pread` (a network filesystem, or where a file cut short under
/// a read must be an error, never SIGBUS).
pub const TS_MMAP_NONE: i64 = -1;
const _: () = assert!(TS_MMAP_NONE == tinystore::MMAP_NONE);

/// The writer's groups since the store opened.
#[repr(C)]
pub struct TsGroupStats {
    /// Groups committed (one transaction and one fsync each).
    pub groups: u64,
    /// Writes in them: writes per group is how well concurrent writes share a commit.
    pub writes: u64,
}

/// What one maintenance pass did.
#[repr(C)]
pub struct TsMaintenance {
    /// Keys of counters and rate limits written from memory.
    pub flushed: u64,
    /// Idle keys whose renewal was written.
    pub renewed: u64,
    /// Rows deleted because a clear hid them.
    pub cleared: u64,
    /// Expired rows deleted.
    pub expired: u64,
    /// Whether rows were left for the next pass.
    pub more: bool,
}

pub(crate) unsafe fn store<'a>(s: *const TsStore) -> Result<&'a Store> {
    Ok(&unsafe { crate::handle(s, "store") }?.0)
}

/// Opens the store in the directory `dir` (UTF-8), creating it and kv.db
/// if needed; `options` may be null. The handle goes to `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_open(
    dir: *const u8,
    dir_len: usize,
    options: *const TsStoreOptions,
    out: *mut *mut TsStore,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let dir = unsafe { text(dir, dir_len, "directory") }?;
        let mut o = Options::new();
        if let Some(opts) = unsafe { options.as_ref() } {
            if opts.manual {
                o = o.test_clock(from_millis(opts.clock_ms));
            }
            o = tinystore::sized_options(o, opts.readers, opts.memory, opts.mmap_size)?;
            if opts.release_read_locks {
                o = o.keep_read_locks(false);
            }
            o = o.share_with_group(opts.share_with_group);
        }
        put(out, TsStore(Store::open_with(dir, o)?))
    })
}

/// Writes what memory holds and closes the file; later calls on the store
/// and its handles are `TS_CLOSED`. The handle stays valid until `ts_store_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_close(s: *const TsStore, err: *mut *mut TsError) -> i32 {
    guard(err, || unsafe { store(s) }?.close())
}

/// Frees the handle. The store closes once it and every handle opened on
/// it are freed, if `ts_store_close` did not close it before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_free(s: *mut TsStore) {
    unsafe { crate::free(s) }
}

/// Runs one maintenance pass (flushes, renewals, sweeps) and says what it did.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_maintain(s: *const TsStore, out: *mut TsMaintenance, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let m = unsafe { store(s) }?.maintain()?;
        let done = TsMaintenance {
            flushed: m.flushed as u64,
            renewed: m.renewed as u64,
            cleared: m.cleared as u64,
            expired: m.expired as u64,
            more: m.more,
        };
        set(out, done);
        Ok(())
    })
}

/// The writer's groups and the writes in them since the store opened.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_group_stats(
    s: *const TsStore,
    out: *mut TsGroupStats,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let (groups, writes) = unsafe { store(s) }?.group_stats();
        set(out, TsGroupStats { groups, writes });
        Ok(())
    })
}

/// Sets a test clock to `ms` since the Unix epoch. The clock never moves
/// back: an earlier time is `TS_INVALID`, or (`follow`) leaves the clock
/// where it is. A store without a test clock is `TS_INVALID`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_set_clock(s: *const TsStore, ms: i64, follow: bool, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let clock = unsafe { store(s) }?.clock();
        if follow {
            clock.follow(from_millis(ms))
        } else {
            clock.set(from_millis(ms))
        }
    })
}

/// Moves a test clock forward by `ns`. A negative step is `TS_INVALID`, as
/// is a store without a test clock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_advance(s: *const TsStore, ns: i64, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let step = crate::span(ns, "the clock's step")?;
        unsafe { store(s) }?.clock().advance(step).map(|_| ())
    })
}

/// The number this store's log records carry (`TsLogRecord.store`); 0 for
/// a closed store.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_log_id(s: *const TsStore) -> u64 {
    unsafe { store(s) }.map_or(0, |s| s.log_id())
}

/// The store's clock now, in ms since the Unix epoch.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_now(s: *const TsStore) -> i64 {
    match unsafe { store(s) } {
        Ok(s) => s.clock().now_millis(),
        Err(_) => tinystore::to_millis(SystemTime::now()),
    }
}

/// Reads a duration in the product's text (`"15m"`, `"1h30m"`, `"30d"`) into
/// nanoseconds, refusing bad text as `TS_INVALID` with the core's message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_parse_duration(
    text_ptr: *const u8,
    text_len: usize,
    out_ns: *mut i64,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { text(text_ptr, text_len, "duration") }?;
        let ns = nanos(tinystore::parse_duration(t)?, t)?;
        set(out_ns, ns);
        Ok(())
    })
}

/// Reads a rate in the product's text (`"5/m"`, `"100/5h"`) into a count and
/// a span in nanoseconds, refusing bad text as `TS_INVALID`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_parse_rate(
    text_ptr: *const u8,
    text_len: usize,
    count: *mut u64,
    per_ns: *mut i64,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { text(text_ptr, text_len, "rate") }?;
        let (n, per) = tinystore::parse_rate(t)?;
        let ns = nanos(per, t)?;
        if let (Some(c), Some(p)) = (unsafe { count.as_mut() }, unsafe { per_ns.as_mut() }) {
            *c = n;
            *p = ns;
        }
        Ok(())
    })
}

/// A span in nanoseconds, as the callers' durations hold it (Go's is an i64).
fn nanos(d: std::time::Duration, text: &str) -> Result<i64> {
    i64::try_from(d.as_nanos()).map_err(|_| {
        Error::new(
            ErrorKind::Invalid,
            format!("{text:?} is longer than 292 years in nanoseconds"),
        )
    })
}

/// A TEST HOOK, not for applications: makes the next group commit of the
/// store fail as a failed fsync would, so that a test sees every write of
/// that group answered `TS_OUTCOME_UNKNOWN`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_store_fail_next_commit_for_tests(s: *const TsStore, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        unsafe { store(s) }?.fail_next_commit_for_tests();
        Ok(())
    })
}
