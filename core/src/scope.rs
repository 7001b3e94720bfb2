//! Where a binding's call runs: on the store itself, inside a transaction
//! ([`BindingTx`]) or in a read snapshot ([`Snapshot`]). Each operation is
//! written here once for the three, so a binding has one function per
//! operation that takes the scope. The durable kinds (counters, quotas,
//! once answers) are in `scope_kinds.rs`.
//!
//! A direct call is the handle's own call (a read renews an idle key; a
//! write is its own durable write). Inside a transaction, a call runs on
//! the caller's thread inside the transaction's write and sees its writes;
//! reads renew nothing. A snapshot only reads buckets: anything else in it
//! is `Invalid`.

use rusqlite::Connection;

use crate::binding_tx::{BindingTx, Snapshot};
use crate::error::{Error, Result};
use crate::postgres::tx::PgTx;
use crate::raw::{MAX_VALUE, Raw};
use crate::values::{
    self, Created, Entry, Expiry, ListOptions, PAGE_HOLD, Page, RawBucket, Target, Version, WriteOptions, pg_in_tx,
};

/// Where a call runs: see the module's documentation.
#[derive(Clone, Copy)]
pub enum Scope<'a> {
    /// On the store, each call on its own.
    Direct,
    /// Inside an open transaction.
    Tx(&'a BindingTx),
    /// In a read snapshot.
    View(&'a Snapshot),
}

/// The refusal of anything but a bucket's read in a snapshot.
pub(crate) fn view_reads_only(name: &str) -> Error {
    Error::invalid("a view only reads buckets; write inside a transaction (tx)").in_bucket(name)
}

impl Scope<'_> {
    /// Refuses a handle of another store, for a binding's `with(handle)`:
    /// the handle `name` of `store` is used in this scope. Every call in a
    /// scope checks the same again.
    pub fn admit(&self, store: &crate::Store, name: &str) -> Result<()> {
        match self {
            Scope::Direct => Ok(()),
            Scope::Tx(s) => crate::in_tx::same_store(s.store(), store, name),
            Scope::View(v) => crate::in_tx::same_store(v.store(), store, name),
        }
    }

    /// Runs a read on the scope's PostgreSQL transaction or snapshot;
    /// `None` for a direct call or a scope on kv.db.
    fn pg_read<T>(&self, bucket: &RawBucket, f: impl FnOnce(&PgTx) -> Result<T>) -> Option<Result<T>> {
        match self {
            Scope::Direct => None,
            Scope::Tx(s) => match s.same_store(bucket) {
                Err(e) => Some(Err(e)),
                Ok(()) => s.pg(f),
            },
            Scope::View(v) => v.pg(bucket, f),
        }
    }

    /// Runs a read on the scope's connection and time: a transaction's or a
    /// snapshot's. `None` for a direct call, which reads its own way.
    fn read_in<T>(&self, bucket: &RawBucket, f: impl FnOnce(&Connection, i64) -> Result<T>) -> Option<Result<T>> {
        match self {
            Scope::Direct => None,
            Scope::Tx(s) => Some(s.same_store(bucket).and_then(|()| s.run(|w| f(w.conn, w.now)))),
            Scope::View(v) => Some(v.read(bucket, f)),
        }
    }

    /// The target of a write inside a transaction, with its session.
    /// `None` for a direct call; `Invalid` in a snapshot.
    fn tx_target(&self, bucket: &RawBucket, key: &[u8]) -> Option<Result<(&BindingTx, Target)>> {
        match self {
            Scope::Direct => None,
            Scope::Tx(s) => Some(s.target(bucket, key).map(|t| (*s, t))),
            Scope::View(_) => Some(Err(view_reads_only(bucket.name()))),
        }
    }

    /// Reads a live key with its version and expiry.
    pub fn entry(&self, bucket: &RawBucket, key: &[u8]) -> Result<Option<Entry<Raw>>> {
        if let Scope::Direct = self {
            return bucket.entry(key);
        }
        let t = Target::new(&bucket.core, &bucket.branch, key)?;
        let _held = t.hold_now(MAX_VALUE, "a read")?;
        if let Some(r) = self.pg_read(bucket, |p| pg_in_tx::entry(p, &t)) {
            return r;
        }
        self.read_in(bucket, |c, now| Ok(t.read(c, now)?.map(|cell| t.entry(cell))))
            .unwrap_or_else(|| bucket.entry(key))
    }

    /// Whether a live key is there.
    pub fn has(&self, bucket: &RawBucket, key: &[u8]) -> Result<bool> {
        match self {
            Scope::Direct => bucket.has(key),
            _ => Ok(self.entry(bucket, key)?.is_some()),
        }
    }

    /// A page of a branch's own keys.
    pub fn list(&self, bucket: &RawBucket, opts: &ListOptions) -> Result<Page<Raw>> {
        if let Scope::Direct = self {
            return bucket.list(opts);
        }
        let _held = bucket.hold_now(PAGE_HOLD)?;
        if let Some(r) = self.pg_read(bucket, |p| pg_in_tx::list(p, &bucket.core, &bucket.branch, opts)) {
            return r;
        }
        self.read_in(bucket, |c, now| {
            values::list_on(&bucket.core, &bucket.branch, c, now, opts)
        })
        .unwrap_or_else(|| bucket.list(opts))
    }

    /// Writes a value.
    pub fn set(&self, bucket: &RawBucket, key: &[u8], value: Raw, opts: WriteOptions) -> Result<Version> {
        match self.tx_target(bucket, key) {
            None => bucket.set(key, value, opts),
            Some(found) => {
                let (s, t) = found?;
                let _held = t.hold_now(value.encoded_len(), "a write")?;
                s.pg(|p| pg_in_tx::set(p, &t, &value, opts))
                    .unwrap_or_else(|| s.run(|w| t.op_set(w, &value, opts)))
            }
        }
    }

    /// Writes a value if the key is absent, or gives the entry found.
    pub fn create(&self, bucket: &RawBucket, key: &[u8], value: Raw, expiry: Option<Expiry>) -> Result<Created<Raw>> {
        match self.tx_target(bucket, key) {
            None => bucket.create(key, value, expiry),
            Some(found) => {
                let (s, t) = found?;
                let _held = t.hold_now(value.encoded_len() + MAX_VALUE, "a create")?;
                s.pg(|p| pg_in_tx::create(p, &t, &value, expiry))
                    .unwrap_or_else(|| s.run(|w| t.op_create(w, &value, expiry)))
            }
        }
    }

    /// Reads and deletes a key in one write. `check` runs inside the write,
    /// after the version check: an error from it (a value the caller cannot
    /// decode) keeps the value and comes back named with the key.
    pub fn take(
        &self,
        bucket: &RawBucket,
        key: &[u8],
        if_version: Option<Version>,
        check: impl FnOnce(&Entry<Raw>) -> Result<()> + Send + 'static,
    ) -> Result<Option<Entry<Raw>>> {
        match self.tx_target(bucket, key) {
            None => bucket.take(key, if_version, check),
            Some(found) => {
                let (s, t) = found?;
                let _held = t.hold_now(MAX_VALUE, "a take")?;
                take_in(s, &t, if_version, checked(check))
            }
        }
    }

    /// [`Scope::take`] with a check that must run on the calling thread
    /// (it calls back into the binding's language). Inside a transaction it
    /// runs inside the same call; directly, the key is read, checked, then
    /// taken only at the version read, so a key changed in between is
    /// `Conflict` and stays.
    pub fn take_checked(
        &self,
        bucket: &RawBucket,
        key: &[u8],
        if_version: Option<Version>,
        check: impl FnOnce(&Entry<Raw>) -> Result<()>,
    ) -> Result<Option<Entry<Raw>>> {
        match self.tx_target(bucket, key) {
            Some(found) => {
                let (s, t) = found?;
                let _held = t.hold_now(MAX_VALUE, "a take")?;
                take_in(s, &t, if_version, checked(check))
            }
            None => match bucket.check_before_take(key, if_version, check)? {
                None => Ok(None),
                Some(checked) => bucket.take(key, if_version, checked.still_read()),
            },
        }
    }

    /// Deletes a key; says whether a live key was there.
    pub fn delete(&self, bucket: &RawBucket, key: &[u8], if_version: Option<Version>) -> Result<bool> {
        match self.tx_target(bucket, key) {
            None => bucket.delete(key, if_version),
            Some(found) => {
                let (s, t) = found?;
                s.pg(|p| pg_in_tx::delete(p, &t, if_version))
                    .unwrap_or_else(|| s.run(|w| t.op_delete(w, if_version)))
            }
        }
    }

    /// Gives a live key a new expiry; says whether a live key was there.
    pub fn expire(&self, bucket: &RawBucket, key: &[u8], expiry: Expiry, if_version: Option<Version>) -> Result<bool> {
        match self.tx_target(bucket, key) {
            None => bucket.expire(key, expiry, if_version),
            Some(found) => {
                let (s, t) = found?;
                s.pg(|p| pg_in_tx::expire(p, &t, expiry, if_version))
                    .unwrap_or_else(|| s.run(|w| t.op_expire(w, expiry, if_version)))
            }
        }
    }

    /// Removes a branch and every branch under it; inside a transaction a
    /// branch of more than 10,000 keys is `Limit`.
    pub fn clear(&self, bucket: &RawBucket) -> Result<()> {
        match self.tx_target(bucket, b"-") {
            None => bucket.clear(),
            Some(found) => {
                let (s, _) = found?;
                s.pg(|p| pg_in_tx::clear(p, &bucket.core, &bucket.branch))
                    .unwrap_or_else(|| s.run(|w| values::op_clear(&bucket.core, &bucket.branch, w, true)))
            }
        }
    }

    /// Runs a write of another kind inside the transaction; `None` for a
    /// direct call; `Invalid` in a snapshot, naming the handle.
    pub(crate) fn in_tx<T>(&self, name: &str, f: impl FnOnce(&BindingTx) -> Result<T>) -> Option<Result<T>> {
        match self {
            Scope::Direct => None,
            Scope::Tx(s) => Some(f(s)),
            Scope::View(_) => Some(Err(view_reads_only(name))),
        }
    }
}

/// A take inside a transaction, on kv.db or PostgreSQL.
fn take_in(
    s: &BindingTx,
    t: &Target,
    if_version: Option<Version>,
    decode: impl FnOnce(Entry<Raw>) -> Result<Entry<Raw>>,
) -> Result<Option<Entry<Raw>>> {
    // `decode` goes to whichever of the two runs.
    let mut decode = Some(decode);
    if let Some(r) = s.pg(|p| pg_in_tx::take(p, t, if_version, decode.take().expect("taken once"))) {
        return r;
    }
    s.run(|w| t.op_take(w, if_version, decode.take().expect("taken once")))
}

/// A direct take whose check ran on the calling thread: what the write
/// itself must still find, the row that was checked.
pub struct CheckedTake {
    /// `None` when the key was not checked: the take's own version check
    /// refuses it first.
    read: Option<Version>,
}

impl CheckedTake {
    /// The write's own check: the key is still at the version that was
    /// checked. A key written in between is `Conflict` and stays; a key
    /// taken or deleted in between is absent, and the take answers `None`,
    /// so of racing takers exactly one gets the value.
    pub fn still_read(self) -> impl FnOnce(&Entry<Raw>) -> Result<()> + Send + 'static {
        move |e| {
            if self.read == Some(e.version) {
                return Ok(());
            }
            Err(Error::conflict(format!(
                "the key was written after it was read and checked (now at version {}); it stays",
                e.version
            )))
        }
    }
}

impl RawBucket {
    /// The first half of a direct take whose check must run on the calling
    /// thread (it calls back into a binding's language): reads the key and
    /// checks it. `None` when there is nothing to take (the key is absent
    /// and no version was asked for); otherwise the take to send, with
    /// `if_version` and [`CheckedTake::still_read`] as its check, in one
    /// call ([`RawBucket::take`]) or by completion ([`RawBucket::take_then`]).
    /// A key absent or at another version than `if_version` is not checked:
    /// the take names the conflict.
    pub fn check_before_take(
        &self,
        key: &[u8],
        if_version: Option<Version>,
        check: impl FnOnce(&Entry<Raw>) -> Result<()>,
    ) -> Result<Option<CheckedTake>> {
        let t = Target::new(&self.core, &self.branch, key)?;
        match self.entry(key)? {
            None if if_version.is_none() => Ok(None),
            Some(found) if if_version.is_none_or(|v| v == found.version) => {
                check(&found).map_err(|e| t.name(e))?;
                Ok(Some(CheckedTake {
                    read: Some(found.version),
                }))
            }
            _ => Ok(Some(CheckedTake { read: None })),
        }
    }
}

/// A take's check as `op_take`'s decode: the entry itself, once it passed.
fn checked(check: impl FnOnce(&Entry<Raw>) -> Result<()>) -> impl FnOnce(Entry<Raw>) -> Result<Entry<Raw>> {
    move |e| {
        check(&e)?;
        Ok(e)
    }
}
