//! Buckets of values, untyped: the rules of keys, versions and expiry
//! (KV-4 to KV-10) on rows of [`Raw`](crate::Raw) values.
//!
//! [`RawBucket`] is what the bindings call: every write has a blocking form
//! and a completion form (`*_then`). The typed [`crate::Bucket`] is a
//! `RawBucket` plus the serde codec. Each write is a function of the
//! group's [`WriteCtx`](crate::group_commit::WriteCtx), so a `tx` runs the
//! very same code inline.
//!
//! The parts, each in its own file: the types the calls take and give
//! (`call_types`), a bucket's shared options (`bucket_core`), one key as a
//! write carries it to the writer (`target`), the read calls and listing
//! (`reads`) and the write calls with their completion forms (`writes`).

mod bucket_core;
mod call_types;
pub(crate) mod on_postgres;
mod reads;
mod target;
mod writes;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::key::{AsKey, Branch};
use crate::raw::MAX_VALUE;
use crate::storage::Kind;
use crate::store::Store;

pub(crate) use bucket_core::BucketCore;
pub use call_types::{Created, Entry, Expiry, ListOptions, Page, Version, WriteCall, WriteOptions};
pub(crate) use on_postgres::{clock_of, delete as pg_delete, in_tx as pg_in_tx, pg_take, pg_take_then, pg_then};
pub(crate) use reads::{Pages, entry_of, list_on};
pub(crate) use target::Target;
pub(crate) use writes::op_clear;

/// The most keys one page of `list` holds.
pub const MAX_PAGE: usize = 1000;
/// A page size a caller gave as a signed number: 1 to [`MAX_PAGE`] keys.
/// Another is `Invalid`; the caller names the bucket.
pub fn page_size(n: impl Into<crate::Signed>) -> Result<usize> {
    let n = n.into();
    match n.fits::<usize>() {
        Some(n @ 1..=MAX_PAGE) => Ok(n),
        _ => Err(Error::invalid(format!(
            "a page (limit) holds 1 to {MAX_PAGE} keys, not {n}"
        ))),
    }
}

/// The keys of a page when the call does not say.
pub const DEFAULT_PAGE: usize = 100;
/// The most bytes of values one page holds.
pub const MAX_PAGE_BYTES: usize = 4 << 20;

/// What a page of `list` holds of the memory budget: its bytes and the row
/// past them, which it reads to know the page is full.
pub(crate) const PAGE_HOLD: usize = MAX_PAGE_BYTES + MAX_VALUE;
/// A branch with more keys than this is hidden by a clear mark and deleted
/// by maintenance, instead of deleted in one write.
pub const CLEAR_BOUND: usize = 10_000;

/// `e`, naming the bucket and the key's path unless it names a key already.
fn name_key(bucket: &str, branch: &Branch, key: &[u8], e: Error) -> Error {
    if e.path().is_some() {
        return e;
    }
    e.at(bucket, branch.show_with(Some(key)))
}

/// A bucket of [`Raw`](crate::Raw) values: every call of a bucket, on rows
/// as they are kept. Bindings convert their language's values to `Raw` and
/// call this.
#[derive(Clone)]
pub struct RawBucket {
    pub(crate) core: Arc<BucketCore>,
    pub(crate) branch: Branch,
}

impl fmt::Debug for RawBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RawBucket({:?} under {:?})",
            self.core.name,
            self.branch.show_with(None)
        )
    }
}

impl RawBucket {
    /// Opens the bucket `name` with a `ttl` or an `idle` span (not both).
    pub fn open(store: &Store, name: &str, ttl: Option<Duration>, idle: Option<Duration>) -> Result<RawBucket> {
        Ok(RawBucket {
            core: BucketCore::open(store, name, Kind::Values, ttl, idle)?,
            branch: Branch::root(),
        })
    }

    /// The bucket's name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// The store this handle belongs to (a binding checks a call against a
    /// transaction its thread holds on the same store).
    pub fn store(&self) -> &Store {
        &self.core.store
    }

    /// The branch of `owner` under this one.
    pub fn under(&self, owner: impl AsKey) -> RawBucket {
        RawBucket {
            core: self.core.clone(),
            branch: self.branch.child(&owner.key_bytes()),
        }
    }

    /// The owners of this branch.
    pub fn owners(&self) -> &[Vec<u8>] {
        self.branch.owners()
    }

    /// The options of a `call` on `key` from a binding's arguments, checked
    /// by [`WriteOptions::of_call`]; an error names the bucket and key.
    pub fn options_for(
        &self,
        call: WriteCall,
        key: &[u8],
        ttl: Option<Duration>,
        at: Option<std::time::SystemTime>,
        if_version: Option<Version>,
    ) -> Result<WriteOptions> {
        WriteOptions::of_call(call, ttl, at, if_version).map_err(|e| self.named(key, e))
    }

    /// The expiry and version of an `expire` of `key`, checked by
    /// [`WriteOptions::of_expire`]; an error names the bucket and key.
    pub fn expire_options(
        &self,
        key: &[u8],
        ttl: Option<Duration>,
        at: Option<std::time::SystemTime>,
        if_version: Option<Version>,
    ) -> Result<(Expiry, Option<Version>)> {
        WriteOptions::of_expire(ttl, at, if_version).map_err(|e| self.named(key, e))
    }

    fn target(&self, key: &[u8]) -> Result<Target> {
        self.core.store.inner.check_open()?;
        Target::new(&self.core, &self.branch, key)
    }
}
