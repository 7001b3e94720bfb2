//! The writes of every handle as data: one enum a kind of handle (a
//! bucket's, counters', a quota's, a once's), each variant a core call with
//! its converted arguments. [`crate::scope::run`] is their one dispatch: it
//! runs a write inside a transaction at once ([`Write::in_scope`], which the
//! core refuses in a snapshot) or hands it to the store's writer
//! ([`Write::to_writer`]), so a `#[napi]` method only converts its
//! arguments into a variant.

use napi::sys::{napi_env, napi_value};
use tinystore::{
    Allowance, Counters, Created, Expiry, Quota, Raw, RawBucket, RawOnce, Scope, Ticket, Version, WriteOptions,
};

use crate::completions::Then;
use crate::convert::{self, Ts};
use crate::napi_values as js;

/// What a write answers, whichever handle made it.
pub(crate) enum Written {
    Version(Version),
    Created(Created<Raw>),
    /// Whether a live key (or kept answer) was there.
    Found(bool),
    Nothing,
    /// A counter's new value.
    Count(i64),
    Allowance(Allowance),
}

impl Written {
    /// The JS value of an answer that needs nothing of its handle: a
    /// version as its text, whether a create wrote, a counter as a number.
    pub(crate) fn to_js(env: napi_env, written: Written) -> Ts<napi_value> {
        match written {
            Written::Version(v) => convert::version_value(env, v),
            Written::Created(c) => js::boolean(env, c.written()),
            Written::Found(found) => js::boolean(env, found),
            Written::Nothing => js::undefined(env),
            Written::Count(v) => crate::limits::value(env, false, v, true),
            Written::Allowance(a) => crate::limits::allowance(env, &a),
        }
    }
}

/// A write of the handle `On`: the same core call inside a transaction and
/// on the store.
pub(crate) trait Write: Sized + 'static {
    /// The handle the write is of.
    type On: Clone + 'static;
    /// Runs it in `scope` (a transaction; the core refuses it in a snapshot).
    fn in_scope(self, scope: Scope<'_>, on: &Self::On) -> Ts<Written>;
    /// Hands it to the store's writer, which answers through `done`.
    fn to_writer(self, on: &Self::On, done: Then<Written>) -> Ts<Ticket>;
}

/// A write of a bucket: the key, then the arguments of the core's call.
pub(crate) enum BucketWrite {
    Set(Vec<u8>, Raw, WriteOptions),
    Create(Vec<u8>, Raw, Option<Expiry>),
    Delete(Vec<u8>, Option<Version>),
    Expire(Vec<u8>, Expiry, Option<Version>),
    Clear,
}

impl Write for BucketWrite {
    type On = RawBucket;

    fn in_scope(self, s: Scope<'_>, b: &RawBucket) -> Ts<Written> {
        match self {
            BucketWrite::Set(k, v, opts) => s.set(b, &k, v, opts).map(Written::Version),
            BucketWrite::Create(k, v, expiry) => s.create(b, &k, v, expiry).map(Written::Created),
            BucketWrite::Delete(k, v) => s.delete(b, &k, v).map(Written::Found),
            BucketWrite::Expire(k, expiry, v) => s.expire(b, &k, expiry, v).map(Written::Found),
            BucketWrite::Clear => s.clear(b).map(|()| Written::Nothing),
        }
    }

    fn to_writer(self, b: &RawBucket, done: Then<Written>) -> Ts<Ticket> {
        match self {
            BucketWrite::Set(k, v, opts) => b.set_then(&k, v, opts, |r| done(r.map(Written::Version))),
            BucketWrite::Create(k, v, expiry) => b.create_then(&k, v, expiry, |r| done(r.map(Written::Created))),
            BucketWrite::Delete(k, v) => b.delete_then(&k, v, |r| done(r.map(Written::Found))),
            BucketWrite::Expire(k, expiry, v) => b.expire_then(&k, expiry, v, |r| done(r.map(Written::Found))),
            BucketWrite::Clear => b.clear_then(|r| done(r.map(|()| Written::Nothing))),
        }
    }
}

/// A write of counters: the key and the step of `add` or `max`.
pub(crate) enum CounterWrite {
    Add(Vec<u8>, i64),
    Max(Vec<u8>, i64),
    Delete(Vec<u8>),
}

impl Write for CounterWrite {
    type On = Counters;

    fn in_scope(self, s: Scope<'_>, c: &Counters) -> Ts<Written> {
        match self {
            CounterWrite::Add(k, n) => s.counter_add(c, &k, n).map(Written::Count),
            CounterWrite::Max(k, n) => s.counter_max(c, &k, n).map(Written::Count),
            CounterWrite::Delete(k) => s.counter_delete(c, &k).map(Written::Found),
        }
    }

    fn to_writer(self, c: &Counters, done: Then<Written>) -> Ts<Ticket> {
        match self {
            CounterWrite::Add(k, n) => c.add_then(k, n, |r| done(r.map(Written::Count))),
            CounterWrite::Max(k, n) => c.max_then(k, n, |r| done(r.map(Written::Count))),
            CounterWrite::Delete(k) => c.delete_then(k, |r| done(r.map(Written::Found))),
        }
    }
}

/// A write of a quota: the key and the count of uses.
pub(crate) enum QuotaWrite {
    Allow(Vec<u8>, u64),
    Refund(Vec<u8>, u64),
    Reset(Vec<u8>),
}

impl Write for QuotaWrite {
    type On = Quota;

    fn in_scope(self, s: Scope<'_>, q: &Quota) -> Ts<Written> {
        match self {
            QuotaWrite::Allow(k, n) => s.quota_allow(q, &k, n).map(Written::Allowance),
            QuotaWrite::Refund(k, n) => s.quota_refund(q, &k, n).map(Written::Allowance),
            QuotaWrite::Reset(k) => s.quota_reset(q, &k).map(|()| Written::Nothing),
        }
    }

    fn to_writer(self, q: &Quota, done: Then<Written>) -> Ts<Ticket> {
        match self {
            QuotaWrite::Allow(k, n) => q.allow_n_then(k, n, |r| done(r.map(Written::Allowance))),
            QuotaWrite::Refund(k, n) => q.refund_n_then(k, n, |r| done(r.map(Written::Allowance))),
            QuotaWrite::Reset(k) => q.reset_then(k, |r| done(r.map(|()| Written::Nothing))),
        }
    }
}

/// The one write of a once given a scope: forgetting a key's answer.
pub(crate) struct OnceDelete(pub(crate) Vec<u8>);

impl Write for OnceDelete {
    type On = RawOnce;

    fn in_scope(self, s: Scope<'_>, o: &RawOnce) -> Ts<Written> {
        s.once_delete(o, &self.0).map(Written::Found)
    }

    fn to_writer(self, o: &RawOnce, done: Then<Written>) -> Ts<Ticket> {
        o.delete_then(self.0, |r| done(r.map(Written::Found)))
    }
}
