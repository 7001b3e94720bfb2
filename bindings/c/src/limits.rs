//! Counters, rate limits and quotas: every call of the core's handles, a
//! branch and a scope given per call as for buckets.

use std::time::SystemTime;

use tinystore::{Allowance, CounterWrite, Counters, MAX_WINDOWS, Quota, QuotaWrite, RateLimit, Result, not_negative};

use crate::bucket::written;
use crate::call::*;
use crate::set;

/// The most windows a quota has.
pub const TS_MAX_WINDOWS: usize = 8;
const _: () = assert!(TS_MAX_WINDOWS == MAX_WINDOWS);

/// One window of a quota in an answer.
#[repr(C)]
pub struct TsWindow {
    /// The window's name, `name_len` bytes of it.
    pub name: [u8; 32],
    /// The length of the name.
    pub name_len: usize,
    /// Uses counted since the window started.
    pub used: u64,
    /// The window's limit.
    pub limit: u64,
    /// Uses left before it refuses.
    pub left: u64,
    /// Whether the window has started (and so resets).
    pub has_resets_at: bool,
    /// When it resets, in ns since the Unix epoch.
    pub resets_at_ns: i64,
}

/// The answer of a rate limit or a quota.
#[repr(C)]
pub struct TsAllowance {
    /// Whether the request passed (and was counted).
    pub ok: bool,
    /// How many more would pass now.
    pub left: u64,
    /// Whether `retry_at_ns` holds a time (after a refusal).
    pub has_retry_at: bool,
    /// When the same request would pass, in ns since the Unix epoch.
    pub retry_at_ns: i64,
    /// How many of `windows` are filled (a quota's; 0 for a rate limit).
    pub window_count: usize,
    /// The windows, by name.
    pub windows: [TsWindow; 8],
}

fn nanos(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

pub(crate) fn fill(out: *mut TsAllowance, a: &Allowance) {
    let Some(out) = (unsafe { out.as_mut() }) else { return };
    out.ok = a.ok;
    out.left = a.left;
    out.has_retry_at = a.retry_at.is_some();
    out.retry_at_ns = a.retry_at.map_or(0, nanos);
    out.window_count = 0;
    for (slot, (name, w)) in out.windows.iter_mut().zip(&a.windows) {
        let n = name.len().min(32);
        slot.name = [0; 32];
        slot.name[..n].copy_from_slice(&name.as_bytes()[..n]);
        slot.name_len = n;
        slot.used = w.used;
        slot.limit = w.limit;
        slot.left = w.left;
        slot.has_resets_at = w.resets_at.is_some();
        slot.resets_at_ns = w.resets_at.map_or(0, nanos);
        out.window_count += 1;
    }
}

// ---- counters ----

/// A counter's calls:
/// `TS_OP_ADD` adds the call's `n`, `TS_OP_MAX` keeps the larger of the
/// counter and `n`, `TS_OP_GET` reads it (0 when missing or expired), each
/// answering the value in `number`; `TS_OP_DELETE` says in `found` whether
/// a live one was there; `TS_OP_CLEAR` removes the branch and every branch
/// under it, on the store only. Inside a transaction, counters with
/// flush_every are `TS_INVALID`.
pub(crate) fn counters_op(a: Args<'_, Counters>, out: *mut TsResult) -> Result<()> {
    let (h, key, n) = (&*a.h, a.key.to_vec(), a.call.n);
    let mut r = TsResult::empty();
    let write = match a.call.op {
        TS_OP_ADD => CounterWrite::Add(key, n),
        TS_OP_MAX => CounterWrite::Max(key, n),
        TS_OP_GET => {
            r.number = a.scope.counter_get(h, &key)?;
            set(out, r);
            return Ok(());
        }
        TS_OP_DELETE => CounterWrite::Delete(key),
        TS_OP_CLEAR => CounterWrite::Clear,
        op => return Err(no_op("counters", op)),
    };
    written(&mut r, a.write(write)?, 0)?;
    set(out, r);
    Ok(())
}

/// The call's count of uses; the core refuses a negative one, which names
/// the key of the handle `name`.
fn uses<H: Clone>(a: &Args<'_, H>, name: &str) -> Result<u64> {
    not_negative(a.call.uses, "a count of uses").map_err(|e| a.named(name, e))
}

// ---- rate limits ----

/// A rate limit's calls: `TS_OP_ALLOW` takes
/// the call's `uses` together or none, `TS_OP_PEEK` counts nothing and
/// answers for one, `TS_OP_RESET` forgets the key (its next request has the
/// full burst; it fills no answer). A refusal is an answer, not an error.
/// A rate limit keeps its state in memory: in a scope (not null) the core
/// refuses it, `TS_INVALID`.
pub(crate) fn rate_limit_op(a: Args<'_, RateLimit>, out: *mut TsAllowance) -> Result<()> {
    let (h, key, s) = (&*a.h, a.key, a.scope);
    let answer = match a.call.op {
        TS_OP_ALLOW => s.rate_limit_allow(h, key, uses(&a, h.name())?)?,
        TS_OP_PEEK => s.rate_limit_peek(h, key)?,
        TS_OP_RESET => return s.rate_limit_reset(h, key),
        op => return Err(no_op("rate limit", op)),
    };
    fill(out, &answer);
    Ok(())
}

// ---- quotas ----

/// A quota's calls:
/// `TS_OP_ALLOW` counts the call's `uses` in every window or none,
/// `TS_OP_REFUND` gives them back, `TS_OP_PEEK` answers without counting,
/// `TS_OP_RESET` forgets the key (and fills no answer).
pub(crate) fn quota_op(a: Args<'_, Quota>, out: *mut TsAllowance) -> Result<()> {
    let (h, key) = (&*a.h, a.key);
    let name = h.name();
    let n = match a.call.op {
        TS_OP_ALLOW | TS_OP_REFUND => uses(&a, name)?,
        _ => 0,
    };
    let write = match a.call.op {
        TS_OP_ALLOW => QuotaWrite::Allow(key.to_vec(), n),
        TS_OP_REFUND => QuotaWrite::Refund(key.to_vec(), n),
        TS_OP_PEEK => {
            fill(out, &a.scope.quota_peek(h, key)?);
            return Ok(());
        }
        TS_OP_RESET => QuotaWrite::Reset(key.to_vec()),
        op => return Err(no_op("quota", op)),
    };
    if let Some(answer) = written(&mut TsResult::empty(), a.write(write)?, 0)? {
        fill(out, &answer);
    }
    Ok(())
}
