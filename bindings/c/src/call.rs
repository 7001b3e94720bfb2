//! One exported call for every handle: `ts_call` takes a `TsHandle` (a
//! bucket, counters, a rate limit, a quota or a once), an operation code
//! (`TS_OP_*`) in a `TsCall`, the branch and key (and a value's bytes) as
//! arguments, and answers in a `TsResult`, or a `TsAllowance` for a limit.
//!
//! The bytes travel as arguments rather than in the struct because cgo
//! forbids passing C a Go struct that points into Go memory; the struct
//! holds numbers and pointers the ABI made (a cancel, a caller).
//!
//! `ts_call` finds the handle's branch, reads the call and turns the
//! pointer scope into the core's `Scope`; each kind's `*_op` then matches
//! on the operation code.

use std::borrow::Cow;

use tinystore::{
    Branches, Counters, HandleWrite, Quota, RateLimit, RawBucket, RawConfig, RawOnce, Result, Scope, Store, Written,
};

use crate::answers::TsAnswers;
use crate::bucket::{TsCheckFn, TsEntry, TsPage, TsWriteOptions, bucket_op};
use crate::limits::{TsAllowance, counters_op, quota_op, rate_limit_op};
use crate::once::{TsCaller, TsClaim, once_op};
use crate::scope::{TsScope, scope_of};
use crate::waits::{TsCancel, wait_on_store};
use crate::{TsError, at_key, branch, bytes, free, guard, handle, invalid, owners_of};

/// An open handle of a store: a bucket, counters, a rate limit, a quota, a
/// once or a config, from `ts_open` or `ts_config_open`. Free it with `ts_handle_free`.
pub struct TsHandle(pub(crate) Kind);

pub(crate) enum Kind {
    Bucket(RawBucket),
    Counters(Counters),
    RateLimit(RateLimit),
    Quota(Quota),
    Once(RawOnce),
    /// Config has calls of its own (`config.rs`).
    Config(RawConfig),
    /// A watch of a config's changes (`config.rs`).
    ConfigWatch(tinystore::config::ConfigWatch),
}

/// Frees a handle. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_handle_free(h: *mut TsHandle) {
    unsafe { free(h) }
}

/// The most keys one page of a list holds (the core's `MAX_PAGE`).
pub const TS_MAX_PAGE: u32 = 1000;
const _: () = assert!(TS_MAX_PAGE as usize == tinystore::MAX_PAGE);

/// Reads a key (bucket: its entry; counters: the value; once: the kept answer).
pub const TS_OP_GET: i32 = 1;
/// Whether a bucket's live key is there.
pub const TS_OP_HAS: i32 = 2;
/// Writes a bucket's value.
pub const TS_OP_SET: i32 = 3;
/// Writes a bucket's value only if the key is absent.
pub const TS_OP_CREATE: i32 = 4;
/// Reads and deletes a bucket's key in one write.
pub const TS_OP_TAKE: i32 = 5;
/// Deletes a key (a bucket's, a counter, a once's answer).
pub const TS_OP_DELETE: i32 = 6;
/// Gives a bucket's live key the options' expiry.
pub const TS_OP_EXPIRE: i32 = 7;
/// Removes the branch and every branch under it (bucket, counters).
pub const TS_OP_CLEAR: i32 = 8;
/// Lists a page of a bucket's branch, after the key when `has_after`.
pub const TS_OP_LIST: i32 = 9;
/// Adds `n` to a counter.
pub const TS_OP_ADD: i32 = 10;
/// Keeps the larger of a counter and `n`.
pub const TS_OP_MAX: i32 = 11;
/// Takes `uses` of a rate limit or quota together, or none.
pub const TS_OP_ALLOW: i32 = 12;
/// Answers for one use of a rate limit or quota, counting nothing.
pub const TS_OP_PEEK: i32 = 13;
/// Forgets a key of a rate limit or quota (fills no answer).
pub const TS_OP_RESET: i32 = 14;
/// Gives `uses` of a quota back.
pub const TS_OP_REFUND: i32 = 15;
/// Begins a run of a once's key (on the store; see `once_op`).
pub const TS_OP_BEGIN: i32 = 16;
/// Sets a bucket's value on the store and returns at once, its answer
/// queued (see `answers.rs` and `bucket_op`).
pub const TS_OP_SUBMIT: i32 = 17;

/// A call's operation and the arguments that are not bytes; each
/// operation reads the fields it names and ignores the rest.
#[repr(C)]
pub struct TsCall {
    /// A `TS_OP_*` the handle has.
    pub op: i32,
    /// The value's kind (a `TS_KIND_*`); its bytes are the call's `value`
    /// argument. Set, create.
    pub kind: i32,
    /// The value's integer, bool or bits.
    pub integer: i64,
    /// A write's options (none when every `has_` is false). Set, create,
    /// take, delete, expire.
    pub options: TsWriteOptions,
    /// The kind to read a value as. Get, create, take, list, begin.
    pub want: i32,
    /// A counter's amount (add, max).
    pub n: i64,
    /// Uses of a rate limit or quota (allow, refund); the core refuses a
    /// negative number.
    pub uses: i64,
    /// A take's check of the value (see `TsCheckFn`); null checks nothing.
    pub check: TsCheckFn,
    /// What the check is given with the value.
    pub check_ctx: u64,
    /// A list: whether the key argument is the cursor to list after.
    pub has_after: bool,
    /// A list: at most how many keys, 1 to `TS_MAX_PAGE` (0 for the default).
    pub limit: i64,
    /// The runs of once the caller is inside (begin; null: none).
    pub caller: *const TsCaller,
    /// On the store, lets another thread give up on a write before its
    /// group starts, or on begin's wait (`TS_CANCELLED`). Null: none.
    pub cancel: *const TsCancel,
    /// A submit: the queue its answer goes to, with `token`.
    pub answers: *const TsAnswers,
    /// What a submit's answer carries, for the caller to find its write.
    pub token: u64,
}

/// What a call of a bucket, counters or once answers.
#[repr(C)]
pub struct TsResult {
    /// Get, has, take, delete, expire: a live key (or kept answer) was
    /// there. Create: the value was written. Begin: an answer is kept.
    pub found: bool,
    /// Set: the version written. Counters' add, max, get: the value.
    pub number: i64,
    /// Get, take, create: the entry (its bytes are the caller's; a written
    /// create's value is `TS_KIND_NULL`, the caller's own). Once's get and
    /// begin: the answer, in `entry.value`.
    pub entry: TsEntry,
    /// List: the page, freed with `ts_page_free`.
    pub page: *mut TsPage,
    /// Begin, when no answer is kept: the run, the caller's to keep or abandon.
    pub claim: *mut TsClaim,
}

impl TsResult {
    pub(crate) fn empty() -> TsResult {
        // SAFETY: every field is an integer, a bool or a pointer, whose zero
        // is the empty answer: nothing found, `TS_KIND_NULL`, null.
        unsafe { std::mem::zeroed() }
    }
}

/// One call's arguments, read from the pointers it was given.
pub(crate) struct Args<'a, C: Clone> {
    /// The branch of the handle the owners name.
    pub h: Cow<'a, C>,
    pub scope: Scope<'a>,
    pub owners: &'a [u8],
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub call: &'a TsCall,
}

impl<'a, C: Branches> Args<'a, C> {
    /// The arguments of a call of `core`, with those every kind shares.
    pub fn of(core: &'a C, a: &Args<'a, ()>) -> Result<Self> {
        Ok(Args {
            h: branch(core, a.owners)?,
            scope: a.scope,
            owners: a.owners,
            key: a.key,
            value: a.value,
            call: a.call,
        })
    }
}
impl<C: Clone> Args<'_, C> {
    /// `e` naming the call's key of the branch of the handle `name`, unless
    /// it names a key already.
    pub fn named(&self, name: &str, e: tinystore::Error) -> tinystore::Error {
        at_key(name, owners_of(self.owners).unwrap_or_default(), self.key, e)
    }
}

impl<C: Clone + OnStore> Args<'_, C> {
    /// A write: on the store, handed to the writer and waited for under
    /// the call's cancel; in a scope, run there.
    pub fn write<W: HandleWrite<On = C>>(&self, w: W) -> Result<Written> {
        match self.scope {
            Scope::Direct => wait_on_store(self.h.store(), self.h.name(), self.call.cancel, |done| {
                w.to_writer(&self.h, done)
            }),
            s => w.in_scope(s, &self.h),
        }
    }
}

/// A handle whose writes go through its store's writer.
pub(crate) trait OnStore: Branches {
    fn store(&self) -> &Store;
}

macro_rules! on_store {
    ($($core:ident),*) => {$(
        impl OnStore for $core {
            fn store(&self) -> &Store {
                $core::store(self)
            }
        }
    )*};
}

on_store!(Counters, Quota, RawOnce, RawBucket);

/// No operation `op` on the handle `what`.
pub(crate) fn no_op(what: &str, op: i32) -> tinystore::Error {
    invalid(format!("a {what} has no operation {op}"))
}

/// The arguments every kind's call reads, from the pointers given.
pub(crate) unsafe fn shared<'a>(
    scope: *const TsScope,
    (owners, owners_len): (*const u8, usize),
    (key, key_len): (*const u8, usize),
    (value, value_len): (*const u8, usize),
    call: *const TsCall,
) -> Result<Args<'a, ()>> {
    Ok(Args {
        h: Cow::Owned(()),
        scope: unsafe { scope_of(scope) },
        owners: unsafe { bytes(owners, owners_len) },
        key: unsafe { bytes(key, key_len) },
        value: unsafe { bytes(value, value_len) },
        call: unsafe { handle(call, "call") }?,
    })
}

/// Runs one call on the handle `h` (on the key of the branch of
/// `owners`) in `scope`: null for the store itself, else a transaction or a
/// view. `value` is the bytes of a write's value. A bucket, counters or a
/// once answers in `out`, a rate limit or quota in `allowance`; see each
/// kind's `*_op` for its operations.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_call(
    h: *const TsHandle,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    call: *const TsCall,
    out: *mut TsResult,
    allowance: *mut TsAllowance,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        let shared = shared(scope, (owners, owners_len), (key, key_len), (value, value_len), call)?;
        match &handle(h, "handle")?.0 {
            Kind::Bucket(b) => bucket_op(Args::of(b, &shared)?, out),
            Kind::Counters(c) => counters_op(Args::of(c, &shared)?, out),
            Kind::RateLimit(r) => rate_limit_op(Args::of(r, &shared)?, allowance),
            Kind::Quota(q) => quota_op(Args::of(q, &shared)?, allowance),
            Kind::Once(o) => once_op(Args::of(o, &shared)?, out),
            Kind::Config(_) | Kind::ConfigWatch(_) => Err(no_op("config", shared.call.op)),
        }
    })
}
