//! Buckets of values: every call of `RawBucket`, a branch and a scope
//! (see `scope.rs`) given per call.
//!
//! A branch travels as its owners, each a little-endian u32 length and its
//! bytes, so that a caller's `under(...)` costs no handle of its own.

use std::time::SystemTime;

use tinystore::{
    Allowance, BucketWrite, Created, Entry, Expiry, Key, ListOptions, Page, Raw, RawBucket, Result, Scope, Version,
    WriteCall, WriteOptions, Written, from_millis, to_millis,
};

use crate::answers::submit;
use crate::call::*;
use crate::value::{TsValue, raw_in, value_out, value_view};
use crate::waits::refused;
use crate::{TsError, free, guard, set, span};

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

/// The options of a write of the kind `call`, checked in the core.
pub(crate) fn write_options(o: &TsWriteOptions, call: WriteCall) -> Result<WriteOptions> {
    let (ttl, at, if_version) = option_parts(o)?;
    WriteOptions::of_call(call, ttl, at, if_version)
}

/// The expiry and version of an `expire`, checked in the core.
fn expire_options(o: &TsWriteOptions) -> Result<(Expiry, Option<Version>)> {
    let (ttl, at, if_version) = option_parts(o)?;
    WriteOptions::of_expire(ttl, at, if_version)
}

type OptionParts = (Option<std::time::Duration>, Option<SystemTime>, Option<Version>);

fn option_parts(o: &TsWriteOptions) -> Result<OptionParts> {
    Ok((
        o.has_ttl.then(|| span(o.ttl_ns, "ttl")).transpose()?,
        o.has_at.then(|| from_millis(o.at_ms)),
        o.has_if_version.then(|| Version::from_raw(o.if_version)),
    ))
}

/// The version the text says, as a version's `Display` wrote it, to `out`;
/// other text is `TS_INVALID` in the core's words.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_version_parse(text: *const u8, len: usize, out: *mut i64, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let v: Version = String::from_utf8_lossy(unsafe { crate::bytes(text, len) }).parse()?;
        set(out, v.get());
        Ok(())
    })
}

/// Whether there is a live entry, and it with its value read as `want`
/// (its bytes the caller's).
fn found(e: Option<Entry<Raw>>, want: i32) -> Result<(bool, TsEntry)> {
    Ok(match e {
        Some(e) => (true, entry_of(value_out(&e.value, want)?, e.version, e.expires_at)),
        None => (false, entry_of(TsValue::null(), Version::from_raw(0), None)),
    })
}

/// An entry of `value`, without its key.
fn entry_of(value: TsValue, version: Version, expires_at: Option<SystemTime>) -> TsEntry {
    TsEntry {
        value,
        version: version.get(),
        has_expiry: expires_at.is_some(),
        expires_ms: expires_at.map_or(0, to_millis),
        key: std::ptr::null(),
        key_len: 0,
    }
}

/// A bucket's calls: `TS_OP_GET`, `HAS`, `SET`, `SUBMIT`, `CREATE`, `TAKE`,
/// `DELETE`, `EXPIRE`, `CLEAR`, `LIST` (after the key when the call
/// `has_after`). On the
/// store a get renews an idle bucket's key, and a write is durable when
/// this returns; a fired cancel gives up on it before its group starts.
/// A take reads the value as `want` and gives it to `check` (when not
/// null) inside the write, on the store's writer thread or, in a
/// transaction, on the caller's: a row of another kind, or a non-zero
/// check, is `TS_CORRUPT` and the value stays. A clear inside a
/// transaction removes at most 10,000 keys, else `TS_LIMIT`.
pub(crate) fn bucket_op(a: Args<'_, RawBucket>, out: *mut TsResult) -> Result<()> {
    let (rb, key, c) = (&*a.h, a.key, a.call);
    let mut r = TsResult::empty();
    match c.op {
        TS_OP_CLEAR => _ = a.write(BucketWrite::Clear)?,
        TS_OP_LIST => r.page = list(rb, a.scope, c, key)?,
        _ => key_op(&a, &mut r).map_err(|e| rb.named(key, e))?,
    }
    set(out, r);
    Ok(())
}

/// The calls of a bucket about one key, whose errors name it.
fn key_op(a: &Args<'_, RawBucket>, r: &mut TsResult) -> Result<()> {
    let (rb, key, c) = (&*a.h, a.key, a.call);
    let raw = || unsafe { raw_in(c.kind, c.integer, a.value.as_ptr(), a.value.len()) };
    let opts = |call| write_options(&c.options, call);
    let k = || key.to_vec();
    let write = match c.op {
        TS_OP_GET => {
            (r.found, r.entry) = found(a.scope.entry(rb, key)?, c.want)?;
            return Ok(());
        }
        TS_OP_HAS => {
            r.found = a.scope.has(rb, key)?;
            return Ok(());
        }
        TS_OP_SET | TS_OP_SUBMIT => {
            let (raw, opts) = (raw()?, opts(WriteCall::Set)?);
            // A submit on the store returns at once, its answer queued; in a
            // scope, or on a thread whose transaction holds the writer, it
            // is answered here, as a set is, and says so in `found`.
            r.found = c.op == TS_OP_SUBMIT;
            if r.found && matches!(a.scope, Scope::Direct) && refused(rb.store()).is_none() {
                r.found = false;
                return submit(rb, key, raw, opts, c);
            }
            BucketWrite::Set(k(), raw, opts)
        }
        TS_OP_CREATE => BucketWrite::Create(k(), raw()?, opts(WriteCall::Create)?.expiry),
        TS_OP_TAKE => {
            let check = decodes_as(c.want, c.check, c.check_ctx);
            BucketWrite::Take(k(), opts(WriteCall::Take)?.if_version, Box::new(check))
        }
        TS_OP_DELETE => BucketWrite::Delete(k(), opts(WriteCall::Delete)?.if_version),
        TS_OP_EXPIRE => {
            let (expiry, at) = expire_options(&c.options)?;
            BucketWrite::Expire(k(), expiry, at)
        }
        op => return Err(no_op("bucket", op)),
    };
    written(r, a.write(write)?, c.want).map(|_| ())
}

/// Fills `r` with what a write answered, an entry's value read as `want`;
/// a quota's answer, which goes elsewhere, is returned.
pub(crate) fn written(r: &mut TsResult, w: Written, want: i32) -> Result<Option<Allowance>> {
    match w {
        Written::Version(v) => r.number = v.get(),
        Written::Created(created) => {
            r.found = created.written();
            r.entry = match created {
                Created::Written { version, expires_at } => entry_of(TsValue::null(), version, expires_at),
                Created::Found(e) => entry_of(value_out(&e.value, want)?, e.version, e.expires_at),
            };
        }
        Written::Taken(taken) => (r.found, r.entry) = found(taken, want)?,
        Written::Found(f) => r.found = f,
        Written::Count(n) => r.number = n,
        Written::Allowance(a) => return Ok(Some(a)),
        Written::Nothing => {}
    }
    Ok(None)
}

/// Lists a page of the branch's own keys after `after` (when the call has
/// one), every value read as the call's `want`.
fn list(rb: &RawBucket, scope: Scope, c: &TsCall, after: &[u8]) -> Result<*mut TsPage> {
    let opts = ListOptions {
        after: c.has_after.then(|| Key(after.to_vec())),
        limit: match c.limit {
            0 => None,
            n => Some(tinystore::page_size(n).map_err(|e| e.in_bucket(rb.name()))?),
        },
    };
    let page = scope.list(rb, &opts)?;
    for e in &page.entries {
        value_view(&e.value, c.want).map_err(|x| rb.named(&e.key.0, x))?;
    }
    Ok(Box::into_raw(Box::new(TsPage { page, want: c.want })))
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
            Some(f) if unsafe { f(check_ctx, &v) } != 0 => Err(tinystore::undecodable_take()),
            _ => Ok(()),
        }
    }
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
    let entry = TsEntry {
        key: e.key.0.as_ptr(),
        key_len: e.key.0.len(),
        ..entry_of(v, e.version, e.expires_at)
    };
    set(out, entry);
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
