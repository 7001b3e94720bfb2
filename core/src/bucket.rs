//! Typed buckets: the handbook's Rust API over [`RawBucket`].

use std::marker::PhantomData;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::{decode, encode};
use crate::error::Result;
use crate::group_commit::Ticket;
use crate::key::AsKey;
use crate::raw::Raw;
use crate::store::Store;
use crate::values::{Created, Entry, Expiry, ListOptions, Page, Pages, RawBucket, Version, WriteOptions};

/// Opens a bucket: `store.bucket::<Session>("sessions").idle(d).open()?`.
#[must_use = "a builder does nothing until .open()"]
pub struct BucketBuilder<T> {
    store: Store,
    name: String,
    ttl: Option<Duration>,
    idle: Option<Duration>,
    _t: PhantomData<fn() -> T>,
}

impl Store {
    /// A bucket of values of type `T`, by name.
    pub fn bucket<T>(&self, name: &str) -> BucketBuilder<T> {
        BucketBuilder {
            store: self.clone(),
            name: name.to_owned(),
            ttl: None,
            idle: None,
            _t: PhantomData,
        }
    }
}

impl<T: Serialize + DeserializeOwned> BucketBuilder<T> {
    /// Each key expires this long after it is created; a later `set` keeps
    /// a live key's expiry.
    pub fn ttl(mut self, d: Duration) -> Self {
        self.ttl = Some(d);
        self
    }

    /// Each key expires this long after it was last read or written.
    pub fn idle(mut self, d: Duration) -> Self {
        self.idle = Some(d);
        self
    }

    /// Opens the bucket, creating its name in the file if it is new.
    pub fn open(self) -> Result<Bucket<T>> {
        Ok(Bucket {
            raw: RawBucket::open(&self.store, &self.name, self.ttl, self.idle)?,
            _t: PhantomData,
        })
    }
}

/// A bucket of values of type `T`, or one branch of it.
///
/// Values are kept by their serde shape (strings and bytes as bytes,
/// integers and bools as integers, floats as bits, `()` as a set member,
/// the rest as JSON), so the other languages read them back.
pub struct Bucket<T> {
    raw: RawBucket,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Bucket<T> {
    fn clone(&self) -> Self {
        Bucket {
            raw: self.raw.clone(),
            _t: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Bucket<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.raw.fmt(f)
    }
}

fn typed<T: DeserializeOwned>(e: Entry<Raw>) -> Result<Entry<T>> {
    Ok(Entry {
        value: decode(&e.value)?,
        key: e.key,
        version: e.version,
        expires_at: e.expires_at,
    })
}

impl<T: Serialize + DeserializeOwned + Send + 'static> Bucket<T> {
    /// The bucket's name.
    pub fn name(&self) -> &str {
        self.raw.name()
    }

    /// The untyped bucket underneath, on the same branch.
    pub fn raw(&self) -> &RawBucket {
        &self.raw
    }

    /// The branch of `owner`: the keys that belong to it. Branches nest.
    pub fn under(&self, owner: impl AsKey) -> Bucket<T> {
        Bucket {
            raw: self.raw.under(owner),
            _t: PhantomData,
        }
    }

    fn named(&self, key: &[u8], e: crate::Error) -> crate::Error {
        if e.path().is_some() {
            return e;
        }
        e.at(self.raw.name(), self.raw.branch.show_with(Some(key)))
    }

    /// The value of a live key, or `None`. In an idle bucket this renews the key.
    pub fn get(&self, key: impl AsKey) -> Result<Option<T>> {
        Ok(self.entry(key)?.map(|e| e.value))
    }

    /// The value with its version and expiry.
    pub fn entry(&self, key: impl AsKey) -> Result<Option<Entry<T>>> {
        let k = key.key_bytes();
        match self.raw.entry(&k)? {
            None => Ok(None),
            Some(e) => typed(e).map(Some).map_err(|e| self.named(&k, e)),
        }
    }

    /// Whether a live key is there.
    pub fn has(&self, key: impl AsKey) -> Result<bool> {
        self.raw.has(&key.key_bytes())
    }

    /// Writes a value, durably. A live key keeps its expiry; a new one gets
    /// the bucket's `ttl`.
    pub fn set(&self, key: impl AsKey, value: &T) -> Result<Version> {
        self.key(key).set(value)
    }

    /// The completion form of [`Bucket::set`]: returns at once, and `done`
    /// runs on the writer thread once the write is durable.
    pub fn set_then(
        &self,
        key: impl AsKey,
        value: &T,
        done: impl FnOnce(Result<Version>) + Send + 'static,
    ) -> Result<Ticket> {
        let k = key.key_bytes();
        let raw = encode(value).map_err(|e| self.named(&k, e))?;
        self.raw.set_then(&k, raw, WriteOptions::default(), done)
    }

    /// Writes a value only if the key is absent; says whether it did.
    pub fn create(&self, key: impl AsKey, value: &T) -> Result<bool> {
        self.key(key).create(value)
    }

    /// Reads and deletes a key in one write: of racing callers, exactly one
    /// gets the value.
    pub fn take(&self, key: impl AsKey) -> Result<Option<T>> {
        self.key(key).take()
    }

    /// Deletes a key; says whether a live key was there.
    pub fn delete(&self, key: impl AsKey) -> Result<bool> {
        self.key(key).delete()
    }

    /// Gives a live key a new expiry (a span from now or a time), keeping its
    /// value and version; says whether a live key was there.
    pub fn expire(&self, key: impl AsKey, expiry: impl Into<Expiry>) -> Result<bool> {
        self.key(key).expire(expiry)
    }

    /// Removes this branch and every branch under it.
    pub fn clear(&self) -> Result<()> {
        self.raw.clear()
    }

    /// A page of this branch's own keys, in the byte order of their text.
    pub fn list(&self, opts: &ListOptions) -> Result<Page<T>> {
        let page = self.raw.list(opts)?;
        let mut entries = Vec::with_capacity(page.entries.len());
        for e in page.entries {
            let k = e.key.0.clone();
            entries.push(typed(e).map_err(|e| self.named(&k, e))?);
        }
        Ok(Page {
            entries,
            next: page.next,
        })
    }

    /// Every key of this branch, page by page, with no snapshot held between
    /// pages; renews nothing.
    pub fn all(&self) -> impl Iterator<Item = Result<Entry<T>>> + '_ {
        Pages::new(move |opts| self.list(opts))
    }

    /// One key, for a call with options: `bucket.key(k).if_version(v).set(&x)`.
    pub fn key(&self, key: impl AsKey) -> KeyCall<'_, T> {
        KeyCall {
            bucket: self,
            key: key.key_bytes().into_owned(),
            opts: WriteOptions::default(),
        }
    }
}

/// A call on one key with options.
#[must_use = "a key call does nothing until a method like .set() runs"]
pub struct KeyCall<'a, T> {
    bucket: &'a Bucket<T>,
    key: Vec<u8>,
    opts: WriteOptions,
}

impl<T: Serialize + DeserializeOwned + Send + 'static> KeyCall<'_, T> {
    /// Expire this long from now, in place of the bucket's `ttl`.
    pub fn ttl(mut self, d: Duration) -> Self {
        self.opts.expiry = Some(Expiry::In(d));
        self
    }

    /// Expire at this time; a time in the past makes the key absent at once.
    pub fn expires_at(mut self, t: std::time::SystemTime) -> Self {
        self.opts.expiry = Some(Expiry::At(t));
        self
    }

    /// Apply only to a live key at this version; otherwise `Conflict`.
    pub fn if_version(mut self, v: Version) -> Self {
        self.opts.if_version = Some(v);
        self
    }

    /// Writes the value.
    pub fn set(self, value: &T) -> Result<Version> {
        let raw = encode(value).map_err(|e| self.bucket.named(&self.key, e))?;
        self.bucket.raw.set(&self.key, raw, self.opts)
    }

    /// Writes the value if the key is absent; says whether it did.
    pub fn create(self, value: &T) -> Result<bool> {
        Ok(matches!(self.create_entry(value)?, Created::Written(_)))
    }

    /// Writes the value if the key is absent, or gives the entry found.
    pub fn create_entry(self, value: &T) -> Result<Created<T>> {
        let raw = encode(value).map_err(|e| self.bucket.named(&self.key, e))?;
        match self.bucket.raw.create(&self.key, raw, self.opts.expiry)? {
            Created::Written(v) => Ok(Created::Written(v)),
            Created::Found(e) => Ok(Created::Found(typed(e).map_err(|e| self.bucket.named(&self.key, e))?)),
        }
    }

    /// Reads and deletes the key in one write. A value that does not decode
    /// as `T` is `Corrupt` and stays.
    pub fn take(self) -> Result<Option<T>> {
        let t = crate::values::Target::new(&self.bucket.raw.core, &self.bucket.raw.branch, &self.key)?;
        self.bucket.raw.core.store.inner.check_open()?;
        let if_version = self.opts.if_version;
        self.bucket
            .raw
            .core
            .store
            .inner
            .writer
            .call(0, move |w| t.op_take(w, if_version, |e| decode::<T>(&e.value)))
    }

    /// Deletes the key; says whether a live key was there.
    pub fn delete(self) -> Result<bool> {
        self.bucket.raw.delete(&self.key, self.opts.if_version)
    }

    /// Gives the live key a new expiry, keeping value and version.
    pub fn expire(self, expiry: impl Into<Expiry>) -> Result<bool> {
        self.bucket.raw.expire(&self.key, expiry.into(), self.opts.if_version)
    }
}
