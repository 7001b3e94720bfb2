//! Rate limits (KV-12): GCRA over one due time a key, kept in memory.
//!
//! A key's due time lives in the name's [`Memory`], in the limits table
//! that every process on the store maps: one limit a key for all of them.
//! Its first request reads the row once (while the file may hold a live
//! one), later requests change the table with one compare-and-swap, and the
//! table is written every second and on close. So a restart keeps a spent
//! burst spent, and a crash forgets at most a second, letting at most one
//! burst more through. The row expires when the key is as good as new, and
//! maintenance deletes it. A key whose path is too long for the table is
//! decided in a write of its own instead, on the file.
//!
//! On PostgreSQL every server shares the key's row: each `allow` is one
//! statement on the database's clock, committed without waiting for the
//! disk (a crash of the database forgets its last moments of requests, as
//! a crash here forgets the last second), and memory keeps only the keys
//! seen full, to refuse them without a round trip ([`Refusals`]).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use super::gcra::{Decision, Gcra};
use super::memory::{Held, Memory};
use super::on_postgres;
use super::refusals::Refusals;
use super::{Allowance, from_nanos, now_nanos, shared, with_path};
use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::key::{AsKey, Branch};
use crate::storage::Kind;
use crate::store::Store;
use crate::values::BucketCore;

/// Opens a rate limit:
/// `store.rate_limit("sign-in-guesses").rate(5, Duration::from_secs(60)).burst(5).open()?`.
#[must_use = "a builder does nothing until .open()"]
pub struct RateLimitBuilder {
    store: Store,
    name: String,
    rate: Option<(u64, Duration)>,
    burst: Option<u64>,
}

impl Store {
    /// A rate limit by name.
    pub fn rate_limit(&self, name: &str) -> RateLimitBuilder {
        RateLimitBuilder {
            store: self.clone(),
            name: name.to_owned(),
            rate: None,
            burst: None,
        }
    }
}

impl RateLimitBuilder {
    /// Lets `count` requests through every `per`, refilled continuously.
    pub fn rate(mut self, count: u64, per: Duration) -> Self {
        self.rate = Some((count, per));
        self
    }

    /// Lets `burst` requests through at once (the rate's count when not given).
    pub fn burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }

    /// Opens the rate limit, creating the name in the file if it is new.
    pub fn open(self) -> Result<RateLimit> {
        crate::store::check_name(&self.name)?;
        let Some((count, per)) = self.rate else {
            return Err(Error::invalid("a rate limit needs a rate: how many requests per span").in_bucket(&self.name));
        };
        let gcra = Gcra::new(count, per, self.burst.unwrap_or(count))
            .map_err(|why| Error::invalid(why).in_bucket(&self.name))?;
        let bucket = BucketCore::open(&self.store, &self.name, Kind::RateLimit, None, None)?;
        let keeper = match self.store.inner.postgres() {
            Some(_) => Keeper::Postgres(Refusals::default()),
            None => Keeper::Memory(shared(&self.store).rate_memory(&self.store, bucket.id, &self.name)?),
        };
        Ok(RateLimit {
            core: Arc::new(LimitCore {
                bucket,
                gcra,
                keeper,
                floor: AtomicI64::new(0),
            }),
            branch: Branch::root(),
        })
    }
}

/// A key's due time in memory, in nanoseconds (0: never seen).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Due(i64);

impl Held for Due {
    const NEW: Due = Due(0);

    fn pack(&self) -> (i64, u64) {
        (self.0, 0)
    }

    fn unpack(value: i64, _: u64) -> Due {
        Due(value)
    }

    fn row(&self, now_ms: i64) -> Option<(i64, Option<i64>)> {
        // The row lives until the key is as good as new.
        let until = self.0.div_euclid(1_000_000) + i64::from(self.0.rem_euclid(1_000_000) != 0);
        (until > now_ms).then_some((self.0, Some(until)))
    }
}

/// Where a rate limit keeps its keys between requests.
enum Keeper {
    /// The limits table beside kv.db.
    Memory(Arc<Memory<Due>>),
    /// The shared rows of a PostgreSQL store, and the keys seen full.
    Postgres(Refusals),
}

struct LimitCore {
    bucket: Arc<BucketCore>,
    gcra: Gcra,
    keeper: Keeper,
    /// The highest system time shown, so the limit's clock never goes back.
    floor: AtomicI64,
}

/// A rate limit, or one branch of it. Cheap to clone.
#[derive(Clone)]
pub struct RateLimit {
    core: Arc<LimitCore>,
    branch: Branch,
}

impl fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RateLimit({:?} under {:?})",
            self.core.bucket.name,
            self.branch.show_with(None)
        )
    }
}

impl RateLimit {
    /// The rate limit's name.
    pub fn name(&self) -> &str {
        &self.core.bucket.name
    }

    /// How many requests pass at once.
    pub fn burst(&self) -> u64 {
        self.core.gcra.burst
    }

    /// The branch of `owner`: its keys are limited apart from the others.
    pub fn under(&self, owner: impl AsKey) -> RateLimit {
        RateLimit {
            core: self.core.clone(),
            branch: self.branch.child(&owner.key_bytes()),
        }
    }

    /// `e`, naming this rate limit and `key` unless it names a key already:
    /// how a binding names an error it found in a call's arguments.
    pub fn named(&self, key: &[u8], e: Error) -> Error {
        if e.path().is_some() {
            return e;
        }
        e.at(&self.core.bucket.name, self.branch.show_with(Some(key)))
    }

    /// Reads a key's due time from the file.
    fn load(&self, path: &[u8], now_ms: i64) -> Result<Due> {
        let bucket = &self.core.bucket;
        let cell = bucket
            .store
            .inner
            .readers
            .with(|c| crate::storage::get(c, bucket.id, path, now_ms))?;
        match cell {
            None => Ok(Due(0)),
            Some(c) => Ok(Due(c.value.as_int()?)),
        }
    }

    /// Decides a request of a key the table does not hold in one write: read
    /// its due time, decide, write the new one.
    fn allow_in_file(&self, path: &[u8], now: i64, n: u64) -> Result<Decision> {
        let (id, gcra, path) = (self.core.bucket.id, self.core.gcra, path.to_vec());
        let inner = &self.core.bucket.store.inner;
        inner.writer.call(0, move |w: &mut WriteCtx<'_>| {
            let due = match crate::storage::get(w.conn, id, &path, w.now)? {
                Some(c) => c.value.as_int()?,
                None => 0,
            };
            let d = gcra.decide(due, now, n);
            if d.ok
                && let Some((value, expires)) = Due(d.due).row(w.now)
            {
                let version = w.next_version();
                crate::storage::put(w.conn, id, &path, version, expires, &crate::Raw::Int(value), None)?;
            }
            Ok(d)
        })
    }

    /// Runs `f` on the key's path and the time now (ns), naming the key in
    /// any error.
    fn on_key<R>(&self, key: &[u8], f: impl FnOnce(&[u8], i64) -> Result<R>) -> Result<R> {
        let inner = &self.core.bucket.store.inner;
        inner.check_open()?;
        let now = now_nanos(&inner.clock, &self.core.floor);
        with_path(&self.branch, &self.core.bucket.name, key, |path| f(path, now)).map_err(|e| self.named(key, e))
    }

    #[inline]
    fn answer(d: Decision) -> Allowance {
        Allowance {
            ok: d.ok,
            left: d.left,
            retry_at: d.retry_at.map(from_nanos),
            windows: BTreeMap::new(),
        }
    }

    /// Takes one request: `ok` says whether it passes. A refusal is an
    /// answer, never an error.
    pub fn allow(&self, key: impl AsKey) -> Result<Allowance> {
        self.allow_n(key, 1)
    }

    /// Takes `n` requests together, or none. More than the burst is
    /// `Invalid`: it could never pass.
    pub fn allow_n(&self, key: impl AsKey, n: u64) -> Result<Allowance> {
        let key = key.key_bytes();
        let gcra = self.core.gcra;
        if n == 0 || n > gcra.burst {
            self.core.bucket.store.inner.check_open()?;
            return Err(self.named(
                &key,
                Error::invalid(format!("allow takes 1 to {} requests (the burst), not {n}", gcra.burst)),
            ));
        }
        let inner = &self.core.bucket.store.inner;
        let memory = match &self.core.keeper {
            Keeper::Memory(m) => m,
            Keeper::Postgres(refusals) => {
                let pg = inner.postgres().expect("a PostgreSQL keeper is on a PostgreSQL store");
                on_postgres::refuse_inside_tx(&self.core.bucket)?;
                let d = self.on_key(&key, |path, _| {
                    on_postgres::rate_allow(pg, refusals, &inner.clock, (self.core.bucket.id, path), &gcra, n)
                })?;
                return Ok(Self::answer(d));
            }
        };
        let d = self.on_key(&key, |path, now| {
            if !Memory::<Due>::holds(path) {
                return self.allow_in_file(path, now, n);
            }
            let now_ms = now.div_euclid(1_000_000);
            memory.change(
                inner,
                path,
                now_ms,
                || self.load(path, now_ms),
                |due| {
                    let d = gcra.decide(due.0, now, n);
                    if d.ok {
                        due.0 = d.due;
                    }
                    Ok((d, d.ok))
                },
            )
        })?;
        Ok(Self::answer(d))
    }

    /// The key's state now, counting nothing: `left` is how many requests
    /// would pass now (as a quota's `peek` says), `ok` whether one would,
    /// and, when none would, `retry_at` says when one will.
    pub fn peek(&self, key: impl AsKey) -> Result<Allowance> {
        let key = key.key_bytes();
        let inner = &self.core.bucket.store.inner;
        let d = self.on_key(&key, |path, now| {
            let memory = match &self.core.keeper {
                Keeper::Memory(m) => m,
                Keeper::Postgres(_) => {
                    let pg = inner.postgres().expect("a PostgreSQL keeper is on a PostgreSQL store");
                    return on_postgres::rate_peek(pg, &inner.clock, (self.core.bucket.id, path), &self.core.gcra);
                }
            };
            let now_ms = now.div_euclid(1_000_000);
            let due = match memory.get(path) {
                Some(d) => d,
                None if !Memory::<Due>::holds(path) || memory.must_read(now_ms) => self.load(path, now_ms)?,
                None => Due::NEW,
            };
            Ok(self.core.gcra.peek(due.0, now))
        })?;
        Ok(Self::answer(d))
    }

    /// Forgets the key: its next request has the full burst.
    pub fn reset(&self, key: impl AsKey) -> Result<()> {
        let key = key.key_bytes();
        let inner = &self.core.bucket.store.inner;
        self.on_key(&key, |path, now| {
            let memory = match &self.core.keeper {
                Keeper::Memory(m) => m,
                Keeper::Postgres(refusals) => {
                    let pg = inner.postgres().expect("a PostgreSQL keeper is on a PostgreSQL store");
                    on_postgres::refuse_inside_tx(&self.core.bucket)?;
                    return on_postgres::rate_reset(pg, refusals, (self.core.bucket.id, path));
                }
            };
            if !Memory::<Due>::holds(path) {
                let (id, path) = (self.core.bucket.id, path.to_vec());
                return inner.writer.call(0, move |w: &mut WriteCtx<'_>| {
                    crate::storage::delete(w.conn, id, &path, None)
                });
            }
            memory.change(
                inner,
                path,
                now.div_euclid(1_000_000),
                || Ok(Due::NEW), // no need to read what is forgotten
                |due| {
                    due.0 = 0;
                    Ok(((), true))
                },
            )
        })
    }
}
