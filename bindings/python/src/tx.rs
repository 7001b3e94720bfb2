//! Transactions and snapshots (KV-16) over the core's `TxSession` and
//! `Snapshot`.
//!
//! Starting a transaction waits for the writer's turn, which the asyncio
//! API must not do on the loop: `Store.tx_then` answers a future through
//! [`Completions`] when the writer hands out the session, and another once
//! the commit is durable. The sync API blocks its thread instead
//! (`Store.tx`). Calls on an open transaction are one round trip to the
//! writer thread, which serves only this transaction meanwhile, so they run
//! inline with the GIL released, like reads.

use std::sync::Mutex;
use std::sync::mpsc::Receiver;

use pyo3::prelude::*;
use tinystore::{Entry, Error, ErrorKind, Key, ListOptions, Page, Raw, Snapshot, TxSession, WriteCall};

use crate::bucket::{Bucket, PyEntry, created, resolve_taken};
use crate::completions::{Completions, Resolve, Ticket};
use crate::errors::{py_err, to_py};
use crate::limits::{Counters, PyAllowance, Quota, RateLimit, allowance, count, int_arg, owned_key};
use crate::once::Once;

/// A page as Python gets it: (entries, next cursor or None).
type PyPage = (Vec<PyEntry>, Option<Py<PyAny>>);

fn page_to_py(py: Python<'_>, bucket: &Bucket, page: Page<Raw>) -> PyResult<PyPage> {
    let entries = page
        .entries
        .into_iter()
        .map(|e| bucket.entry_to_py(py, e))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| to_py(py, e))?;
    Ok((entries, page.next.map(|k| crate::convert::key_to_py(py, &k.0).unbind())))
}

fn list_options(
    py: Python<'_>,
    bucket: &Bucket,
    after: Option<&Bound<'_, PyAny>>,
    limit: Option<usize>,
) -> PyResult<ListOptions> {
    let after = match after.filter(|a| !a.is_none()) {
        Some(a) => Some(Key(bucket.key(py, a)?)),
        None => None,
    };
    Ok(ListOptions { after, limit })
}

fn value_of(py: Python<'_>, bucket: &Bucket, key: &[u8], found: Option<Entry<Raw>>) -> PyResult<Py<PyAny>> {
    match found {
        Some(e) => bucket
            .codec
            .to_py(py, &e.value)
            .map(Bound::unbind)
            .map_err(|err| to_py(py, bucket.name_key(key)(err))),
        None => Ok(py.None()),
    }
}

fn entry_of(py: Python<'_>, bucket: &Bucket, found: Option<Entry<Raw>>) -> PyResult<Option<PyEntry>> {
    found
        .map(|e| bucket.entry_to_py(py, e))
        .transpose()
        .map_err(|e| to_py(py, e))
}

/// An open transaction: every call runs inside it and sees its own writes.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Tx {
    pub(crate) session: TxSession,
    /// The commit's result, for the sync API (the async API gets it in a future).
    done: Mutex<Option<Receiver<tinystore::Result<()>>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[pymethods]
impl Tx {
    /// The value of a live key as the transaction sees it, or None.
    #[pyo3(signature = (bucket, key: "_Key"))]
    fn get(&self, py: Python<'_>, bucket: &Bucket, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let k = bucket.key(py, key)?;
        let found = py.detach(|| self.session.entry(&bucket.raw, &k)).map_err(py_err(py))?;
        value_of(py, bucket, &k, found)
    }

    /// (key, value, version, expires_at_ms) of a live key as the transaction sees it, or None.
    #[pyo3(signature = (bucket, key: "_Key") -> "_Row | None")]
    fn entry(&self, py: Python<'_>, bucket: &Bucket, key: &Bound<'_, PyAny>) -> PyResult<Option<PyEntry>> {
        let k = bucket.key(py, key)?;
        let found = py.detach(|| self.session.entry(&bucket.raw, &k)).map_err(py_err(py))?;
        entry_of(py, bucket, found)
    }

    /// One page of a branch as the transaction sees it.
    #[pyo3(signature = (bucket, after: "_Key | None" = None, limit = None) -> "_Page")]
    fn list(
        &self,
        py: Python<'_>,
        bucket: &Bucket,
        after: Option<&Bound<'_, PyAny>>,
        limit: Option<usize>,
    ) -> PyResult<PyPage> {
        let opts = list_options(py, bucket, after, limit)?;
        let page = py
            .detach(|| self.session.list(&bucket.raw, &opts))
            .map_err(py_err(py))?;
        page_to_py(py, bucket, page)
    }

    /// Writes a value inside the transaction; returns its version.
    #[pyo3(signature = (bucket, key: "_Key", value, ttl: "_Span | None" = None, expires_at = None, if_version = None))]
    #[allow(clippy::too_many_arguments)]
    fn set(
        &self,
        py: Python<'_>,
        bucket: &Bucket,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        expires_at: Option<i64>,
        if_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let k = bucket.key(py, key)?;
        let raw = bucket.value(py, &k, value)?;
        let opts = bucket.write_options(py, WriteCall::Set, &k, ttl, expires_at, if_version)?;
        let v = py
            .detach(|| self.session.set(&bucket.raw, &k, raw, opts))
            .map_err(py_err(py))?;
        Ok(v.to_string())
    }

    /// Writes a value if the key is absent; says whether it did.
    #[pyo3(signature = (bucket, key: "_Key", value, ttl: "_Span | None" = None, expires_at = None))]
    fn create(
        &self,
        py: Python<'_>,
        bucket: &Bucket,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        expires_at: Option<i64>,
    ) -> PyResult<bool> {
        let k = bucket.key(py, key)?;
        let raw = bucket.value(py, &k, value)?;
        let opts = bucket.write_options(py, WriteCall::Create, &k, ttl, expires_at, None)?;
        let c = py
            .detach(|| self.session.create(&bucket.raw, &k, raw, opts.expiry))
            .map_err(py_err(py))?;
        Ok(created(c))
    }

    /// Reads and deletes a key inside the transaction; None when absent.
    /// A value that does not read as the bucket's type raises, so the
    /// transaction rolls back and the key stays.
    #[pyo3(signature = (bucket, key: "_Key", if_version = None))]
    fn take(
        &self,
        py: Python<'_>,
        bucket: &Bucket,
        key: &Bound<'_, PyAny>,
        if_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let k = bucket.key(py, key)?;
        let opts = bucket.write_options(py, WriteCall::Take, &k, None, None, if_version)?;
        let out = py.detach(|| {
            self.session
                .take_checked(&bucket.raw, &k, opts.if_version, |e| bucket.codec.check(&e.value))
        });
        resolve_taken(bucket, out)(py)
    }

    /// Deletes a key inside the transaction; says whether a live key was there.
    #[pyo3(signature = (bucket, key: "_Key", if_version = None))]
    fn delete(
        &self,
        py: Python<'_>,
        bucket: &Bucket,
        key: &Bound<'_, PyAny>,
        if_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let k = bucket.key(py, key)?;
        let opts = bucket.write_options(py, WriteCall::Delete, &k, None, None, if_version)?;
        py.detach(|| self.session.delete(&bucket.raw, &k, opts.if_version))
            .map_err(py_err(py))
    }

    /// Gives a live key a new expiry inside the transaction; says whether it was there.
    #[pyo3(signature = (bucket, key: "_Key", ttl: "_Span | None" = None, expires_at = None, if_version = None))]
    fn expire(
        &self,
        py: Python<'_>,
        bucket: &Bucket,
        key: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        expires_at: Option<i64>,
        if_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let k = bucket.key(py, key)?;
        let (e, if_version) = bucket.expire_options(py, &k, ttl, expires_at, if_version)?;
        py.detach(|| self.session.expire(&bucket.raw, &k, e, if_version))
            .map_err(py_err(py))
    }

    /// Clears a branch inside the transaction.
    fn clear(&self, py: Python<'_>, bucket: &Bucket) -> PyResult<()> {
        py.detach(|| self.session.clear(&bucket.raw)).map_err(py_err(py))
    }

    /// Refuses at once what cannot join the transaction (`tx.with`): a
    /// rate limit, `flush_every` counters, a handle of another store.
    #[pyo3(signature = (handle: "RateLimit | Counters"))]
    fn check_joins(&self, py: Python<'_>, handle: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(r) = handle.cast::<RateLimit>() {
            return Err(to_py(py, self.session.refuse_rate_limit(&r.get().inner)));
        }
        if let Ok(c) = handle.cast::<Counters>() {
            return self.session.check_counters(&c.get().inner).map_err(py_err(py));
        }
        Ok(())
    }

    /// Adds `n` to a durable counter (`max`: keeps the larger) inside the transaction.
    #[pyo3(signature = (counters, key: "_Key", n: "int", max = false))]
    fn counter_change(
        &self,
        py: Python<'_>,
        counters: &Counters,
        key: &Bound<'_, PyAny>,
        n: &Bound<'_, PyAny>,
        max: bool,
    ) -> PyResult<i64> {
        let c = &counters.inner;
        let (k, n) = (owned_key(py, c.name(), key)?, int_arg(py, c.name(), n)?);
        py.detach(|| {
            if max {
                self.session.counter_max(c, &k, n)
            } else {
                self.session.counter_add(c, &k, n)
            }
        })
        .map_err(py_err(py))
    }

    /// A durable counter as the transaction sees it.
    #[pyo3(signature = (counters, key: "_Key"))]
    fn counter_get(&self, py: Python<'_>, counters: &Counters, key: &Bound<'_, PyAny>) -> PyResult<i64> {
        let c = &counters.inner;
        let k = owned_key(py, c.name(), key)?;
        py.detach(|| self.session.counter_get(c, &k)).map_err(py_err(py))
    }

    /// Deletes a durable counter inside the transaction.
    #[pyo3(signature = (counters, key: "_Key"))]
    fn counter_delete(&self, py: Python<'_>, counters: &Counters, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let c = &counters.inner;
        let k = owned_key(py, c.name(), key)?;
        py.detach(|| self.session.counter_delete(c, &k)).map_err(py_err(py))
    }

    /// Counts `n` uses of a quota inside the transaction.
    #[pyo3(signature = (quota, key: "_Key", n: "int"))]
    fn quota_allow(
        &self,
        py: Python<'_>,
        quota: &Quota,
        key: &Bound<'_, PyAny>,
        n: &Bound<'_, PyAny>,
    ) -> PyResult<PyAllowance> {
        let q = &quota.inner;
        let (k, n) = (owned_key(py, q.name(), key)?, count(py, q.name(), n, "n")?);
        py.detach(|| self.session.quota_allow(q, &k, n))
            .map(allowance)
            .map_err(py_err(py))
    }

    /// Gives `n` uses of a quota back inside the transaction.
    #[pyo3(signature = (quota, key: "_Key", n: "int"))]
    fn quota_refund(
        &self,
        py: Python<'_>,
        quota: &Quota,
        key: &Bound<'_, PyAny>,
        n: &Bound<'_, PyAny>,
    ) -> PyResult<PyAllowance> {
        let q = &quota.inner;
        let (k, n) = (owned_key(py, q.name(), key)?, count(py, q.name(), n, "n")?);
        py.detach(|| self.session.quota_refund(q, &k, n))
            .map(allowance)
            .map_err(py_err(py))
    }

    /// The answer one use would get, as the transaction sees the quota.
    #[pyo3(signature = (quota, key: "_Key"))]
    fn quota_peek(&self, py: Python<'_>, quota: &Quota, key: &Bound<'_, PyAny>) -> PyResult<PyAllowance> {
        let q = &quota.inner;
        let k = owned_key(py, q.name(), key)?;
        py.detach(|| self.session.quota_peek(q, &k))
            .map(allowance)
            .map_err(py_err(py))
    }

    /// Forgets a quota's key inside the transaction.
    #[pyo3(signature = (quota, key: "_Key"))]
    fn quota_reset(&self, py: Python<'_>, quota: &Quota, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let q = &quota.inner;
        let k = owned_key(py, q.name(), key)?;
        py.detach(|| self.session.quota_reset(q, &k)).map_err(py_err(py))
    }

    /// The answer a once keeps for the key, as the transaction sees it, or None.
    #[pyo3(signature = (once, key: "_Key"))]
    fn once_get(&self, py: Python<'_>, once: &Once, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let k = once.key(py, key)?;
        match py.detach(|| self.session.once_get(&once.raw, &k)).map_err(py_err(py))? {
            Some(raw) => once
                .codec
                .to_py(py, &raw)
                .map(Bound::unbind)
                .map_err(|e| to_py(py, once.named(&k, e))),
            None => Ok(py.None()),
        }
    }

    /// Forgets the answer a once keeps for the key, inside the transaction.
    #[pyo3(signature = (once, key: "_Key"))]
    fn once_delete(&self, py: Python<'_>, once: &Once, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = once.key(py, key)?;
        py.detach(|| self.session.once_delete(&once.raw, &k))
            .map_err(py_err(py))
    }

    /// Ends the transaction and commits it, without waiting: the future of
    /// `Store.tx_then` says when it is durable.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        self.session.commit().map_err(py_err(py))
    }

    /// Ends the transaction, commits it and waits until it is durable (sync API).
    fn commit_wait(&self, py: Python<'_>) -> PyResult<()> {
        let done = lock(&self.done).take();
        let ended = || Error::new(ErrorKind::Closed, "the transaction has ended");
        py.detach(|| {
            let done = done.ok_or_else(ended)?;
            // A commit refused because the writer already ended the
            // transaction (it was open too long) answers with the reason.
            let sent = self.session.commit();
            match done.recv() {
                Ok(r) => r,
                Err(_) => sent.and(Err(ended())),
            }
        })
        .map_err(py_err(py))
    }

    /// Ends the transaction and writes nothing of it. Ending it twice is fine.
    fn rollback(&self) {
        let _ = self.session.rollback();
    }
}

/// A read snapshot: every read sees the file as it was at the first read.
#[pyclass(frozen, module = "tinystore._native")]
pub struct View {
    snap: Snapshot,
}

#[pymethods]
impl View {
    /// The value of a live key in the snapshot, or None. Renews nothing.
    #[pyo3(signature = (bucket, key: "_Key"))]
    fn get(&self, py: Python<'_>, bucket: &Bucket, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let k = bucket.key(py, key)?;
        let found = py.detach(|| self.snap.entry(&bucket.raw, &k)).map_err(py_err(py))?;
        value_of(py, bucket, &k, found)
    }

    /// (key, value, version, expires_at_ms) of a live key in the snapshot, or None.
    #[pyo3(signature = (bucket, key: "_Key") -> "_Row | None")]
    fn entry(&self, py: Python<'_>, bucket: &Bucket, key: &Bound<'_, PyAny>) -> PyResult<Option<PyEntry>> {
        let k = bucket.key(py, key)?;
        let found = py.detach(|| self.snap.entry(&bucket.raw, &k)).map_err(py_err(py))?;
        entry_of(py, bucket, found)
    }

    /// One page of a branch in the snapshot.
    #[pyo3(signature = (bucket, after: "_Key | None" = None, limit = None) -> "_Page")]
    fn list(
        &self,
        py: Python<'_>,
        bucket: &Bucket,
        after: Option<&Bound<'_, PyAny>>,
        limit: Option<usize>,
    ) -> PyResult<PyPage> {
        let opts = list_options(py, bucket, after, limit)?;
        let page = py.detach(|| self.snap.list(&bucket.raw, &opts)).map_err(py_err(py))?;
        page_to_py(py, bucket, page)
    }

    /// Ends the snapshot; later reads are `Closed`.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.snap.close());
    }
}

fn tx_object(py: Python<'_>, session: TxSession, done: Option<Receiver<tinystore::Result<()>>>) -> PyResult<Py<PyAny>> {
    Ok(Py::new(
        py,
        Tx {
            session,
            done: Mutex::new(done),
        },
    )?
    .into_any())
}

/// `Store.tx_then`: starts a transaction without blocking; `ready` resolves
/// with the `Tx` when the writer's turn comes, `done` once its commit is
/// durable (or with the error; nothing written).
pub fn start_then(
    store: &tinystore::Store,
    completions: &Bound<'_, Completions>,
    ready: Py<PyAny>,
    done: Py<PyAny>,
) -> PyResult<Ticket> {
    let queue = completions.get().queue.clone();
    let store = store.clone();
    let this = store.clone();
    Completions::defer(completions, ready, &this, move |ready| {
        let (q2, s2) = (queue.clone(), store.clone());
        let s1 = store.clone();
        store.transaction_then(
            move |r| {
                let resolve: Resolve = Box::new(move |py| match r {
                    Ok(session) => tx_object(py, session, None),
                    Err(e) => Err(to_py(py, e)),
                });
                queue.push_now(&s1, ready, resolve)
            },
            move |r| {
                let resolve: Resolve = Box::new(move |py| r.map(|()| py.None()).map_err(|e| to_py(py, e)));
                q2.push(&s2, done, resolve)
            },
        )
    })
}

/// `Store.tx`: starts a transaction, blocking this thread (not the GIL)
/// until the writer's turn comes.
pub fn start(py: Python<'_>, store: &tinystore::Store) -> PyResult<Py<PyAny>> {
    // A transaction of this thread's own store, or of the running task's.
    store.refuse_tx(&crate::caller::caller(py), 0).map_err(py_err(py))?;
    let (session, done) = py.detach(|| store.transaction()).map_err(py_err(py))?;
    // The sync API's block runs on this thread: a blocking write of the same
    // store from it outside the transaction is refused, not a wait.
    session.hold_thread();
    tx_object(py, session, Some(done))
}

/// `Store.view`: opens a read snapshot.
pub fn view(py: Python<'_>, store: &tinystore::Store) -> PyResult<View> {
    let snap = py.detach(|| store.snapshot()).map_err(py_err(py))?;
    Ok(View { snap })
}
