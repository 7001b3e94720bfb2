//! The options and identity of one bucket (`BucketCore`), shared by its
//! branches, and the expiry rule a write applies. Kept apart from the calls
//! because every kind of bucket opens one: `RawBucket`, kept config and the
//! limits.

use std::sync::Arc;
use std::time::Duration;

use super::Expiry;
use crate::clock::duration_millis;
use crate::error::{Error, Result};
use crate::storage::{self, Kind};
use crate::store::Store;

/// The options and identity of one bucket, shared by its branches.
pub(crate) struct BucketCore {
    pub store: Store,
    pub name: String,
    pub id: i64,
    pub ttl: Option<i64>,
    pub idle: Option<i64>,
}

/// Checks a bucket's expiry options: not both, not zero.
pub(crate) fn check_spans(name: &str, ttl: Option<Duration>, idle: Option<Duration>) -> Result<()> {
    if ttl.is_some() && idle.is_some() {
        return Err(Error::invalid("a bucket takes ttl or idle, not both").in_bucket(name));
    }
    if ttl.is_some_and(|d| d.is_zero()) || idle.is_some_and(|d| d.is_zero()) {
        return Err(Error::invalid("a ttl or idle of zero would expire every key at once").in_bucket(name));
    }
    Ok(())
}

impl BucketCore {
    pub(crate) fn open(
        store: &Store,
        name: &str,
        kind: Kind,
        ttl: Option<Duration>,
        idle: Option<Duration>,
    ) -> Result<Arc<BucketCore>> {
        crate::store::check_name(name)?;
        check_spans(name, ttl, idle)?;
        let id = store.register(name, kind)?;
        Ok(Arc::new(BucketCore {
            store: store.clone(),
            name: name.to_owned(),
            id,
            ttl: ttl.map(duration_millis),
            idle: idle.map(duration_millis),
        }))
    }

    /// The expiry a `set` gives, as the one statement that writes it
    /// decides: the rule of [`BucketCore::expiry`] without reading the row.
    pub(super) fn set_expiry(&self, now: i64, own: Option<Expiry>) -> storage::SetExpiry {
        match (own, self.idle) {
            (Some(e), _) => storage::SetExpiry::Give(Some(e.at(now))),
            (None, Some(term)) => storage::SetExpiry::Give(Some(now.saturating_add(term))),
            (None, None) => storage::SetExpiry::KeepLiveElse(self.ttl.map(|t| now.saturating_add(t))),
        }
    }

    /// The expiry a write gives: its own, else a live key's (not in an idle
    /// bucket, where a write renews), else the bucket's.
    pub(super) fn expiry(&self, now: i64, own: Option<Expiry>, live: Option<Option<i64>>) -> Option<i64> {
        if let Some(e) = own {
            return Some(e.at(now));
        }
        if let Some(term) = self.idle {
            return Some(now.saturating_add(term));
        }
        match live {
            Some(kept) => kept,
            None => self.ttl.map(|t| now.saturating_add(t)),
        }
    }
}
