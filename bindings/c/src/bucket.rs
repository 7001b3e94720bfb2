//! Buckets of values: every call of `RawBucket`, a branch and a scope
//! (see `scope.rs`) given per call.
//!
//! A branch travels as its owners, each a little-endian u32 length and its
//! bytes, so that a caller's `under(...)` costs no handle of its own.

use std::time::SystemTime;

use tinystore::{
    Created, Entry, Error, ErrorKind, Expiry, Key, ListOptions, Page, Raw, RawBucket, Result, Scope, Version,
    WriteCall, WriteOptions, from_millis, to_millis,
};

use crate::scope::{TsScope, scope_of};
use crate::store::{TsStore, store};
use crate::value::{TS_KIND_NULL, TsValue, raw_in, value_out, value_view};
use crate::waits::{TsCancel, wait_on_store};
use crate::{TsError, at_key, bytes, free, guard, put, set, span, span_if, text, under};

/// A bucket of values, opened on a store.
pub struct TsBucket(pub(crate) RawBucket);

/// A write's own options, as the caller got them: the core checks their
/// shape for each call (a ttl or a time, not both; what each call takes).
/// Neither a ttl nor a time keeps the bucket's `ttl`, or a live key's expiry.
#[repr(C)]
pub struct TsWriteOptions {
    /// Whether the write expires `ttl_ns` from now.
    pub has_ttl: bool,
    /// Nanoseconds from now.
    pub ttl_ns: i64,
    /// Whether the write expires at `at_ms`.
    pub has_at: bool,
    /// Ms since the Unix epoch.
    pub at_ms: i64,
    /// Whether the write applies only to a live key at `if_version`.
    pub has_if_version: bool,
    /// The version the write expects.
    pub if_version: i64,
}

/// A key with its value, version and expiry.
#[repr(C)]
pub struct TsEntry {
    /// The value, read as the kind asked for.
    pub value: TsValue,
    /// The revision that wrote the value.
    pub version: i64,
    /// Whether the key expires.
    pub has_expiry: bool,
    /// When it expires, in ms since the Unix epoch.
    pub expires_ms: i64,
    /// The key, without owners (in a page only; null otherwise).
    pub key: *const u8,
    /// The key's length.
    pub key_len: usize,
}

/// Checks a value inside a `take`'s write, before the key is deleted: a
/// non-zero answer keeps the value and makes the take `TS_CORRUPT`. Called
/// on the store's writer thread (on the caller's, inside a transaction),
/// with a value borrowed for the call. Null checks nothing.
// The `Option` is inside the alias so that cbindgen writes the parameters
// as `TsCheckFn check`, a function pointer that may be null.
pub type TsCheckFn = Option<unsafe extern "C" fn(ctx: u64, value: *const TsValue) -> i32>;

/// One page of a listing; owns the bytes its entries point to.
pub struct TsPage {
    pub(crate) page: Page<Raw>,
    pub(crate) want: i32,
}

/// Names `key` of `b`'s branch in an error that does not name a key yet.
pub(crate) fn named(b: &RawBucket, key: &[u8], e: Error) -> Error {
    at_key(b.name(), b.owners().iter().map(Vec::as_slice), key, e)
}

/// Runs `f` on the branch of `b` the owners name and on the key, naming
/// the key in any error of `f` that names none.
unsafe fn on_key<T>(
    b: *const TsBucket,
    owners: (*const u8, usize),
    key: (*const u8, usize),
    f: impl FnOnce(&RawBucket, &[u8]) -> Result<T>,
) -> Result<T> {
    let rb = unsafe { under(b, owners.0, owners.1) }?;
    let key = unsafe { bytes(key.0, key.1) };
    f(&rb, key).map_err(|e| named(&rb, key, e))
}

/// The options of a write of the kind `call`, checked in the core.
pub(crate) fn write_options(o: *const TsWriteOptions, call: WriteCall) -> Result<WriteOptions> {
    let (ttl, at, if_version) = option_parts(o)?;
    WriteOptions::of_call(call, ttl, at, if_version)
}

/// The expiry and version of an `expire`, checked in the core.
pub(crate) fn expire_options(o: *const TsWriteOptions) -> Result<(Expiry, Option<Version>)> {
    let (ttl, at, if_version) = option_parts(o)?;
    WriteOptions::of_expire(ttl, at, if_version)
}

type OptionParts = (
    Option<std::time::Duration>,
    Option<std::time::SystemTime>,
    Option<Version>,
);

fn option_parts(o: *const TsWriteOptions) -> Result<OptionParts> {
    let Some(o) = (unsafe { o.as_ref() }) else {
        return Ok((None, None, None));
    };
    Ok((
        o.has_ttl.then(|| span(o.ttl_ns, "ttl")).transpose()?,
        o.has_at.then(|| from_millis(o.at_ms)),
        o.has_if_version.then(|| Version::from_raw(o.if_version)),
    ))
}

/// Fills `out` with a live entry read as `want` (its bytes the caller's)
/// and sets `found` when there is one.
fn fill_found(out: *mut TsEntry, found: *mut bool, e: Option<Entry<Raw>>, want: i32) -> Result<()> {
    if let Some(e) = e {
        fill(out, &e, value_out(&e.value, want)?);
        set(found, true);
    }
    Ok(())
}

/// Fills `out` with the entry `e`, its value read as `value`.
pub(crate) fn fill(out: *mut TsEntry, e: &Entry<Raw>, value: TsValue) {
    fill_parts(out, value, e.version, e.expires_at);
}

/// [`fill`] from an entry's parts, for one the core answered without its value.
fn fill_parts(out: *mut TsEntry, value: TsValue, version: Version, expires_at: Option<SystemTime>) {
    let entry = TsEntry {
        value,
        version: version.get(),
        has_expiry: expires_at.is_some(),
        expires_ms: expires_at.map_or(0, to_millis),
        key: std::ptr::null(),
        key_len: 0,
    };
    set(out, entry);
}

/// Opens the bucket `name` with a `ttl` or an `idle` span in nanoseconds
/// (each only when its `has_` flag is set; not both). The handle goes to `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_open(
    s: *const TsStore,
    name: *const u8,
    name_len: usize,
    ttl_ns: i64,
    has_ttl: bool,
    idle_ns: i64,
    has_idle: bool,
    out: *mut *mut TsBucket,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let st = unsafe { store(s) }?;
        let name = unsafe { text(name, name_len, "bucket name") }?;
        let ttl = span_if(has_ttl, ttl_ns, "ttl", name)?;
        let idle = span_if(has_idle, idle_ns, "idle span", name)?;
        put(out, TsBucket(RawBucket::open(st, name, ttl, idle)?))
    })
}

/// Frees a bucket handle. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_free(b: *mut TsBucket) {
    unsafe { free(b) }
}

/// Reads a live key in `scope` as the kind `want`; `found` says whether it
/// was there. On the store (a null scope) this renews the key of an idle
/// bucket; in a transaction or a view it renews nothing. The value's bytes
/// are the caller's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_get(
    b: *const TsBucket,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    want: i32,
    out: *mut TsEntry,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        on_key(b, (owners, owners_len), (key, key_len), |rb, key| {
            set(found, false);
            fill_found(out, found, scope_of(scope).entry(rb, key)?, want)
        })
    })
}

/// Whether a live key is there in `scope` (renewing it in an idle bucket,
/// on the store).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_has(
    b: *const TsBucket,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        on_key(b, (owners, owners_len), (key, key_len), |rb, key| {
            set(found, scope_of(scope).has(rb, key)?);
            Ok(())
        })
    })
}

/// Writes a value in `scope`; its version goes to `version`. On the store
/// the write is durable when this returns, and a fired `cancel` gives up on
/// it before its group starts; inside a transaction `cancel` is unused.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_set(
    b: *const TsBucket,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    kind: i32,
    integer: i64,
    value: *const u8,
    value_len: usize,
    options: *const TsWriteOptions,
    cancel: *const TsCancel,
    version: *mut i64,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        on_key(b, (owners, owners_len), (key, key_len), |rb, key| {
            let raw = raw_in(kind, integer, value, value_len)?;
            let opts = write_options(options, WriteCall::Set)?;
            let v = match scope_of(scope) {
                Scope::Direct => wait_on_store(rb.store(), rb.name(), cancel, |done| rb.set_then(key, raw, opts, done)),
                s => s.set(rb, key, raw, opts),
            };
            set(version, v?.get());
            Ok(())
        })
    })
}

/// Writes a value on the store and waits for it in this thread (see
/// `waits.rs`); its version goes to `version` when that is not null.
pub(crate) fn set_and_wait(
    rb: &RawBucket,
    key: &[u8],
    raw: Raw,
    opts: WriteOptions,
    cancel: *const TsCancel,
    version: *mut i64,
) -> tinystore::Result<()> {
    let v = wait_on_store(rb.store(), rb.name(), cancel, |done| rb.set_then(key, raw, opts, done))?;
    set(version, v.get());
    Ok(())
}

/// Writes a value in `scope` only if the key is absent. `written` says
/// whether it did, and `entry` holds the key's entry either way: the one
/// written (its version and expiry; its value is the caller's own, so it is
/// left `TS_KIND_NULL`), or the live one found, read as `want` (its bytes
/// are the caller's).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_create(
    b: *const TsBucket,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    kind: i32,
    integer: i64,
    value: *const u8,
    value_len: usize,
    options: *const TsWriteOptions,
    want: i32,
    cancel: *const TsCancel,
    written: *mut bool,
    entry: *mut TsEntry,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        on_key(b, (owners, owners_len), (key, key_len), |rb, key| {
            let raw = raw_in(kind, integer, value, value_len)?;
            let expiry = write_options(options, WriteCall::Create)?.expiry;
            let created = match scope_of(scope) {
                Scope::Direct => wait_on_store(rb.store(), rb.name(), cancel, |done| {
                    rb.create_then(key, raw, expiry, done)
                })?,
                s => s.create(rb, key, raw, expiry)?,
            };
            set(written, created.written());
            match created {
                Created::Written { version, expires_at } => {
                    let none = TsValue {
                        kind: TS_KIND_NULL,
                        integer: 0,
                        bytes: std::ptr::null_mut(),
                        len: 0,
                    };
                    fill_parts(entry, none, version, expires_at)
                }
                Created::Found(e) => fill(entry, &e, value_out(&e.value, want)?),
            }
            Ok(())
        })
    })
}

/// The check of a take: the value read as `want`, then given to the
/// caller's `check` (when not null). A row of another kind, or a non-zero
/// check, is `Corrupt`, and the take leaves the value.
pub(crate) fn decodes_as(
    want: i32,
    check: TsCheckFn,
    check_ctx: u64,
) -> impl Fn(&Entry<Raw>) -> Result<()> + Send + Copy {
    move |e: &Entry<Raw>| -> Result<()> {
        let v = value_view(&e.value, want)?;
        match check {
            // SAFETY: the caller gave `check` and `check_ctx` for this call.
            Some(f) if unsafe { f(check_ctx, &v) } != 0 => Err(Error::new(
                ErrorKind::Corrupt,
                "the value does not decode as the bucket's type; it stays",
            )),
            _ => Ok(()),
        }
    }
}

/// Reads and deletes a key in one write, in `scope`. The value is read as
/// `want` and given to `check` (when not null) inside the write, on the
/// store's writer thread or, in a transaction, on the caller's: a row of
/// another kind, or a non-zero check, is `TS_CORRUPT` and the value stays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_take(
    b: *const TsBucket,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    options: *const TsWriteOptions,
    want: i32,
    check: TsCheckFn,
    check_ctx: u64,
    cancel: *const TsCancel,
    out: *mut TsEntry,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        on_key(b, (owners, owners_len), (key, key_len), |rb, key| {
            set(found, false);
            let at = write_options(options, WriteCall::Take)?.if_version;
            let decodes = decodes_as(want, check, check_ctx);
            let taken = match scope_of(scope) {
                Scope::Direct => wait_on_store(rb.store(), rb.name(), cancel, |done| {
                    rb.take_then(key, at, decodes, done)
                })?,
                s => s.take(rb, key, at, decodes)?,
            };
            fill_found(out, found, taken, want)
        })
    })
}

/// Deletes a key in `scope`; `found` says whether a live key was there.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_delete(
    b: *const TsBucket,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    options: *const TsWriteOptions,
    cancel: *const TsCancel,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        on_key(b, (owners, owners_len), (key, key_len), |rb, key| {
            let at = write_options(options, WriteCall::Delete)?.if_version;
            let was = match scope_of(scope) {
                Scope::Direct => wait_on_store(rb.store(), rb.name(), cancel, |done| rb.delete_then(key, at, done)),
                s => s.delete(rb, key, at),
            };
            set(found, was?);
            Ok(())
        })
    })
}

/// Gives a live key the options' expiry in `scope`, keeping value and
/// version; `found` says whether a live key was there.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_expire(
    b: *const TsBucket,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    options: *const TsWriteOptions,
    cancel: *const TsCancel,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        on_key(b, (owners, owners_len), (key, key_len), |rb, key| {
            let (expiry, at) = expire_options(options)?;
            let was = match scope_of(scope) {
                Scope::Direct => wait_on_store(rb.store(), rb.name(), cancel, |done| {
                    rb.expire_then(key, expiry, at, done)
                }),
                s => s.expire(rb, key, expiry, at),
            };
            set(found, was?);
            Ok(())
        })
    })
}

/// Removes the branch of `owners` (the whole bucket when empty) and every
/// branch under it, in `scope` (inside a transaction at most 10,000 keys,
/// else `TS_LIMIT`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_clear(
    b: *const TsBucket,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    cancel: *const TsCancel,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let rb = unsafe { under(b, owners, owners_len) }?;
        match unsafe { scope_of(scope) } {
            Scope::Direct => wait_on_store(rb.store(), rb.name(), cancel, |done| rb.clear_then(done)),
            s => s.clear(&rb),
        }
    })
}

/// Lists a page of the branch's own keys in `scope`, after the key `after`
/// when `has_after`, at most `limit` keys (0 for the default), every value
/// read as `want`. The page goes to `out`; free it with `ts_page_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bucket_list(
    b: *const TsBucket,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    after: *const u8,
    after_len: usize,
    has_after: bool,
    limit: u32,
    want: i32,
    out: *mut *mut TsPage,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let rb = unsafe { under(b, owners, owners_len) }?;
        let opts = ListOptions {
            after: has_after.then(|| Key(unsafe { bytes(after, after_len) }.to_vec())),
            limit: (limit > 0).then_some(limit as usize),
        };
        let page = unsafe { scope_of(scope) }.list(&rb, &opts)?;
        for e in &page.entries {
            value_view(&e.value, want).map_err(|x| named(&rb, &e.key.0, x))?;
        }
        put(out, TsPage { page, want })
    })
}

/// How many entries the page holds.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_page_len(p: *const TsPage) -> usize {
    unsafe { p.as_ref() }.map_or(0, |p| p.page.entries.len())
}

/// Fills `out` with entry `i` of the page, its bytes borrowed from the page.
/// Returns false when `i` is past the end.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_page_entry(p: *const TsPage, i: usize, out: *mut TsEntry) -> bool {
    let Some(p) = (unsafe { p.as_ref() }) else { return false };
    let Some(e) = p.page.entries.get(i) else { return false };
    // Every value was checked against `want` when the page was made.
    let Ok(v) = value_view(&e.value, p.want) else {
        return false;
    };
    fill(out, e, v);
    if let Some(out) = unsafe { out.as_mut() } {
        out.key = e.key.0.as_ptr();
        out.key_len = e.key.0.len();
    }
    true
}

/// The cursor of the next page, borrowed from the page; false when this is the last.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_page_next(p: *const TsPage, key: *mut *const u8, key_len: *mut usize) -> bool {
    let Some(next) = (unsafe { p.as_ref() }).and_then(|p| p.page.next.as_ref()) else {
        return false;
    };
    if let (Some(k), Some(n)) = (unsafe { key.as_mut() }, unsafe { key_len.as_mut() }) {
        *k = next.0.as_ptr();
        *n = next.0.len();
    }
    true
}

/// Frees a page. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_page_free(p: *mut TsPage) {
    unsafe { free(p) }
}
