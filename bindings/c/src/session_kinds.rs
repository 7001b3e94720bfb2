//! Counters, quotas and once answers inside a transaction (KV-16): the
//! calls of `tinystore::Scope` for every durable kind inside a transaction,
//! as the bucket calls of `session.rs`. What cannot join a transaction answers the
//! engine's refusal (`TS_INVALID`): counters with flush_every, rate limits.

use tinystore::{Error, ErrorKind};

use crate::limits::{TsAllowance, TsCounters, TsQuota, TsRateLimit, fill, handle, set};
use crate::once::TsOnce;
use crate::session::{TsTx, tx};
use crate::value::{TsValue, value_out};
use crate::{TsError, branch, bytes, guard};

/// What `ts_tx_counters` does: add `n`.
pub const TS_TX_COUNTER_ADD: i32 = 0;
/// Keeps the larger of the counter and `n`.
pub const TS_TX_COUNTER_MAX: i32 = 1;
/// Reads the counter.
pub const TS_TX_COUNTER_GET: i32 = 2;
/// Deletes the counter (`found` says whether a live one was there).
pub const TS_TX_COUNTER_DELETE: i32 = 3;

/// `TS_INVALID` when counters cannot join the transaction: flush_every
/// counters keep their counts in memory; counters of another store.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_check_counters(t: *const TsTx, c: *const TsCounters, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        t.session.check_counters(&unsafe { handle(c, "counters") }?.0)
    })
}

/// The engine's refusal of a rate limit inside a transaction: always
/// `TS_INVALID`, saying why (its state is in memory).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_refuse_rate_limit(t: *const TsTx, r: *const TsRateLimit, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        Err(t.session.refuse_rate_limit(&unsafe { handle(r, "rate limit") }?.0))
    })
}

/// A durable counter's call inside the transaction (`op`, one of
/// `TS_TX_COUNTER_*`): the value goes to `out`, a delete's answer to `found`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_counters(
    t: *const TsTx,
    c: *const TsCounters,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    op: i32,
    n: i64,
    out: *mut i64,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let h = branch(&unsafe { handle(c, "counters") }?.0, unsafe {
            bytes(owners, owners_len)
        })?;
        let key = unsafe { bytes(key, key_len) };
        let s = t.scope();
        match op {
            TS_TX_COUNTER_ADD => set(out, s.counter_add(&h, key, n)?),
            TS_TX_COUNTER_MAX => set(out, s.counter_max(&h, key, n)?),
            TS_TX_COUNTER_GET => set(out, s.counter_get(&h, key)?),
            TS_TX_COUNTER_DELETE => set(found, s.counter_delete(&h, key)?),
            _ => return Err(Error::new(ErrorKind::Invalid, format!("no counter operation {op}"))),
        }
        Ok(())
    })
}

/// A quota's call inside the transaction, as `ts_quota_use` (`op` one of
/// `TS_QUOTA_*`; a reset fills no answer).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_quota(
    t: *const TsTx,
    q: *const TsQuota,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    op: i32,
    n: u64,
    out: *mut TsAllowance,
    err: *mut *mut TsError,
) -> i32 {
    use crate::limits::{TS_QUOTA_ALLOW, TS_QUOTA_PEEK, TS_QUOTA_REFUND, TS_QUOTA_RESET};
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let h = branch(&unsafe { handle(q, "quota") }?.0, unsafe { bytes(owners, owners_len) })?;
        let key = unsafe { bytes(key, key_len) };
        let s = t.scope();
        let a = match op {
            TS_QUOTA_ALLOW => s.quota_allow(&h, key, n)?,
            TS_QUOTA_REFUND => s.quota_refund(&h, key, n)?,
            TS_QUOTA_PEEK => s.quota_peek(&h, key)?,
            TS_QUOTA_RESET => return s.quota_reset(&h, key),
            _ => return Err(Error::new(ErrorKind::Invalid, format!("no quota operation {op}"))),
        };
        fill(out, &a);
        Ok(())
    })
}

/// The answer a once keeps for a key, as the transaction sees it, read as
/// `want`; `found` says whether one is kept.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_once_get(
    t: *const TsTx,
    o: *const TsOnce,
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
        let t = unsafe { tx(t) }?;
        let enc = unsafe { bytes(owners, owners_len) };
        let h = branch(unsafe { crate::once::handle(o) }?, enc)?;
        let key = unsafe { bytes(key, key_len) };
        let got = t.scope().once_get(&h, key)?;
        set(found, got.is_some());
        if let Some(raw) = got {
            let v = value_out(&raw, want).map_err(|e| crate::once::named(&h, enc, key, e))?;
            set(value, v);
        }
        Ok(())
    })
}

/// Forgets the answer a once keeps for a key, inside the transaction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_tx_once_delete(
    t: *const TsTx,
    o: *const TsOnce,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    found: *mut bool,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let t = unsafe { tx(t) }?;
        let h = branch(unsafe { crate::once::handle(o) }?, unsafe { bytes(owners, owners_len) })?;
        let key = unsafe { bytes(key, key_len) };
        set(found, t.scope().once_delete(&h, key)?);
        Ok(())
    })
}
