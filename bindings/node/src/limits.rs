//! Rate limits, quotas and counters (KV-12 to KV-14).
//!
//! A rate limit lives in the engine's memory, so its calls answer inline.
//! Every call of a quota and of counters takes its scope (`scope.rs`), as a
//! bucket's do: on the store a quota's `allow` and `refund`, and a counter's
//! `add`, are writes through the writer's completions like a bucket's
//! `set`; inside a transaction they answer at once.

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::{napi_env, napi_value};
use napi_derive::napi;
use tinystore::{Allowance, Branches, CounterWrite, Counters, Quota, QuotaWrite, RateLimit, Written};

use crate::completions::{self, sync};
use crate::convert::{MAX_SAFE, Ts, arg_key, branch};
use crate::napi_values as js;
use crate::scope::{NativeScope, run, scope_of, written_js};

/// `{ ok, left, retryAt, windows: { name: { used, limit, left, resetsAt } } }`.
pub(crate) fn allowance(env: napi_env, a: &Allowance) -> Ts<napi_value> {
    let windows = js::object(env)?;
    for (name, w) in &a.windows {
        let fields = [
            ("used\0", js::number(env, w.used as f64)?),
            ("limit\0", js::number(env, w.limit as f64)?),
            ("left\0", js::number(env, w.left as f64)?),
            ("resetsAt\0", js::opt_date(env, w.resets_at)?),
        ];
        js::set_key(env, windows, name, js::object_of(env, &fields)?)?;
    }
    js::object_of(
        env,
        &[
            ("ok\0", js::boolean(env, a.ok)?),
            ("left\0", js::number(env, a.left as f64)?),
            ("retryAt\0", js::opt_date(env, a.retry_at)?),
            ("windows\0", windows),
        ],
    )
}

/// A count of requests or uses as a number (1 when not given); the core
/// refuses a negative one and says which counts a call takes (1 up to a
/// burst or a window's limit).
pub(crate) fn count(n: Option<f64>) -> Ts<u64> {
    let n = tinystore::whole_number(n.unwrap_or(1.0), "a count of uses", -MAX_SAFE..=MAX_SAFE)?;
    tinystore::not_negative(n, "a count of uses")
}

/// A counter's step (negative allowed): a safe integer `number`, or a
/// `bigint` of int64 range; `undefined` is 1.
pub(crate) fn step(env: napi_env, v: napi_value) -> Ts<i64> {
    match js::type_name(env, v) {
        "undefined" => Ok(1),
        "number" => tinystore::whole_number(
            js::read_f64(env, v)?,
            "a counter's step (a bigint holds int64)",
            -MAX_SAFE..=MAX_SAFE,
        ),
        "bigint" => tinystore::int64_arg(js::signed_bigint(env, v)?, "a counter's step"),
        t => Err(completions::invalid(format!(
            "a counter's step is a number or a bigint, not {t}"
        ))),
    }
}

/// Opens a rate limit: `rate` as `'5/m'`, `burst` (the rate's count when not given).
pub(crate) fn open_rate_limit(
    store: &tinystore::Store,
    name: &str,
    rate: Option<&str>,
    burst: Option<f64>,
) -> Ts<RateLimit> {
    // The number is converted here; the core says which bursts a rate takes.
    let burst = burst
        .map(|n| tinystore::whole_number(n, "burst", 0..=MAX_SAFE))
        .transpose();
    store.rate_limit_at(name, rate, burst.map_err(|e| e.in_bucket(name))?.map(|b| b as u64))
}

/// A rate limit, or one branch of it.
#[napi]
pub struct NativeRateLimit {
    pub(crate) limit: RateLimit,
}

#[napi]
impl NativeRateLimit {
    /// The branch of `owner`.
    #[napi]
    pub fn under<'e>(&self, env: &'e Env, owner: Unknown<'e>) -> napi::Result<NativeRateLimit> {
        Ok(NativeRateLimit {
            limit: branch(env, &self.limit, &owner)?,
        })
    }

    /// Takes `n` requests (1 when not given) or none: the answer.
    #[napi]
    pub fn allow<'e>(&self, env: &'e Env, key: Unknown<'e>, n: Option<f64>) -> napi::Result<Unknown<'e>> {
        let r = (|| {
            let k = arg_key(env, &key, &self.limit)?;
            let n = count(n).map_err(|e| self.limit.named(&k, e))?;
            allowance(env.raw(), &self.limit.allow_n(k, n)?)
        })();
        completions::value(env, r)
    }

    /// The answer one request would get now, counting nothing.
    #[napi]
    pub fn peek<'e>(&self, env: &'e Env, key: Unknown<'e>) -> napi::Result<Unknown<'e>> {
        let r = arg_key(env, &key, &self.limit).and_then(|k| allowance(env.raw(), &self.limit.peek(k)?));
        completions::value(env, r)
    }

    /// Forgets the key: its next request has the full burst.
    #[napi]
    pub fn reset<'e>(&self, env: &'e Env, key: Unknown<'e>) -> napi::Result<()> {
        let r = arg_key(env, &key, &self.limit).and_then(|k| self.limit.reset(k));
        sync(env, r)
    }
}

/// A quota, or one branch of it.
#[napi]
pub struct NativeQuota {
    pub(crate) quota: Quota,
}

#[napi]
impl NativeQuota {
    /// The branch of `owner`.
    #[napi]
    pub fn under<'e>(&self, env: &'e Env, owner: Unknown<'e>) -> napi::Result<NativeQuota> {
        Ok(NativeQuota {
            quota: branch(env, &self.quota, &owner)?,
        })
    }

    /// Counts `n` uses in every window or in none (an allow), or gives them
    /// back to the windows that have not reset since (`refund`), in
    /// `scope`: the answer (on the store a durable write, resolving with it).
    #[napi(ts_return_type = "Promise<unknown> | unknown")]
    pub fn change<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        n: Option<f64>,
        refund: bool,
        #[napi(ts_arg_type = "NativeTx")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let write = arg_key(env, &key, &self.quota).and_then(|k| {
            let n = count(n).map_err(|e| self.quota.named(&k, e))?;
            Ok(if refund {
                QuotaWrite::Refund(k, n)
            } else {
                QuotaWrite::Allow(k, n)
            })
        });
        run(env, &scope, &self.quota, write, written_js)
    }

    /// The answer one use would get now in `scope`, counting nothing.
    #[napi]
    pub fn peek<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "NativeTx")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let r = arg_key(env, &key, &self.quota)
            .and_then(|k| scope_of(&scope).quota_peek(&self.quota, &k))
            .and_then(|a| allowance(env.raw(), &a));
        completions::value(env, r)
    }

    /// Forgets the key in `scope`: every window starts again at its next use.
    #[napi(ts_return_type = "Promise<void> | void")]
    pub fn reset<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "NativeTx")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let reset = arg_key(env, &key, &self.quota).map(QuotaWrite::Reset);
        run(env, &scope, &self.quota, reset, written_js)
    }
}

/// Counters, or one branch of them, answering `number`s or (`big`) `bigint`s.
#[napi]
pub struct NativeCounters {
    pub(crate) counters: Counters,
    pub(crate) big: bool,
}

/// A counter's value as JS gets it: a `bigint`, or a `number` while it is a
/// safe integer. Past that a number would round it, so a number counter
/// answers `Limit` (the engine has the exact value; a bigint counter reads it).
pub(crate) fn value(env: napi_env, big: bool, v: i64, wrote: bool) -> Ts<napi_value> {
    if big {
        return js::bigint_i64(env, v);
    }
    if !(-MAX_SAFE..=MAX_SAFE).contains(&v) {
        let kept = if wrote { "; the change is kept" } else { "" };
        return Err(tinystore::Error::new(
            tinystore::ErrorKind::Limit,
            format!(
                "the counter is {v}, past the safe integers of a number{kept}: open the counters with {{ type: 'bigint' }}"
            ),
        ));
    }
    js::number(env, v as f64)
}

#[napi]
impl NativeCounters {
    /// The branch of `owner`.
    #[napi]
    pub fn under<'e>(&self, env: &'e Env, owner: Unknown<'e>) -> napi::Result<NativeCounters> {
        let counters = branch(env, &self.counters, &owner)?;
        Ok(NativeCounters { counters, ..*self })
    }

    /// Adds `n` (1 when not given), or keeps the larger of the counter and
    /// `n` (`max`), in `scope`; answers the new value, as a `bigint` or a
    /// safe `number`.
    #[napi(ts_return_type = "Promise<number | bigint> | number | bigint")]
    pub fn change<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "number | bigint | undefined")] n: Unknown<'e>,
        max: bool,
        #[napi(ts_arg_type = "NativeTx")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let step = step(env.raw(), js::raw(&n)).map_err(|e| e.in_bucket(self.counters.name()));
        let (k, n) = sync(env, (|| Ok((arg_key(env, &key, &self.counters)?, step?)))())?;
        let (big, counters, key) = (self.big, self.counters.clone(), k.clone());
        let write = if max {
            CounterWrite::Max(k, n)
        } else {
            CounterWrite::Add(k, n)
        };
        run(
            env,
            &scope,
            &self.counters,
            Ok(write),
            move |env, written| match written {
                Written::Count(v) => value(env, big, v, true).map_err(|e| counters.named(&key, e)),
                written => written_js(env, written),
            },
        )
    }

    /// The counter's value in `scope`: 0 when missing or expired.
    #[napi(ts_return_type = "number | bigint")]
    pub fn get<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "NativeTx")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let r = arg_key(env, &key, &self.counters).and_then(|k| {
            let v = scope_of(&scope).counter_get(&self.counters, &k)?;
            value(env.raw(), self.big, v, false).map_err(|e| self.counters.named(&k, e))
        });
        completions::value(env, r)
    }

    /// Deletes the counter in `scope`; answers whether a live one was there.
    #[napi(ts_return_type = "Promise<boolean> | boolean")]
    pub fn delete<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "NativeTx")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let delete = arg_key(env, &key, &self.counters).map(CounterWrite::Delete);
        run(env, &scope, &self.counters, delete, written_js)
    }

    /// Removes this branch's counters and every branch under it.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn clear<'e>(&self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        run(env, &None, &self.counters, Ok(CounterWrite::Clear), written_js)
    }
}
