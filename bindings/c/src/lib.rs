//! The C ABI of TinyStore KV, the layer under the Go package.
//!
//! It converts and maps errors, and nothing else: every rule lives in the
//! core crate `tinystore`. `include/tinystore.h` declares its items: cbindgen
//! writes it from this crate (`make generate`, settings in `cbindgen.toml`),
//! and `make check-generated` fails when the committed header is stale.
//!
//! Conventions, for every function:
//! - Handles (`TsStore`, `TsHandle`, `TsScope`, `TsPage`, `TsError`,
//!   `TsCancel`...) are opaque pointers, made by the ABI and freed by its
//!   `*_free` function.
//! - A fallible function returns `TS_OK` (0) or the code of an error kind
//!   (`TS_INVALID`...), and, when its `err` argument is not null, stores a
//!   `TsError` there that the caller reads with `ts_error_view` and frees
//!   with `ts_error_free`.
//! - Text and bytes come in as a pointer and a length, and are only read
//!   during the call. A null pointer with length 0 is empty.
//! - Bytes going out in a `TsResult` (the entry of a get, take or create;
//!   a once's answer) belong to the caller, who frees them with
//!   `ts_bytes_free`; those in a `TsPage` belong to the page.
//! - No panic crosses the boundary: it becomes `TS_IO` with its message.
//! - Each kind of handle has one call (`call.rs`), given an operation code
//!   and the scope it runs in: null for the store itself, or a transaction
//!   or view (`scope.rs`).
//! - Writes on the store block until durable. A `TsCancel` passed to a
//!   write lets another thread give up on it before its group starts.
//!
//! # Safety
//!
//! Every function is `unsafe`: pointers must be valid for the lengths given,
//! handles must come from this ABI and not be used after their `*_free`.

#![allow(clippy::missing_safety_doc)] // the crate-level "Safety" section covers every function

mod answers;
mod bucket;
mod call;
mod config;
mod limits;
mod logs;
mod once;
mod open;
mod scope;
mod store;
mod value;
mod waits;

// The C ABI fuzz check (fuzz/src/c_abi/), whose test replays its corpus.
#[cfg(test)]
#[path = "../../../fuzz/src/c_abi/mod.rs"]
mod fuzz_c_abi;

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use tinystore::{Branch, Branches, Error, ErrorKind, Result};

pub use answers::*;
pub use bucket::*;
pub use call::*;
pub use config::*;
pub use limits::*;
pub use logs::*;
pub use once::*;
pub use open::*;
pub use scope::*;
pub use store::*;
pub use value::*;
pub use waits::*;

/// The call succeeded.
pub const TS_OK: i32 = 0;
/// Bad input: a name, key, value, duration, option. Nothing was written.
pub const TS_INVALID: i32 = 1;
/// A bound was reached (a value over 1 MiB, a counter past int64...).
pub const TS_LIMIT: i32 = 2;
/// A version check failed.
pub const TS_CONFLICT: i32 = 3;
/// A row does not decode as the type asked for, or the file is damaged.
pub const TS_CORRUPT: i32 = 4;
/// The store is closed.
pub const TS_CLOSED: i32 = 5;
/// A group's commit failed: the write may or may not be in the file.
pub const TS_OUTCOME_UNKNOWN: i32 = 6;
/// The file system or SQLite failed.
pub const TS_IO: i32 = 7;
/// The caller gave up before its write started; nothing was written.
pub const TS_CANCELLED: i32 = 8;

/// The code of an error kind, as the header spells it.
pub(crate) fn code_of(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::Invalid => TS_INVALID,
        ErrorKind::Limit => TS_LIMIT,
        ErrorKind::Conflict => TS_CONFLICT,
        ErrorKind::Corrupt => TS_CORRUPT,
        ErrorKind::Closed => TS_CLOSED,
        ErrorKind::OutcomeUnknown => TS_OUTCOME_UNKNOWN,
        ErrorKind::Io => TS_IO,
        ErrorKind::Cancelled => TS_CANCELLED,
    }
}

/// The error kind of a code, for errors the caller builds (`ts_error_new`).
pub(crate) fn kind_of(code: i32) -> Option<ErrorKind> {
    ErrorKind::ALL.into_iter().find(|&k| code_of(k) == code)
}

/// An error: a kind, a message, and the bucket and path it is about, with
/// the text the core renders of them, which the view lends.
pub struct TsError(Error, String);

impl TsError {
    pub(crate) fn new(e: Error) -> TsError {
        let text = e.text();
        TsError(e, text)
    }
}

/// A borrowed look at a `TsError`; its pointers live as long as the error.
#[repr(C)]
pub struct TsErrorView {
    /// The kind's code (`TS_INVALID`...).
    pub code: i32,
    /// The message, UTF-8, without the bucket and path.
    pub message: *const u8,
    /// The message's length in bytes.
    pub message_len: usize,
    /// The bucket (or other handle) the error is about; null if none.
    pub bucket: *const u8,
    /// The bucket name's length in bytes.
    pub bucket_len: usize,
    /// The path of owners and key, `owner/owner/key`; null if none.
    pub path: *const u8,
    /// The path's length in bytes.
    pub path_len: usize,
    /// The message with the bucket and path it is about, as the core shows
    /// every error after its kind: `the key is absent (bucket b, key k)`.
    pub text: *const u8,
    /// The text's length in bytes.
    pub text_len: usize,
}

/// Fills `out` with a view of `err`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_error_view(err: *const TsError, out: *mut TsErrorView) {
    let (Some(e), Some(out)) = (unsafe { err.as_ref() }, unsafe { out.as_mut() }) else {
        return;
    };
    let text = |s: Option<&str>| s.map_or((std::ptr::null(), 0), |s| (s.as_ptr(), s.len()));
    let (message, message_len) = text(Some(e.0.message()));
    let (bucket, bucket_len) = text(e.0.bucket());
    let (path, path_len) = text(e.0.path());
    let (shown, shown_len) = text(Some(&e.1));
    *out = TsErrorView {
        code: code_of(e.0.kind()),
        message,
        message_len,
        bucket,
        bucket_len,
        path,
        path_len,
        text: shown,
        text_len: shown_len,
    };
}

/// Frees an error. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_error_free(err: *mut TsError) {
    unsafe { free(err) }
}

/// Frees what the ABI boxed for the caller (a handle, an error). Null is ignored.
pub(crate) unsafe fn free<T>(p: *mut T) {
    if !p.is_null() {
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Bad input, in the core's kind.
pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Invalid, message)
}

/// Frees bytes the ABI handed out (a `TsValue`'s or `TsEntry`'s). Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_bytes_free(ptr: *mut u8, len: usize) {
    if !ptr.is_null() {
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
    }
}

/// Hands bytes to the caller, who frees them with `ts_bytes_free`. Empty
/// bytes are a null pointer, so nothing needs freeing.
pub(crate) fn give_bytes(v: Vec<u8>) -> (*mut u8, usize) {
    if v.is_empty() {
        return (std::ptr::null_mut(), 0);
    }
    let b = v.into_boxed_slice();
    let len = b.len();
    (Box::into_raw(b).cast::<u8>(), len)
}

/// The bytes at `ptr`, borrowed for the call; null with length 0 is empty.
pub(crate) unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// The UTF-8 text at `ptr`, or `Invalid` naming `what`.
pub(crate) unsafe fn text<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a str> {
    std::str::from_utf8(unsafe { bytes(ptr, len) }).map_err(|_| invalid(format!("the {what} is not UTF-8 text")))
}

/// Runs `f`, turning its error or panic into a code and a `TsError` in `err`.
pub(crate) fn guard(err: *mut *mut TsError, f: impl FnOnce() -> Result<()>) -> i32 {
    let e = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return TS_OK,
        Ok(Err(e)) => e,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Error::new(ErrorKind::Io, format!("a panic inside tinystore (a bug): {what}"))
        }
    };
    let code = code_of(e.kind());
    if !err.is_null() {
        unsafe { *err = Box::into_raw(Box::new(TsError::new(e))) };
    }
    code
}

/// The core's error for a fault of a bucket's own codec, of JSON, or of a
/// value or row not of the handle's type `ty` (which only `value_type` and
/// `row_type` name), named by a word (see `tinystore::CodecFault::named`)
/// with its detail, so that every language words it alike; the caller
/// names its bucket and key.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_codec_fault(
    word: *const u8,
    word_len: usize,
    detail: *const u8,
    detail_len: usize,
    ty: *const u8,
    ty_len: usize,
    err: *mut *mut TsError,
) -> i32 {
    let (word, detail, ty) = unsafe { (bytes(word, word_len), bytes(detail, detail_len), bytes(ty, ty_len)) };
    let ty = String::from_utf8_lossy(ty);
    named_error(err, "codec fault", word, detail, |w, d| {
        tinystore::CodecFault::named(w, d, &ty).map(|f| f.error())
    })
}

/// The core's error for a refusal the caller finds before its call reaches
/// the core, named by a word (`tx_ended`, `view_ended`, ...: see
/// `tinystore::Refusal::named`) with its detail, so that every language
/// words it alike; the caller names its bucket and key.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_refusal(
    word: *const u8,
    word_len: usize,
    detail: *const u8,
    detail_len: usize,
    err: *mut *mut TsError,
) -> i32 {
    let (word, detail) = unsafe { (bytes(word, word_len), bytes(detail, detail_len)) };
    named_error(err, "refusal", word, detail, |w, d| {
        tinystore::Refusal::named(w, d).map(|r| r.error())
    })
}

/// The error a core table names by `word` with its `detail` (a codec's
/// fault, a refusal): `TS_INVALID` for a word it does not know.
fn named_error(
    err: *mut *mut TsError,
    what: &str,
    word: &[u8],
    detail: &[u8],
    named: impl FnOnce(&str, &str) -> Option<Error>,
) -> i32 {
    guard(err, || {
        let word = std::str::from_utf8(word).map_err(|_| invalid(format!("the {what} is not UTF-8 text")))?;
        let detail = String::from_utf8_lossy(detail);
        Err(named(word, &detail).ok_or_else(|| invalid(format!("no {what} {word:?}")))?)
    })
}

/// Builds an error the caller found itself, so that its text is rendered
/// as the core renders every error: about the handle `name` when it is not
/// empty (a handle used after its transaction ended, a closed store), and
/// about its key under `owners` when `key` is not empty (a value its JSON
/// library cannot write or read).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_error_new(
    name: *const u8,
    name_len: usize,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    code: i32,
    message: *const u8,
    message_len: usize,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let name = unsafe { text(name, name_len, "handle name") }?;
        let (owners, key) = unsafe { (bytes(owners, owners_len), bytes(key, key_len)) };
        let e = Error::new(
            kind_of(code).ok_or_else(|| invalid(format!("no error code {code}")))?,
            String::from_utf8_lossy(unsafe { bytes(message, message_len) }),
        );
        Err(match (name.is_empty(), key.is_empty()) {
            (true, _) => e,
            (false, true) => e.in_bucket(name),
            (false, false) => at_key(name, owners_of(owners)?, key, e),
        })
    })
}

/// Names the key of the branch of `owners` under the handle `name` in an
/// error that does not name a key yet.
pub(crate) fn at_key<'a>(name: &str, owners: impl IntoIterator<Item = &'a [u8]>, key: &[u8], e: Error) -> Error {
    if e.path().is_some() {
        return e;
    }
    let branch = owners.into_iter().fold(Branch::root(), |b, o| b.child(o));
    e.at(name, branch.show_with(Some(key)))
}

/// Stores `v` at `out` when it is not null.
pub(crate) fn set<T>(out: *mut T, v: T) {
    if let Some(out) = unsafe { out.as_mut() } {
        *out = v;
    }
}

/// Hands `v` to the caller at `out`, boxed; it frees it with its `*_free`.
pub(crate) fn put<T>(out: *mut *mut T, v: T) -> Result<()> {
    if out.is_null() {
        return Err(invalid("a null out pointer"));
    }
    unsafe { *out = Box::into_raw(Box::new(v)) };
    Ok(())
}

/// The handle at `p`, or `Invalid` naming `what` when it is null.
pub(crate) unsafe fn handle<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    unsafe { p.as_ref() }.ok_or_else(|| invalid(format!("a null {what}")))
}

/// Reads the owners a caller encoded, in order: each a little-endian u32
/// length and its bytes.
pub(crate) fn owners_of(mut enc: &[u8]) -> Result<Vec<&[u8]>> {
    let mut out = Vec::new();
    while !enc.is_empty() {
        let bad = || invalid("the owners are not encoded as u32 lengths and bytes");
        let n = u32::from_le_bytes(enc.get(..4).ok_or_else(bad)?.try_into().expect("four bytes")) as usize;
        out.push(enc.get(4..4 + n).ok_or_else(bad)?);
        enc = &enc[4 + n..];
    }
    Ok(out)
}

/// The branch of `h` that the encoded owners name; `h` itself when none.
pub(crate) fn branch<'a, H: Branches>(h: &'a H, owners: &[u8]) -> Result<Cow<'a, H>> {
    if owners.is_empty() {
        return Ok(Cow::Borrowed(h));
    }
    Ok(Cow::Owned(
        owners_of(owners)?.into_iter().fold(h.clone(), |b, o| b.under(o)),
    ))
}

/// A span in nanoseconds, by the core's rule for durations given as numbers.
pub(crate) fn span(ns: i64, what: &str) -> Result<Duration> {
    tinystore::duration_from_nanos(ns.into(), what)
}

/// The span of a handle `name` opens with, when `has` says it is given;
/// a refusal names the handle.
pub(crate) fn span_if(has: bool, ns: i64, what: &str, name: &str) -> Result<Option<Duration>> {
    has.then(|| span(ns, what).map_err(|e| e.in_bucket(name))).transpose()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_error_kind_has_its_own_code() {
        let codes: Vec<i32> = tinystore::ErrorKind::ALL.iter().map(|&k| crate::code_of(k)).collect();
        let mut unique = codes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), codes.len());
        assert!(!codes.contains(&crate::TS_OK));
        for k in tinystore::ErrorKind::ALL {
            assert_eq!(crate::kind_of(crate::code_of(k)), Some(k));
        }
    }
}
