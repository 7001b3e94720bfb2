//! Rate limits, quotas and counters: the core's handles with Python keys
//! and answers. Rate limits live in memory and answer inline; a quota's
//! or counters' write runs where its `scope` says (see `scope.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use tinystore::{
    Allowance, CounterWrite, Counters as CoreCounters, Error, Quota as CoreQuota, QuotaWrite,
    RateLimit as CoreRateLimit,
};

use crate::convert::{Answered, Arg, branch, int_of, key_in, opt_span, span, type_name};
use crate::errors::{invalid, py_err, to_py};
use crate::reply;
use crate::scope::{Call, in_scope};
use crate::store::Store;

/// An allowance as Python gets it:
/// (ok, left, retry_at_ms, {window: (used, limit, left, resets_at_ms)}).
pub(crate) type PyAllowance = (bool, u64, Option<i64>, BTreeMap<String, (u64, u64, u64, Option<i64>)>);

pub(crate) fn allowance(a: Allowance) -> PyAllowance {
    let windows = a
        .windows
        .into_iter()
        .map(|(name, w)| (name, (w.used, w.limit, w.left, w.resets_at.map(tinystore::to_millis))))
        .collect();
    (a.ok, a.left, a.retry_at.map(tinystore::to_millis), windows)
}

/// A rate like `"5/m"`, or a (count, duration) pair.
fn rate(obj: &Arg<'_>) -> Result<(u64, Duration), Error> {
    if let Ok(s) = obj.cast::<PyString>() {
        let text = s.to_str().map_err(|_| invalid("a rate is not valid text"))?;
        return tinystore::parse_rate(text);
    }
    if let Ok(t) = obj.cast::<PyTuple>()
        && t.len() == 2
    {
        let n: u64 = t
            .get_item(0)
            .and_then(|n| n.extract())
            .map_err(|_| invalid("a rate's count must be a positive int"))?;
        let per = span(
            &t.get_item(1).map_err(|_| invalid("a rate needs a span"))?,
            "a rate's span",
        )?;
        return Ok((n, per));
    }
    Err(invalid(format!(
        "a rate must be text as \"5/m\" or \"100/5h\", or a (count, duration) pair, not {}",
        type_name(obj)
    )))
}

/// A call's count of uses `n`, the error naming the handle and key through
/// `named`: a type that is no int is refused here, a count past int64 or
/// below 0 by the core, in every language's text.
pub(crate) fn count(py: Python<'_>, named: impl FnOnce(Error) -> Error, n: &Arg<'_>) -> PyResult<u64> {
    int_of(n, "n")
        .and_then(|n| tinystore::int64_arg(n, "a count of uses"))
        .and_then(|n| tinystore::not_negative(n, "a count of uses"))
        .map_err(|e| to_py(py, named(e)))
}

/// A rate limit (GCRA), kept in memory and written every second.
#[pyclass(frozen, module = "tinystore._native")]
pub struct RateLimit {
    pub(crate) inner: CoreRateLimit,
}

#[pymethods]
impl RateLimit {
    /// Opens the rate limit `name`: `rate` ("5/m") and `burst` (the rate's count when None).
    #[new]
    #[pyo3(signature = (store, name, rate_: "_Rate", burst = None))]
    fn new(py: Python<'_>, store: &Store, name: &str, rate_: &Arg<'_>, burst: Option<i64>) -> PyResult<Self> {
        let named = |e: tinystore::Error| to_py(py, e.in_bucket(name));
        let (n, per) = rate(rate_).map_err(named)?;
        let mut b = store.store.rate_limit(name).rate(n, per);
        if let Some(burst) = burst {
            b = b.burst(tinystore::not_negative(burst, "a burst").map_err(named)?);
        }
        let inner = py.detach(|| b.open()).map_err(py_err(py))?;
        Ok(RateLimit { inner })
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// The branch of `owners`.
    #[pyo3(signature = (*owners: "_Key"))]
    fn under(&self, py: Python<'_>, owners: &Bound<'_, PyTuple>) -> PyResult<RateLimit> {
        branch(py, &self.inner, owners).map(|inner| RateLimit { inner })
    }

    /// Takes `n` requests, or none.
    #[pyo3(signature = (key: "_Key", n: "int | None" = None))]
    fn allow(&self, py: Python<'_>, key: &Arg<'_>, n: Option<&Arg<'_>>) -> PyResult<PyAllowance> {
        let k = key_in(py, self.inner.name(), key)?;
        let n = match n {
            Some(n) => count(py, |e| self.inner.named(&k, e), n)?,
            None => 1,
        };
        py.detach(|| self.inner.allow_n(&k, n))
            .map(allowance)
            .map_err(py_err(py))
    }

    /// The answer one request would get now.
    #[pyo3(signature = (key: "_Key"))]
    fn peek(&self, py: Python<'_>, key: &Arg<'_>) -> PyResult<PyAllowance> {
        let k = key_in(py, self.inner.name(), key)?;
        py.detach(|| self.inner.peek(&k)).map(allowance).map_err(py_err(py))
    }

    /// Forgets the key.
    #[pyo3(signature = (key: "_Key"))]
    fn reset(&self, py: Python<'_>, key: &Arg<'_>) -> PyResult<()> {
        let k = key_in(py, self.inner.name(), key)?;
        py.detach(|| self.inner.reset(&k)).map_err(py_err(py))
    }
}

/// A quota: named windows that reset, counted in one durable write.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Quota {
    pub(crate) inner: CoreQuota,
}

impl Quota {
    fn call(&self) -> Call<'_, CoreQuota> {
        Call::of(&self.inner, self.inner.store())
    }
}

#[pymethods]
impl Quota {
    /// Opens the quota `name` with `windows`, a list of (name, rate).
    #[new]
    #[pyo3(signature = (store, name, windows: "list[tuple[str, _Rate]]"))]
    fn new(py: Python<'_>, store: &Store, name: &str, windows: Vec<(String, Bound<'_, PyAny>)>) -> PyResult<Self> {
        let mut b = store.store.quota(name);
        for (w, r) in &windows {
            let (n, per) = rate(r).map_err(|e| to_py(py, tinystore::window_rate_error(e, name, w)))?;
            b = b.window(w, n, per);
        }
        let inner = py.detach(|| b.open()).map_err(py_err(py))?;
        Ok(Quota { inner })
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// The branch of `owners`.
    #[pyo3(signature = (*owners: "_Key"))]
    fn under(&self, py: Python<'_>, owners: &Bound<'_, PyTuple>) -> PyResult<Quota> {
        branch(py, &self.inner, owners).map(|inner| Quota { inner })
    }

    /// Counts `n` uses in every window or in none, durably.
    #[pyo3(signature = (key: "_Key", n: "int", scope: "_Scope" = None))]
    fn allow(&self, py: Python<'_>, key: &Arg<'_>, n: &Arg<'_>, scope: Option<&Arg<'_>>) -> Answered {
        let k = key_in(py, self.inner.name(), key)?;
        let n = count(py, |e| self.inner.named(&k, e), n)?;
        self.call().write(py, scope, QuotaWrite::Allow(k, n), reply::written)
    }

    /// The answer one use would get now, counting nothing.
    #[pyo3(signature = (key: "_Key", scope: "Tx | View | None" = None))]
    fn peek(&self, py: Python<'_>, key: &Arg<'_>, scope: Option<&Arg<'_>>) -> PyResult<PyAllowance> {
        let k = key_in(py, self.inner.name(), key)?;
        in_scope(py, scope, |s| s.quota_peek(&self.inner, &k)).map(allowance)
    }

    /// Gives `n` uses back to windows that have not reset since.
    #[pyo3(signature = (key: "_Key", n: "int", scope: "_Scope" = None))]
    fn refund(&self, py: Python<'_>, key: &Arg<'_>, n: &Arg<'_>, scope: Option<&Arg<'_>>) -> Answered {
        let k = key_in(py, self.inner.name(), key)?;
        let n = count(py, |e| self.inner.named(&k, e), n)?;
        self.call().write(py, scope, QuotaWrite::Refund(k, n), reply::written)
    }

    /// Forgets the key.
    #[pyo3(signature = (key: "_Key", scope: "_Scope" = None))]
    fn reset(&self, py: Python<'_>, key: &Arg<'_>, scope: Option<&Arg<'_>>) -> Answered {
        let k = key_in(py, self.inner.name(), key)?;
        self.call().write(py, scope, QuotaWrite::Reset(k), reply::written)
    }
}

/// Counters: integers that add up, durable or flushed every period.
#[pyclass(frozen, module = "tinystore._native")]
pub struct Counters {
    pub(crate) inner: CoreCounters,
}

/// A counter's step `n`: a type that is no int is refused here, a step
/// past int64 by the core.
pub(crate) fn step(py: Python<'_>, name: &str, n: &Arg<'_>) -> PyResult<i64> {
    int_of(n, "n")
        .and_then(|n| tinystore::int64_arg(n, "a counter's step"))
        .map_err(|e| to_py(py, e.in_bucket(name)))
}

impl Counters {
    fn call(&self) -> Call<'_, CoreCounters> {
        Call::of(&self.inner, self.inner.store())
    }
}

#[pymethods]
impl Counters {
    /// Opens the counters `name`: a `ttl` from each counter's first add, and
    /// `flush_every` to keep them in memory and write them every period.
    #[new]
    #[pyo3(signature = (store, name, ttl: "_Span | None" = None, flush_every: "_Span | None" = None))]
    fn new(
        py: Python<'_>,
        store: &Store,
        name: &str,
        ttl: Option<&Arg<'_>>,
        flush_every: Option<&Arg<'_>>,
    ) -> PyResult<Self> {
        let named = |e: Error| to_py(py, e.in_bucket(name));
        let mut b = store.store.counters(name);
        if let Some(d) = opt_span(ttl, "ttl").map_err(named)? {
            b = b.ttl(d);
        }
        if let Some(d) = opt_span(flush_every, "flush_every").map_err(named)? {
            b = b.flush_every(d);
        }
        let inner = py.detach(|| b.open()).map_err(py_err(py))?;
        Ok(Counters { inner })
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// The branch of `owners`.
    #[pyo3(signature = (*owners: "_Key"))]
    fn under(&self, py: Python<'_>, owners: &Bound<'_, PyTuple>) -> PyResult<Counters> {
        branch(py, &self.inner, owners).map(|inner| Counters { inner })
    }

    /// Adds `n`; returns the new value.
    #[pyo3(signature = (key: "_Key", n: "int", scope: "_Scope" = None))]
    fn add(&self, py: Python<'_>, key: &Arg<'_>, n: &Arg<'_>, scope: Option<&Arg<'_>>) -> Answered {
        let k = key_in(py, self.inner.name(), key)?;
        let n = step(py, self.inner.name(), n)?;
        self.call().write(py, scope, CounterWrite::Add(k, n), reply::written)
    }

    /// Keeps the larger of the counter and `n`; returns it.
    #[pyo3(signature = (key: "_Key", n: "int", scope: "_Scope" = None))]
    fn max(&self, py: Python<'_>, key: &Arg<'_>, n: &Arg<'_>, scope: Option<&Arg<'_>>) -> Answered {
        let k = key_in(py, self.inner.name(), key)?;
        let n = step(py, self.inner.name(), n)?;
        self.call().write(py, scope, CounterWrite::Max(k, n), reply::written)
    }

    /// The counter's value (0 when missing or expired).
    #[pyo3(signature = (key: "_Key", scope: "Tx | View | None" = None))]
    fn get(&self, py: Python<'_>, key: &Arg<'_>, scope: Option<&Arg<'_>>) -> PyResult<i64> {
        let k = key_in(py, self.inner.name(), key)?;
        in_scope(py, scope, |s| s.counter_get(&self.inner, &k))
    }

    /// Deletes the counter; says whether a live one was there.
    #[pyo3(signature = (key: "_Key", scope: "_Scope" = None))]
    fn delete(&self, py: Python<'_>, key: &Arg<'_>, scope: Option<&Arg<'_>>) -> Answered {
        let k = key_in(py, self.inner.name(), key)?;
        self.call().write(py, scope, CounterWrite::Delete(k), reply::written)
    }

    /// Deletes every counter of this branch and the branches under it, on
    /// the store (`running`: the asyncio loop that awaits it).
    #[pyo3(signature = (running: "asyncio.AbstractEventLoop | None" = None))]
    fn clear(&self, py: Python<'_>, running: Option<&Arg<'_>>) -> Answered {
        self.call()
            .long()
            .write(py, running, CounterWrite::Clear, reply::written)
    }
}
