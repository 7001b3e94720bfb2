//! Tests of the core that need a second process: a writer killed with
//! SIGKILL, writes whose syncs fail under `strace`, a full disk in a mount
//! namespace, a system clock that libfaketime steps back, and several
//! processes on one kv.db.
//!
//! Why a package of its own: each test runs its other process as the
//! helper binary `tinystore-test-child` (`src/child/`), which Cargo builds
//! for this package's tests and names in `env!("CARGO_BIN_EXE_…")`. A test
//! binary that ran itself again as the child needed a `#[test]` entry point
//! that returned at once unless an environment variable was set, and so
//! counted as a passed test that checked nothing. A bin in the `tinystore`
//! crate would ship with it; this package is never published.
//!
//! This library holds what the parent and the child must agree on: the
//! roles' names, the buckets and handles both open, and the lines the child
//! prints.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tinystore::{Config, Quota, Store};

/// The roles of the helper, its first argument.
pub mod role {
    /// `crash-writer DIR ROUND`: 16 threads write until killed.
    pub const CRASH_WRITER: &str = "crash-writer";
    /// `fault-writer DIR TAG BIG`: rounds of writes whose syncs may fail.
    pub const FAULT_WRITER: &str = "fault-writer";
    /// `disk-full BASE`: mounts small file systems and fills them.
    pub const DISK_FULL: &str = "disk-full";
    /// `clock DIR`: steps read from stdin on the system clock.
    pub const CLOCK: &str = "clock";
    /// `reader DIR`: sets and reads on a store, driven from stdin.
    pub const READER: &str = "reader";
    /// `busy-writer DIR`: 640 writes, 64 in flight, after a start line.
    pub const BUSY_WRITER: &str = "busy-writer";
    /// `quota-allow DIR`: one durable allow of 2, then exit without close.
    pub const QUOTA_ALLOW: &str = "quota-allow";
    /// `once-run DIR`: runs `once` on one key; fn notes its pid in `ran`.
    pub const ONCE_RUN: &str = "once-run";
    /// `once-hang DIR`: starts a run of `once` that never ends.
    pub const ONCE_HANG: &str = "once-hang";
    /// `once-take-over DIR`: runs the key `once-hang` holds.
    pub const ONCE_TAKE_OVER: &str = "once-take-over";
    /// `limit-store-count DIR N`: counts one key N times.
    pub const LIMIT_STORE_COUNT: &str = "limit-store-count";
    /// `config-update DIR`: updates the config `app`.
    pub const CONFIG_UPDATE: &str = "config-update";
    /// `rate-crash DIR`: spends a burst, flushes, spends another, then
    /// exits without close.
    pub const RATE_CRASH: &str = "rate-crash";
    /// `counters-crash DIR`: adds to a flush_every and a durable counter
    /// around a flush, then exits without close.
    pub const COUNTERS_CRASH: &str = "counters-crash";
    /// `pg-take LOCATION N`: after a start line, takes the keys `c0` to
    /// `cN-1` of the bucket `codes` from 4 threads, printing `won cI` for
    /// each it got.
    pub const PG_TAKE: &str = "pg-take";
    /// `pg-limits LOCATION`: after a start line, spends the shared quota,
    /// counter and rate limit of [`crate::pg_limits`] and prints what passed.
    pub const PG_LIMITS: &str = "pg-limits";
    /// `pg-once-hang LOCATION`: starts a run of `once` that never ends.
    pub const PG_ONCE_HANG: &str = "pg-once-hang";
    /// `pg-once-take-over LOCATION DIR`: runs the key `pg-once-hang`
    /// holds, saying `waiting` once it has found the key held twice, and
    /// notes when fn ran (ms since the epoch) in `DIR/b-ran`.
    pub const PG_ONCE_TAKE_OVER: &str = "pg-once-take-over";
    /// `pg-write LOCATION TAG STOP`: writes new keys `TAG-I` until the file
    /// STOP exists, printing how each answered (`ok KEY VERSION`).
    pub const PG_WRITE: &str = "pg-write";
}

/// What the app servers of `postgres_limits_processes.rs` share on one
/// PostgreSQL database, and what each one does.
pub mod pg_limits {
    use std::time::Duration;

    use tinystore::{Counters, Quota, RateLimit, Store};

    /// Requests a second of the shared rate limit, and its burst.
    pub const RATE: u64 = 200;
    pub const BURST: u64 = 20;
    /// How long each server sends requests to the rate limit.
    pub const RATE_FOR: Duration = Duration::from_millis(1500);
    /// The quota's windows' limits; each server tries [`QUOTA_TRIES`] uses.
    pub const HOURLY: u64 = 50;
    pub const DAILY: u64 = 70;
    pub const QUOTA_TRIES: usize = 40;
    /// Adds each server makes to the shared counter.
    pub const ADDS: i64 = 25;

    pub fn rate_limit(store: &Store) -> RateLimit {
        store
            .rate_limit("api")
            .rate(RATE, Duration::from_secs(1))
            .burst(BURST)
            .open()
            .unwrap()
    }

    pub fn quota(store: &Store) -> Quota {
        store
            .quota("plan")
            .window("hourly", HOURLY, Duration::from_secs(3600))
            .window("daily", DAILY, Duration::from_secs(24 * 3600))
            .open()
            .unwrap()
    }

    pub fn counters(store: &Store) -> Counters {
        store.counters("hits").open().unwrap()
    }
}

/// The rate limit of the crash test: 5 a minute, 5 at once.
pub fn guesses(store: &Store) -> tinystore::RateLimit {
    store
        .rate_limit("sign-in-guesses")
        .rate(5, Duration::from_secs(60))
        .burst(5)
        .open()
        .unwrap()
}

/// The start of the test clock of the stores both sides open:
/// 2026-10-20T09:00:00Z.
pub fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_792_486_800)
}

/// The quota of the durable-allow test: 3 messages per 5 hours, 4 a week.
pub fn messages(store: &Store) -> Quota {
    const HOUR: Duration = Duration::from_secs(3600);
    store
        .quota("messages")
        .window("session", 3, 5 * HOUR)
        .window("weekly", 4, 7 * 24 * HOUR)
        .open()
        .unwrap()
}

/// The answer `once` keeps in the two-process tests.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct Sent {
    pub id: i64,
}

/// The config both processes of the watch test open.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct Settings {
    pub port: i64,
    pub rps: i64,
}

/// Opens the config `app` of the watch test.
pub fn settings(store: &Store) -> tinystore::Result<Config<Settings>> {
    Config::builder(store, "app", Settings { port: 8080, rps: 100 }).open()
}

/// The writes each busy writer makes.
pub const BUSY_WRITES: usize = 640;

/// What the child prints before an answer the parent reads.
pub const ANSWER: &str = "ANSWER=";

/// The file the fault writer creates just before it closes its store, so
/// that the trace shows which faults hit the writes and which the close.
pub const FAULT_MARK: &str = "closing";

/// What the disk-full child prints when it may not mount here.
pub const CANNOT_MOUNT: &str = "CANNOT-MOUNT:";
