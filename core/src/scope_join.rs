//! What a binding's `with(handle)` may bring into a scope (KV-16), decided
//! once for every binding: a transaction takes buckets, durable counters,
//! quotas and once's answers of its own store, and refuses a rate limit
//! (its state is in memory) and `flush_every` counters with the texts of
//! `in_tx`; a snapshot takes a handle of its own store, whose reads it then
//! admits or refuses call by call.

use crate::error::Result;
use crate::limits::{Counters, Quota, RateLimit, RawOnce};
use crate::scope::{Scope, view_reads_only};
use crate::values::RawBucket;

/// A handle given to a scope's `with`.
#[derive(Clone, Copy)]
pub enum Joining<'a> {
    Bucket(&'a RawBucket),
    Counters(&'a Counters),
    Quota(&'a Quota),
    Once(&'a RawOnce),
    RateLimit(&'a RateLimit),
}

impl Scope<'_> {
    /// Refuses at once, nothing done, a handle that cannot join this scope.
    /// On the store every handle is its own.
    pub fn join(&self, handle: Joining<'_>) -> Result<()> {
        let (store, name) = match handle {
            Joining::Bucket(b) => (b.store(), b.name()),
            Joining::Counters(c) => match self {
                Scope::Tx(s) => return s.check_counters(c),
                _ => (c.store(), c.name()),
            },
            Joining::Quota(q) => (q.store(), q.name()),
            Joining::Once(o) => (o.store(), o.name()),
            Joining::RateLimit(r) => {
                return match self {
                    Scope::Direct => Ok(()),
                    Scope::Tx(s) => Err(s.refuse_rate_limit(r)),
                    Scope::View(_) => Err(view_reads_only(r.name())),
                };
            }
        };
        self.admit(store, name)
    }
}
