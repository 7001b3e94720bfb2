//! Typed buckets: the Rust API of serde values over [`RawBucket`].

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::budget::Held;
use crate::error::Result;
use crate::group_commit::Ticket;
use crate::key::AsKey;
use crate::raw::{MAX_VALUE, Raw};
use crate::row_codec::{AsRow, ByType, Codec, RowCodec, WithCodec};
use crate::storage::Cell;
use crate::store::Store;
use crate::values::{
    Created, Entry, Expiry, ListOptions, PAGE_HOLD, Page, Pages, RawBucket, Version, WriteOptions, entry_of,
};

/// Opens a bucket: `store.bucket::<Session>("sessions").idle(d).open()?`.
///
/// `C` says how values become rows: by their type ([`ByType`], the
/// default), through the bucket's own codec ([`BucketBuilder::codec`]), or
/// as rows are ([`Store::raw_bucket`]).
#[must_use = "a builder does nothing until .open()"]
pub struct BucketBuilder<T, C = ByType> {
    store: Store,
    name: String,
    ttl: Option<Duration>,
    idle: Option<Duration>,
    codec: C,
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
            codec: ByType,
            _t: PhantomData,
        }
    }

    /// A bucket read and written as its rows keep values ([`Raw`]): nothing,
    /// an integer, or bytes (an empty string is empty bytes). It reads what
    /// a bucket of any type, in any language, wrote under the name, and what
    /// it writes a bucket of the matching type reads back.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = tinystore::Store::open(dir.path())?;
    /// store.bucket::<i64>("codes").open()?.set("a", &42)?;
    /// let raw = store.raw_bucket("codes").open()?;
    /// assert_eq!(raw.get("a")?, Some(tinystore::Raw::Int(42)));
    /// # Ok::<(), tinystore::Error>(())
    /// ```
    pub fn raw_bucket(&self, name: &str) -> BucketBuilder<Raw, AsRow> {
        BucketBuilder {
            store: self.clone(),
            name: name.to_owned(),
            ttl: None,
            idle: None,
            codec: AsRow,
            _t: PhantomData,
        }
    }
}

impl<T, C> BucketBuilder<T, C> {
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

    /// Gives the bucket its own codec in place of the choice by type: its
    /// `encode` bytes are kept as a byte row, and a row its `decode` refuses
    /// is `Corrupt` (a `take` of it keeps the value). A pair of functions
    /// `(encode, decode)` is a codec too.
    ///
    /// ```
    /// use tinystore::CodecError;
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = tinystore::Store::open(dir.path())?;
    /// // Points as "x,y" text.
    /// let encode = |p: &(i32, i32)| -> Result<Vec<u8>, CodecError> { Ok(format!("{},{}", p.0, p.1).into_bytes()) };
    /// let decode = |b: &[u8]| -> Result<(i32, i32), CodecError> {
    ///     let (x, y) = std::str::from_utf8(b)?.split_once(',').ok_or("no comma")?;
    ///     Ok((x.parse()?, y.parse()?))
    /// };
    /// let points = store.bucket::<(i32, i32)>("points").codec((encode, decode)).open()?;
    /// points.set("home", &(3, -4))?;
    /// assert_eq!(points.get("home")?, Some((3, -4)));
    /// # Ok::<(), tinystore::Error>(())
    /// ```
    pub fn codec<K: Codec<T>>(self, codec: K) -> BucketBuilder<T, WithCodec<K>> {
        BucketBuilder {
            store: self.store,
            name: self.name,
            ttl: self.ttl,
            idle: self.idle,
            codec: WithCodec(codec),
            _t: PhantomData,
        }
    }
}

impl<T: Send + 'static, C: RowCodec<T>> BucketBuilder<T, C> {
    /// Opens the bucket, creating its name in the file if it is new.
    pub fn open(self) -> Result<Bucket<T>> {
        Ok(Bucket {
            raw: RawBucket::open(&self.store, &self.name, self.ttl, self.idle)?,
            codec: Arc::new(self.codec),
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
    pub(crate) codec: Arc<dyn RowCodec<T>>,
}

impl<T> Clone for Bucket<T> {
    fn clone(&self) -> Self {
        Bucket {
            raw: self.raw.clone(),
            codec: self.codec.clone(),
        }
    }
}

impl<T> std::fmt::Debug for Bucket<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.raw.fmt(f)
    }
}

/// An entry as a row holds it, its value decoded by `codec`.
pub(crate) fn typed<T: 'static>(codec: &dyn RowCodec<T>, e: Entry<Raw>) -> Result<Entry<T>> {
    Ok(Entry {
        value: codec.decode_owned(e.value)?,
        key: e.key,
        version: e.version,
        expires_at: e.expires_at,
    })
}

impl<T: Send + 'static> Bucket<T> {
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
            codec: self.codec.clone(),
        }
    }

    /// Encodes a value holding the memory budget first: the largest value
    /// until the encoding says what it holds, plus `extra` the call keeps.
    pub(crate) fn encode_holding(&self, key: &[u8], value: &T, extra: usize) -> Result<(Raw, Held)> {
        let mut held = self.raw.core.store.inner.hold(MAX_VALUE + extra);
        let raw = self.codec.encode_row(value).map_err(|e| self.raw.named(key, e))?;
        held.shrink_to(raw.encoded_len() + extra);
        Ok((raw, held))
    }

    /// The value of a live key, or `None`. In an idle bucket this renews the key.
    pub fn get(&self, key: impl AsKey) -> Result<Option<T>> {
        self.read(key, |_, cell| self.codec.decode_owned(cell.value))
    }

    /// The value with its version and expiry.
    pub fn entry(&self, key: impl AsKey) -> Result<Option<Entry<T>>> {
        self.read(key, |k, cell| typed(&*self.codec, entry_of(k, cell)))
    }

    /// Reads a live key and decodes it with `decode`, holding the memory of
    /// the largest value until the row is decoded; a decode's error names
    /// the key.
    fn read<R>(&self, key: impl AsKey, decode: impl FnOnce(&[u8], Cell) -> Result<R>) -> Result<Option<R>> {
        let k = key.key_bytes();
        let _held = self.raw.core.store.inner.hold(MAX_VALUE);
        match self.raw.cell_held(&k)? {
            None => Ok(None),
            Some(cell) => decode(&k, cell).map(Some).map_err(|e| self.raw.named(&k, e)),
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
        let (raw, held) = self.encode_holding(&k, value, 0)?;
        self.raw.set_then_held(&k, raw, WriteOptions::default(), held, done)
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
        let _held = self.raw.core.store.inner.hold(PAGE_HOLD);
        let page = self.raw.list_held(opts)?;
        let mut entries = Vec::with_capacity(page.entries.len());
        for e in page.entries {
            let k = e.key.0.clone();
            entries.push(typed(&*self.codec, e).map_err(|e| self.raw.named(&k, e))?);
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
    pub(crate) bucket: &'a Bucket<T>,
    pub(crate) key: Vec<u8>,
    pub(crate) opts: WriteOptions,
}

impl<T: Send + 'static> KeyCall<'_, T> {
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
        let (raw, held) = self.bucket.encode_holding(&self.key, value, 0)?;
        self.bucket.raw.set_held(&self.key, raw, self.opts, held)
    }

    /// Writes the value if the key is absent; says whether it did.
    pub fn create(self, value: &T) -> Result<bool> {
        Ok(self.create_entry(value)?.written())
    }

    /// Writes the value if the key is absent, or gives the entry found:
    /// either way the key's version and expiry, for a later write bound to
    /// them with `if_version`.
    pub fn create_entry(self, value: &T) -> Result<Created<T>> {
        // Its own value, and the largest, for the value it may find.
        let (raw, held) = self.bucket.encode_holding(&self.key, value, MAX_VALUE)?;
        self.bucket
            .raw
            .create_held(&self.key, raw, self.opts.expiry, held)?
            .try_map(|e| typed(&*self.bucket.codec, e).map_err(|e| self.bucket.raw.named(&self.key, e)))
    }

    /// Reads and deletes the key in one write. A value that does not decode
    /// as `T` is `Corrupt` and stays.
    pub fn take(self) -> Result<Option<T>> {
        let t = crate::values::Target::new(&self.bucket.raw.core, &self.bucket.raw.branch, &self.key)?;
        self.bucket.raw.core.store.inner.check_open()?;
        let if_version = self.opts.if_version;
        let codec = self.bucket.codec.clone();
        if let Some(pg) = self.bucket.raw.pg() {
            return crate::values::pg_take(pg, &t, if_version, |e| codec.decode_row(&e.value));
        }
        self.bucket
            .raw
            .core
            .store
            .inner
            .writer
            .call(0, move |w| t.op_take(w, if_version, |e| codec.decode_row(&e.value)))
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
