//! One exported open for every handle but config (`config.rs`): `ts_open`
//! takes the kind and its settings in a `TsOpen`, and a quota's windows as
//! arguments, since cgo passes Go memory to C only as an argument. The core
//! checks every setting, and a refusal names the handle.

use tinystore::{RawBucket, RawOnce, not_negative};

use crate::call::{Kind, TsHandle};
use crate::store::{TsStore, store};
use crate::{TsError, bytes, guard, handle, invalid, owners_of, put, span, span_if, text};

/// A bucket of values: `ttl` or `idle`.
pub const TS_OPEN_BUCKET: i32 = 1;
/// Counters: `ttl` from a counter's first change, `flush_every`.
pub const TS_OPEN_COUNTERS: i32 = 2;
/// A rate limit: `rate`, `burst`.
pub const TS_OPEN_RATE_LIMIT: i32 = 3;
/// A quota: its windows, given as `ts_open`'s arguments.
pub const TS_OPEN_QUOTA: i32 = 4;
/// A once: `keep`.
pub const TS_OPEN_ONCE: i32 = 5;

/// What a handle opens with: its kind, and the settings that kind reads,
/// each only when its `has_` flag is set. Spans are in nanoseconds.
#[repr(C)]
#[derive(Default)]
pub struct TsOpen {
    /// A `TS_OPEN_*`.
    pub kind: i32,
    /// A bucket's or counters' ttl.
    pub has_ttl: bool,
    pub ttl_ns: i64,
    /// A bucket's idle span: a read renews a key's expiry (not with a ttl).
    pub has_idle: bool,
    pub idle_ns: i64,
    /// Counters kept in memory and written every period.
    pub has_flush_every: bool,
    pub flush_every_ns: i64,
    /// A rate limit's `count` requests every `per_ns`; the core refuses a
    /// rate limit without a rate.
    pub has_rate: bool,
    pub count: i64,
    pub per_ns: i64,
    /// A rate limit's burst: how many requests pass at once (the count
    /// when not given).
    pub has_burst: bool,
    pub burst: i64,
    /// How long a once keeps an answer (a day when not given).
    pub has_keep: bool,
    pub keep_ns: i64,
}

/// Opens the handle `name` of the kind `how` says. A quota has `windows`
/// windows: their names encoded as the owners are (u32 length and bytes
/// each), their limits and spans in ns; other kinds take none. The handle
/// goes to `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_open(
    s: *const TsStore,
    name: *const u8,
    name_len: usize,
    how: *const TsOpen,
    names: *const u8,
    names_len: usize,
    limits: *const i64,
    spans_ns: *const i64,
    windows: usize,
    out: *mut *mut TsHandle,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        let (st, o) = (store(s)?, handle(how, "open")?);
        let name = text(name, name_len, "name")?;
        let named = |e: tinystore::Error| e.in_bucket(name);
        let ttl = span_if(o.has_ttl, o.ttl_ns, "ttl", name)?;
        let kind = match o.kind {
            TS_OPEN_BUCKET => Kind::Bucket(RawBucket::open(
                st,
                name,
                ttl,
                span_if(o.has_idle, o.idle_ns, "idle span", name)?,
            )?),
            TS_OPEN_COUNTERS => {
                let mut b = st.counters(name);
                if let Some(ttl) = ttl {
                    b = b.ttl(ttl);
                }
                if let Some(every) = span_if(o.has_flush_every, o.flush_every_ns, "flush_every", name)? {
                    b = b.flush_every(every);
                }
                Kind::Counters(b.open()?)
            }
            TS_OPEN_RATE_LIMIT => {
                let mut b = st.rate_limit(name);
                if o.has_rate {
                    let count = not_negative(o.count, "a rate's count").map_err(named)?;
                    b = b.rate(count, span(o.per_ns, "rate's span").map_err(named)?);
                }
                if o.has_burst {
                    b = b.burst(not_negative(o.burst, "a burst").map_err(named)?);
                }
                Kind::RateLimit(b.open()?)
            }
            TS_OPEN_QUOTA => {
                let mut b = st.quota(name);
                let names = owners_of(bytes(names, names_len))?;
                if names.len() != windows || (windows > 0 && (limits.is_null() || spans_ns.is_null())) {
                    return Err(invalid("the windows' names, limits and spans differ in number"));
                }
                for (i, n) in names.into_iter().enumerate() {
                    let n = std::str::from_utf8(n).map_err(|_| invalid("a window name is not UTF-8"))?;
                    let limit =
                        not_negative(*limits.add(i), &format!("the limit of the window {n:?}")).map_err(named)?;
                    b = b.window(n, limit, span(*spans_ns.add(i), "window's span").map_err(named)?);
                }
                Kind::Quota(b.open()?)
            }
            TS_OPEN_ONCE => Kind::Once(RawOnce::open(st, name, span_if(o.has_keep, o.keep_ns, "keep", name)?)?),
            k => return Err(invalid(format!("no handle kind {k} to open"))),
        };
        put(out, TsHandle(kind))
    })
}
