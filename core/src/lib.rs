//! TinyStore KV: an application's current state in one SQLite file.
//!
//! Sessions, one-time codes, rate limits, plan quotas, counters and the
//! answers of requests sent twice, in `kv.db` inside a store's directory,
//! with expiry that needs no cleanup job. The same engine serves Python,
//! TypeScript and Go, and all of them share the file format.
//!
//! ```
//! use std::time::Duration;
//! # let dir = tempfile::tempdir().unwrap();
//! let store = tinystore::Store::open(dir.path())?;
//! let sessions = store.bucket::<String>("sessions").idle(Duration::from_secs(30 * 86400)).open()?;
//! sessions.under(7).set("digest-of-token", &"web".to_string())?;
//! assert_eq!(sessions.under(7).get("digest-of-token")?.as_deref(), Some("web"));
//! sessions.under(7).clear()?; // sign out everywhere
//! assert!(!sessions.under(7).has("digest-of-token")?);
//! # Ok::<(), tinystore::Error>(())
//! ```
//!
//! The layers: [`storage`] holds every SQL statement; the writer commits
//! waiting writes as one group; [`RawBucket`] holds the rules of keys,
//! versions and expiry; [`Bucket`] adds serde types. `docs/format.md`
//! describes the file.
//!
//! Many writers at once: each write is allocated on its caller's thread
//! and freed on the writer's. glibc's malloc serves that through one
//! locked arena, and a program that keeps dozens of writes in flight
//! writes faster with an allocator that frees to the owning thread's heap,
//! such as mimalloc (`#[global_allocator] static A: mimalloc::MiMalloc =
//! mimalloc::MiMalloc;`). The writer bench (`bench/src/bin/writer.rs`,
//! `make bench-writer`) runs with each, and `docs/measurements.md` gives
//! its figures. The Python and Node packages use mimalloc.

pub mod aio;
mod answer_queue;
mod backend;
mod binding_refusals;
mod binding_tx;
mod blocking_tx;
mod branches;
mod bucket;
mod budget;
mod by_kind;
mod cancel;
mod clock;
mod codec;
mod codec_choice;
mod codec_fault;
pub mod config;
mod durations;
mod error;
mod group_commit;
mod guards;
mod handle_writes;
mod in_tx;
mod inspect;
mod json_fields;
mod key;
mod limit_count;
mod limit_store;
mod limits;
mod log_forward;
pub mod moving;
mod open_views;
mod postgres;
mod raw;
mod read_locks;
mod readers;
mod row_codec;
mod scope;
mod scope_join;
mod scope_kinds;
mod signed_inputs;
pub mod storage;
mod store;
mod thread_burst;
mod turn_writes;
mod tx;
mod tx_kinds;
mod values;

pub use answer_queue::{AnswerQueue, Wake};
pub use binding_refusals::Refusal;
pub use binding_tx::{BindingTx, Snapshot, TX_LIMIT, ended as tx_ended};
pub use blocking_tx::BlockingTx;
pub use branches::Branches;
pub use bucket::{Bucket, BucketBuilder, KeyCall};
pub use by_kind::{ByKind, MAX_SAFE_INTEGER, whole_number};
pub use cancel::{Cancel, cancellable, cancelled_before_start};
pub use clock::{Clock, from_millis, to_millis};
pub use codec::{decode, encode};
pub use codec_choice::type_or_codec;
pub use codec_fault::CodecFault;
pub use config::{Config, RawConfig};
pub use durations::{MAX_DURATION_MILLIS, duration_from_millis, duration_from_nanos, parse_duration, parse_rate};
pub use error::{Error, ErrorKind, Result, inside_tx_error, nested_tx_error, rerun_error};
pub use group_commit::{Burst, GroupStats, Ticket, after_answers, submit_together, submit_waited};
pub use guards::CallerContext;
pub use handle_writes::{
    BucketWrite, CounterWrite, HandleWrite, OnceDelete, QuotaWrite, TakeCheck, Written, undecodable_take,
};
pub use in_tx::{flush_every_refused, once_run_refused, other_store_refused, rate_limit_refused, store_only_refused};
pub use inspect::{FileStats, Inspector, NameInfo, Row};
pub use json_fields::json_field_name;
pub use key::{AsKey, Branch, Key, MAX_PATH, show_key, show_path, split_path};
pub use limit_store::{
    Change, Commit, DEFAULT_MAX_ENTRIES, LIMIT_STORE_NAME, LimitEntry, LimitEvent, LimitStore, LimitStoreBuilder,
    LimitUpdate, MAX_LIMIT_KEYS, MAX_LIMIT_VALUE, Returned, ReturnedEntry, Swept, UpdateSteps, Updated,
};
pub use limits::{
    Allowance, Begun, Claim, Counters, CountersBuilder, MAX_WINDOWS, MEMORY_BOUND, ONCE_HEARTBEAT, ONCE_LEASE,
    ONCE_POLL, Once, OnceBuilder, Quota, QuotaBuilder, RateLimit, RateLimitBuilder, RawOnce, TABLE_FILE, WindowUsage,
    claim_ended, waiter_gave_up, window_rate_error,
};
pub use log_forward::{LOG_QUEUE, LogRecord, forward_logs, next_logs, stop_logs};
pub use open_views::VIEW_LIMIT;
pub use postgres::{DEFAULT_DEADLINE as POSTGRES_DEADLINE, ONCE_POLL_POSTGRES, hide_password, is_postgres};
pub use raw::{MAX_VALUE, Raw, SPILL_OVER};
pub use read_locks::{ReadLockCounts, read_lock_counts};
pub use row_codec::{AsRow, ByType, Codec, CodecError, RowCodec, WithCodec};
pub use scope::{CheckedTake, Scope};
pub use scope_join::Joining;
pub use signed_inputs::{MMAP_NONE, Signed, int64_arg, not_negative, sized_options, store_size};
pub use store::Maintenance;
pub use store::{DEFAULT_MMAP_SIZE, FILE_NAME, Options, SqliteOptions, Store, check_name};
pub use thread_burst::{ThreadBurstEnd, close_thread_burst, open_thread_burst, thread_burst_open};
pub use turn_writes::{TicketCell, TurnWrites, hand_over_turn};
pub use tx::{Tx, TxBucket, View, ViewBucket};
pub use tx_kinds::{TxCounters, TxOnce, TxQuota};
pub use values::{
    CLEAR_BOUND, Created, DEFAULT_PAGE, Entry, Expiry, ListOptions, MAX_PAGE, MAX_PAGE_BYTES, Page, RawBucket, Version,
    WriteCall, WriteOptions, page_size,
};

/// The examples of `core/README.md`, run as doctests so the README stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExamples;
