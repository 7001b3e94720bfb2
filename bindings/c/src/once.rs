//! `once`: a key's work runs once and its answer is kept.
//!
//! The caller runs the work itself between `ts_once_begin` (which waits for
//! any run of the key in this process or another) and `ts_claim_keep` or
//! `ts_claim_abandon`.

use tinystore::{Begun, CallerContext, Claim, Error, ErrorKind, RawOnce, Scope};

use crate::scope::{TsScope, scope_of};
use crate::store::{TsStore, store};
use crate::value::{TsValue, raw_in, value_out};
use crate::waits::{TsCancel, answer_or_give_up, wait_on_store};
use crate::{TsError, bytes, guard, put, set, span_if, text, under};

/// A once, opened on a store.
pub struct TsOnce(pub(crate) RawOnce);

/// The run of one key, held until `ts_claim_keep` or `ts_claim_abandon`.
pub struct TsClaim(Claim);

/// The runs of once a caller is inside, as it keeps them in its own context
/// (Go's `context.Context`): `ts_once_begin` hands it to the core, which
/// refuses a run of a key inside its own run.
pub struct TsCaller(CallerContext);

/// A caller's context inside the run `claim` holds: `outer` (null for a
/// context inside nothing) and that run. Free it with `ts_caller_free`; it
/// stays valid after the claim is spent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_caller_inside_run(outer: *const TsCaller, claim: *const TsClaim) -> *mut TsCaller {
    let outer = unsafe { outer.as_ref() }.map(|c| c.0.clone()).unwrap_or_default();
    let inner = match unsafe { claim.as_ref() } {
        Some(c) => outer.inside_run(&c.0),
        None => outer,
    };
    Box::into_raw(Box::new(TsCaller(inner)))
}

/// Frees a caller's context. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_caller_free(c: *mut TsCaller) {
    unsafe { crate::free(c) }
}

fn named(o: &RawOnce, owners: &[u8], key: &[u8], e: Error) -> Error {
    crate::at_key(o.name(), crate::owners_of(owners).unwrap_or_default(), key, e)
}

/// Opens the once `name`, keeping answers `keep_ns` (a day when `has_keep`
/// is false).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_once_open(
    s: *const TsStore,
    name: *const u8,
    name_len: usize,
    keep_ns: i64,
    has_keep: bool,
    out: *mut *mut TsOnce,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let name = unsafe { text(name, name_len, "once name") }?;
        let keep = span_if(has_keep, keep_ns, "keep", name)?;
        put(out, TsOnce(RawOnce::open(unsafe { store(s) }?, name, keep)?))
    })
}

/// Frees a once handle. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_once_free(o: *mut TsOnce) {
    unsafe { crate::free(o) }
}

/// Begins a run of a key, waiting for any run of it to end. Either an
/// answer is kept: `kept` is true and `value` holds it, read as `want` (its
/// bytes are the caller's); or the key is the caller's to run: `claim`
/// holds the run, for `ts_claim_keep` or `ts_claim_abandon`. A fired
/// `cancel` ends the wait with `TS_CANCELLED`. `caller` is the context of
/// the call (null: inside no run); a run of a key inside its own run, or
/// from a thread that holds a transaction of the store, is `TS_INVALID`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_once_begin(
    o: *const TsOnce,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    want: i32,
    caller: *const TsCaller,
    cancel: *const TsCancel,
    kept: *mut bool,
    value: *mut TsValue,
    claim: *mut *mut TsClaim,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let enc = unsafe { bytes(owners, owners_len) };
        let h = unsafe { under(o, owners, owners_len) }?;
        let key = unsafe { bytes(key, key_len) };
        if claim.is_null() {
            return Err(crate::invalid("a null claim pointer"));
        }
        let empty = CallerContext::new();
        let caller = unsafe { caller.as_ref() }.map_or(&empty, |c| &c.0);
        // A fired cancel ends the wait; a claim the caller gets after it
        // lets go at once.
        let gave_up = named(&h, enc, key, tinystore::waiter_gave_up());
        match answer_or_give_up(cancel, |done| h.begin(key, caller, done), |()| gave_up)? {
            Begun::Kept(raw) => {
                set(value, value_out(&raw, want).map_err(|e| named(&h, enc, key, e))?);
                set(kept, true);
                Ok(())
            }
            Begun::Run(c) => {
                set(kept, false);
                put(claim, TsClaim(c))
            }
        }
    })
}

/// Keeps `value` as the key's answer and lets go of the run, in one durable
/// write; waiters get the answer. The claim is consumed, whatever the result.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_claim_keep(
    claim: *mut TsClaim,
    kind: i32,
    integer: i64,
    value: *const u8,
    value_len: usize,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        if claim.is_null() {
            return Err(crate::invalid("a null claim"));
        }
        let c = unsafe { Box::from_raw(claim) }.0;
        let raw = unsafe { raw_in(kind, integer, value, value_len) }?; // dropping `c` lets go
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        c.keep(raw, move |r| {
            let _ = tx.send(r);
        });
        rx.recv().unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Closed,
                "the store closed before the answer was kept",
            ))
        })
    })
}

/// Lets go of the run keeping nothing (the work failed): a waiter, or the
/// next run, runs the key again. The claim is consumed. Null is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_claim_abandon(claim: *mut TsClaim) {
    if !claim.is_null() {
        unsafe { Box::from_raw(claim) }.0.abandon();
    }
}

/// The answer kept for a key in `scope`, read as `want` (its bytes are the
/// caller's); `found` says whether one is kept.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_once_get(
    o: *const TsOnce,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    want: i32,
    value: *mut TsValue,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let enc = unsafe { bytes(owners, owners_len) };
        let h = unsafe { under(o, owners, owners_len) }?;
        let key = unsafe { bytes(key, key_len) };
        let got = unsafe { scope_of(scope) }.once_get(&h, key)?;
        set(found, got.is_some());
        if let Some(raw) = got {
            set(value, value_out(&raw, want).map_err(|e| named(&h, enc, key, e))?);
        }
        Ok(())
    })
}

/// Forgets the answer kept for a key in `scope`, so the next run runs
/// again; `found` says whether one was kept.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_once_delete(
    o: *const TsOnce,
    scope: *const TsScope,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    cancel: *const TsCancel,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let h = unsafe { under(o, owners, owners_len) }?;
        let key = unsafe { bytes(key, key_len) };
        let was = match unsafe { scope_of(scope) } {
            Scope::Direct => wait_on_store(h.store(), h.name(), cancel, |done| h.delete_then(key, done)),
            s => s.once_delete(&h, key),
        };
        set(found, was?);
        Ok(())
    })
}
