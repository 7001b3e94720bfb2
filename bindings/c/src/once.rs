//! `once`: a key's work runs once and its answer is kept.
//!
//! The caller runs the work itself between a `ts_call` of `TS_OP_BEGIN`
//! (which waits for any run of the key in this process or another) and
//! `ts_claim_keep` or `ts_claim_abandon`.

use tinystore::{Begun, CallerContext, Claim, Error, OnceDelete, RawOnce, Result, Scope};

use crate::bucket::written;
use crate::call::*;
use crate::value::{raw_in, value_out};
use crate::waits::answer_or_give_up;
use crate::{TsError, guard, invalid, set};

/// The run of one key, held until `ts_claim_keep` or `ts_claim_abandon`.
pub struct TsClaim(Claim);

/// The runs of once a caller is inside, as it keeps them in its own context
/// (Go's `context.Context`): a `TsCall` of `TS_OP_BEGIN` hands it to the core, which
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

/// A once's calls. `TS_OP_BEGIN`, on
/// the store only, begins a run of the key, waiting for any run of it to
/// end: either an answer is kept (`found`, with it in `entry.value`, read
/// as `want`, its bytes the caller's), or the key is the caller's to run:
/// `claim` holds the run, for `ts_claim_keep` or `ts_claim_abandon`. A
/// fired cancel ends the wait with `TS_CANCELLED`. The call's `caller` is
/// the context of the call (null: inside no run); a run of a key inside its
/// own run, or from a thread that holds a transaction of the store, is
/// `TS_INVALID`. `TS_OP_GET` reads the answer kept, in `scope`, as `begin`
/// answers it; `TS_OP_DELETE` forgets it, so the next run runs again.
pub(crate) fn once_op(a: Args<'_, RawOnce>, out: *mut TsResult) -> Result<()> {
    let (h, key, c) = (&*a.h, a.key, a.call);
    let named = |e| a.named(h.name(), e);
    let mut r = TsResult::empty();
    let kept = match c.op {
        TS_OP_BEGIN => {
            if !matches!(a.scope, Scope::Direct) {
                return Err(tinystore::once_run_refused().in_bucket(h.name()));
            }
            if out.is_null() {
                // The claim would be lost, and the key held.
                return Err(invalid("a null out pointer"));
            }
            let empty = CallerContext::new();
            let caller = unsafe { c.caller.as_ref() }.map_or(&empty, |c| &c.0);
            // A fired cancel ends the wait; a claim the caller gets after
            // it lets go at once.
            let gave_up = named(tinystore::waiter_gave_up());
            match answer_or_give_up(c.cancel, |done| h.begin(key, caller, done), |()| gave_up)? {
                Begun::Kept(raw) => Some(raw),
                Begun::Run(claim) => {
                    r.claim = Box::into_raw(Box::new(TsClaim(claim)));
                    None
                }
            }
        }
        TS_OP_GET => a.scope.once_get(h, key)?,
        TS_OP_DELETE => {
            written(&mut r, a.write(OnceDelete(key.to_vec()))?, c.want)?;
            None
        }
        op => return Err(no_op("once", op)),
    };
    if let Some(raw) = kept {
        r.found = true;
        r.entry.value = value_out(&raw, c.want).map_err(named)?;
    }
    set(out, r);
    Ok(())
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
        rx.recv().unwrap_or_else(|_| Err(Error::unanswered()))
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
