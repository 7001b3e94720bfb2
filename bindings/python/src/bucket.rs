//! A bucket of typed values: every call of the core's `RawBucket`, with
//! values converted by the bucket's codec. Reads run inline (with the GIL
//! released); each write has a blocking form for the sync API and a
//! `*_then` form that answers a [`Pending`] through [`Completions`].

use std::sync::Arc;
use std::time::Duration;

use pyo3::IntoPyObjectExt;
use pyo3::inspect::PyStaticExpr;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use pyo3::{type_hint_identifier, type_hint_subscript, type_hint_union};
use tinystore::{
    BucketWrite, Created, Entry, Error, Key, ListOptions, Raw, RawBucket, Version, WriteCall, WriteOptions, Written,
    from_millis,
};

use crate::completions::Completions;
use crate::convert::{Answered, Arg, Codec, branch, int_of, key_in, key_to_py, opt_span, version};
use crate::errors::{py_err, to_py};
use crate::pending::Pending;
use crate::reply;
use crate::scope::{Call, Takes, in_scope, run_in, scope_of};
use crate::store::Store;

/// One bucket (or branch of it) of the store.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Bucket {
    pub(crate) raw: RawBucket,
    pub(crate) codec: Arc<Codec>,
    pub(crate) store: tinystore::Store,
    /// Its async writes go to the core as they are made (see
    /// `Completions::defer_into`): false for a store with a memory budget.
    pub(crate) streams: bool,
}

/// An entry as Python gets it: (key, value, version, expires_at in ms).
pub(crate) type PyEntry = (Py<PyAny>, Py<PyAny>, String, Option<i64>);

impl Bucket {
    pub(crate) fn key(&self, py: Python<'_>, key: &Arg<'_>) -> PyResult<Vec<u8>> {
        key_in(py, self.raw.name(), key)
    }

    pub(crate) fn value(&self, py: Python<'_>, key: &[u8], value: &Arg<'_>) -> PyResult<Raw> {
        self.codec
            .to_raw(py, value)
            .map_err(|e| to_py(py, self.raw.named(key, e)))
    }

    /// The options of `call` on `key`: its shape is checked in the core.
    pub(crate) fn write_options(
        &self,
        py: Python<'_>,
        call: WriteCall,
        key: &[u8],
        ttl: Option<&Arg<'_>>,
        expires_at: Option<i64>,
        if_version: Option<&Arg<'_>>,
    ) -> PyResult<WriteOptions> {
        let (ttl, if_version) = self.option_values(py, ttl, if_version)?;
        self.raw
            .options_for(call, key, ttl, expires_at.map(from_millis), if_version)
            .map_err(py_err(py))
    }

    fn option_values(
        &self,
        py: Python<'_>,
        ttl: Option<&Arg<'_>>,
        if_version: Option<&Arg<'_>>,
    ) -> PyResult<(Option<Duration>, Option<Version>)> {
        let named = |e: Error| to_py(py, e.in_bucket(self.raw.name()));
        Ok((
            opt_span(ttl, "ttl").map_err(named)?,
            version(if_version).map_err(named)?,
        ))
    }

    pub(crate) fn entry_to_py(&self, py: Python<'_>, e: Entry<Raw>) -> Result<PyEntry, Error> {
        entry_row(py, &self.codec, &self.raw, e)
    }

    /// Makes the write of `set(key, value)` without options on `running`'s
    /// loop, answered through `pending` (the call's coroutine, at its first step).
    pub(crate) fn set_start(
        &self,
        py: Python<'_>,
        running: &Arg<'_>,
        key: &Arg<'_>,
        value: &Arg<'_>,
        pending: &Bound<'_, Pending>,
    ) -> PyResult<()> {
        let k = self.key(py, key)?;
        let raw = self.value(py, &k, value)?;
        let (completions, bucket) = (&Completions::of_loop(running)?, self.raw.clone());
        reply::answer_into(
            completions,
            &self.store,
            self.streams,
            pending,
            answer_version,
            move |r| bucket.set_then(&k, raw, WriteOptions::default(), r.done()),
        )
    }

    /// A call of this bucket (see [`Call::run`]).
    fn call(&self) -> Call<'_, RawBucket> {
        Call {
            streams: self.streams,
            ..Call::of(&self.raw, &self.store)
        }
    }
}

/// An entry of `raw` as Python gets it, its value converted by `codec`.
fn entry_row(py: Python<'_>, codec: &Codec, raw: &RawBucket, e: Entry<Raw>) -> Result<PyEntry, Error> {
    let value = codec.to_py(py, &e.value).map_err(|err| raw.named(&e.key.0, err))?;
    Ok((
        key_to_py(py, &e.key.0).unbind(),
        value.unbind(),
        e.version.to_string(),
        e.expires_at.map(tinystore::to_millis),
    ))
}

/// The answer of a get or a take: the value found, converted by the codec
/// of the bucket `raw`, or None.
fn value_found(py: Python<'_>, codec: &Codec, raw: &RawBucket, out: Option<Entry<Raw>>) -> Answered {
    let Some(e) = out else { return Ok(py.None()) };
    codec
        .to_py(py, &e.value)
        .map(Bound::unbind)
        .map_err(|err| to_py(py, raw.named(&e.key.0, err)))
}

/// What `create(..., entry=True)` answers the entry written with: the
/// bucket's codec and handle, the key, and the value given.
type Given = (Arc<Codec>, RawBucket, Vec<u8>, Py<PyAny>);

/// The answer of `create`: whether it wrote; with `entry`, (written, row),
/// the row the entry written (its value the caller's own) or the live one
/// found, converted by the bucket's codec.
fn answer_created(py: Python<'_>, entry: Option<Given>, c: Created<Raw>) -> Answered {
    let written = c.written();
    let Some((codec, raw, key, given)) = entry else {
        return reply::value(py, written);
    };
    let row: PyEntry = match c {
        Created::Written { version, expires_at } => (
            key_to_py(py, &key).unbind(),
            given,
            version.to_string(),
            expires_at.map(tinystore::to_millis),
        ),
        Created::Found(e) => entry_row(py, &codec, &raw, e).map_err(|e| to_py(py, e))?,
    };
    (written, row).into_py_any(py)
}

fn answer_version(py: Python<'_>, v: Version) -> Answered {
    Ok(py_version(py, v))
}

/// A version as Python gets it: its decimal text, spelled on the stack
/// (the answer of every set: `to_string` cost a heap string and the
/// formatting machinery each). The limited API makes a str only from
/// encoded bytes: the digits pass CPython's ASCII check once.
pub(crate) fn py_version(py: Python<'_>, v: Version) -> Py<PyAny> {
    let mut buf = [0u8; 20]; // i64::MIN spells in 20 bytes
    let mut at = buf.len();
    let n = v.get();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    let digits = &buf[at..];
    pyo3::types::PyString::new(py, std::str::from_utf8(digits).unwrap_or_default())
        .into_any()
        .unbind()
}

/// The owners of a branch, a list of `str` and `bytes` in Python. A type of
/// its own for the stubs alone: they spell it `typing.List[str | bytes]`,
/// since inside `class Bucket` the name `list` is the method.
pub(crate) struct Owners(Vec<Py<PyAny>>);

impl<'py> IntoPyObject<'py> for Owners {
    type Target = PyList;
    type Output = Bound<'py, PyList>;
    type Error = PyErr;

    const OUTPUT_TYPE: PyStaticExpr = type_hint_subscript!(
        type_hint_identifier!("typing", "List"),
        type_hint_union!(
            type_hint_identifier!("builtins", "str"),
            type_hint_identifier!("builtins", "bytes")
        )
    );

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.0)
    }
}

#[pymethods]
impl Bucket {
    /// Opens bucket `name` of `store`, values converted by `codec`.
    #[new]
    #[pyo3(signature = (store, name, codec: "_Codec", ttl: "_Span | None" = None, idle: "_Span | None" = None))]
    fn new(
        py: Python<'_>,
        store: &Store,
        name: &str,
        codec: &Arg<'_>,
        ttl: Option<&Arg<'_>>,
        idle: Option<&Arg<'_>>,
    ) -> PyResult<Bucket> {
        let named = |e: Error| to_py(py, e.in_bucket(name));
        let codec = Codec::of(py, name, "bucket", codec)?;
        let ttl = opt_span(ttl, "ttl").map_err(named)?;
        let idle = opt_span(idle, "idle").map_err(named)?;
        let core = store.store.clone();
        let raw = py
            .detach(|| RawBucket::open(&core, name, ttl, idle))
            .map_err(py_err(py))?;
        Ok(Bucket {
            raw,
            store: core,
            streams: !store.budgeted,
            codec,
        })
    }

    /// The bucket's name.
    #[getter]
    fn name(&self) -> &str {
        self.raw.name()
    }

    /// The owners of this branch, outermost first.
    #[getter]
    fn owners(&self, py: Python<'_>) -> Owners {
        Owners(self.raw.owners().iter().map(|o| key_to_py(py, o).unbind()).collect())
    }

    /// The branch of `owners` under this one.
    #[pyo3(signature = (*owners: "_Key"))]
    fn under(&self, py: Python<'_>, owners: &Bound<'_, PyTuple>) -> PyResult<Bucket> {
        Ok(Bucket {
            raw: branch(py, &self.raw, owners)?,
            codec: self.codec.clone(),
            store: self.store.clone(),
            streams: self.streams,
        })
    }

    /// The value of a live key, or None. In an idle bucket, a read on the
    /// store renews the key; one in a transaction or a view renews nothing.
    #[pyo3(signature = (key: "_Key", scope: "Tx | View | None" = None))]
    fn get(&self, py: Python<'_>, key: &Arg<'_>, scope: Option<&Arg<'_>>) -> Answered {
        let k = self.key(py, key)?;
        let found = in_scope(py, scope, |s| s.entry(&self.raw, &k))?;
        value_found(py, &self.codec, &self.raw, found)
    }

    /// (key, value, version, expires_at_ms) of a live key, or None.
    #[pyo3(signature = (key: "_Key", scope: "Tx | View | None" = None) -> "_Row | None")]
    fn entry(&self, py: Python<'_>, key: &Arg<'_>, scope: Option<&Arg<'_>>) -> PyResult<Option<PyEntry>> {
        let k = self.key(py, key)?;
        let found = in_scope(py, scope, |s| s.entry(&self.raw, &k))?;
        found
            .map(|e| self.entry_to_py(py, e))
            .transpose()
            .map_err(|e| to_py(py, e))
    }

    /// Whether a live key is there.
    #[pyo3(signature = (key: "_Key", scope: "Tx | View | None" = None))]
    fn has(&self, py: Python<'_>, key: &Arg<'_>, scope: Option<&Arg<'_>>) -> PyResult<bool> {
        let k = self.key(py, key)?;
        in_scope(py, scope, |s| s.has(&self.raw, &k))
    }

    /// One page of this branch's keys: (entries, next cursor or None).
    #[pyo3(signature = (after: "_Key | None" = None, limit: "int | None" = None, scope: "Tx | View | None" = None) -> "_Page")]
    fn list(
        &self,
        py: Python<'_>,
        after: Option<&Arg<'_>>,
        limit: Option<&Arg<'_>>,
        scope: Option<&Arg<'_>>,
    ) -> PyResult<(Vec<PyEntry>, Option<Py<PyAny>>)> {
        let scope = scope_of(py, scope)?;
        let after = match after.filter(|a| !a.is_none()) {
            Some(a) => Some(Key(self.key(py, a)?)),
            None => None,
        };
        let limit = limit
            .map(|l| int_of(l, "a page size (limit)").and_then(tinystore::page_size))
            .transpose()
            .map_err(|e| to_py(py, e.in_bucket(self.raw.name())))?;
        let opts = ListOptions { after, limit };
        let page = run_in(py, scope, Takes::Long, || scope.list(&self.raw, &opts))?;
        let entries = page
            .entries
            .into_iter()
            .map(|e| self.entry_to_py(py, e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| to_py(py, e))?;
        Ok((entries, page.next.map(|k| key_to_py(py, &k.0).unbind())))
    }

    /// Writes a value durably; returns its version.
    #[pyo3(signature = (key: "_Key", value, ttl: "_Span | None" = None, expires_at = None, if_version = None, scope: "_Scope" = None))]
    #[allow(clippy::too_many_arguments)]
    fn set(
        &self,
        py: Python<'_>,
        key: &Arg<'_>,
        value: &Arg<'_>,
        ttl: Option<&Arg<'_>>,
        expires_at: Option<i64>,
        if_version: Option<&Arg<'_>>,
        scope: Option<&Arg<'_>>,
    ) -> Answered {
        let k = self.key(py, key)?;
        let raw = self.value(py, &k, value)?;
        let opts = self.write_options(py, WriteCall::Set, &k, ttl, expires_at, if_version)?;
        self.call()
            .write(py, scope, BucketWrite::Set(k, raw, opts), reply::written)
    }

    /// `set(key, value)` of the asyncio API: a coroutine that writes when
    /// first awaited (see [`Pending::unstarted`]).
    #[pyo3(signature = (key: "_Key", value))]
    fn set_call(slf: Py<Self>, key: Py<PyAny>, value: Py<PyAny>) -> Pending {
        Pending::unstarted(slf, key, value)
    }

    /// Writes a value only if the key is absent; says whether it did, or
    /// with `entry` answers (written, row): the entry written, its value the
    /// one given, or the live one found.
    #[pyo3(signature = (key: "_Key", value, ttl: "_Span | None" = None, expires_at = None, scope: "_Scope" = None, entry = false))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        &self,
        py: Python<'_>,
        key: &Arg<'_>,
        value: &Arg<'_>,
        ttl: Option<&Arg<'_>>,
        expires_at: Option<i64>,
        scope: Option<&Arg<'_>>,
        entry: bool,
    ) -> Answered {
        let k = self.key(py, key)?;
        let raw = self.value(py, &k, value)?;
        let opts = self.write_options(py, WriteCall::Create, &k, ttl, expires_at, None)?;
        let given = entry.then(|| (self.codec.clone(), self.raw.clone(), k.clone(), value.clone().unbind()));
        let answer = move |py: Python<'_>, w| match w {
            Written::Created(c) => answer_created(py, given, c),
            w => reply::written(py, w),
        };
        self.call()
            .write(py, scope, BucketWrite::Create(k, raw, opts.expiry), answer)
    }

    /// Reads and deletes a key in one write; None when absent. A value that
    /// does not read as the bucket's type raises and stays (inside a
    /// transaction, which then rolls back).
    #[pyo3(signature = (key: "_Key", if_version = None, scope: "_Scope" = None))]
    fn take(&self, py: Python<'_>, key: &Arg<'_>, if_version: Option<&Arg<'_>>, scope: Option<&Arg<'_>>) -> Answered {
        let k = self.key(py, key)?;
        let opts = self.write_options(py, WriteCall::Take, &k, None, None, if_version)?;
        let (codec, raw) = (self.codec.clone(), self.raw.clone());
        let answer = move |py: Python<'_>, w| match w {
            Written::Taken(out) => value_found(py, &codec, &raw, out),
            w => reply::written(py, w),
        };
        let codec = self.codec.clone();
        let check = Box::new(move |e: &Entry<Raw>| codec.check(&e.value));
        self.call()
            .write(py, scope, BucketWrite::Take(k, opts.if_version, check), answer)
    }

    /// Deletes a key; says whether a live key was there.
    #[pyo3(signature = (key: "_Key", if_version = None, scope: "_Scope" = None))]
    fn delete(&self, py: Python<'_>, key: &Arg<'_>, if_version: Option<&Arg<'_>>, scope: Option<&Arg<'_>>) -> Answered {
        let k = self.key(py, key)?;
        let opts = self.write_options(py, WriteCall::Delete, &k, None, None, if_version)?;
        self.call()
            .write(py, scope, BucketWrite::Delete(k, opts.if_version), reply::written)
    }

    /// Gives a live key a new expiry (a span or a time); says whether it was there.
    #[pyo3(signature = (key: "_Key", ttl: "_Span | None" = None, expires_at = None, if_version = None, scope: "_Scope" = None))]
    fn expire(
        &self,
        py: Python<'_>,
        key: &Arg<'_>,
        ttl: Option<&Arg<'_>>,
        expires_at: Option<i64>,
        if_version: Option<&Arg<'_>>,
        scope: Option<&Arg<'_>>,
    ) -> Answered {
        let k = self.key(py, key)?;
        let (ttl, v) = self.option_values(py, ttl, if_version)?;
        let (e, v) = self
            .raw
            .expire_options(&k, ttl, expires_at.map(from_millis), v)
            .map_err(py_err(py))?;
        self.call()
            .write(py, scope, BucketWrite::Expire(k, e, v), reply::written)
    }

    /// Removes this branch and every branch under it.
    #[pyo3(signature = (scope: "_Scope" = None))]
    fn clear(&self, py: Python<'_>, scope: Option<&Arg<'_>>) -> Answered {
        self.call().long().write(py, scope, BucketWrite::Clear, reply::written)
    }
}
