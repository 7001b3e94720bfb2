//! Counters (KV-14): an int64 a key.
//!
//! A durable counter writes each change through the writer, in one upsert
//! that reads the live row inside the group, so racing adds count exactly.
//! A `flush_every` counter changes the limits table that every process on
//! the store shares, with one compare-and-swap, and returns; the table is
//! written every period, by `maintain` and on close, so racing adds from
//! any processes count exactly and a crash loses at most one period. A key
//! whose path is too long for the table is written at each change instead.
//! Both keep these rules:
//! - a missing or expired counter is 0;
//! - a counter's `ttl` starts at its first change and does not slide: a live
//!   counter keeps its expiry, an expired one starts again with a new one;
//! - a sum past the int64 range is `Limit` and changes nothing, since SQLite
//!   would quietly turn it into a REAL.
//!
//! On PostgreSQL every change is a transaction on the key's locked row, on
//! the database's clock, by the same rules ([`decide_change`]), and so is a
//! change of `flush_every` counters: a memory in one process could not be
//! shared by the other servers, so they are written at each change too,
//! which keeps more than `flush_every` promises.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::memory::{Held, Memory};
use super::{on_postgres, shared};
use crate::error::{Error, Result};
use crate::group_commit::{Isolation, Ticket, WriteCtx};
use crate::in_tx::InTx;
use crate::key::{AsKey, Branch};
use crate::storage::{self, Kind};
use crate::store::Store;
use crate::values::{BucketCore, Target, op_clear};

/// The shortest `flush_every`: the store writes memory once a second, so a
/// shorter period could not be kept.
const MIN_FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Opens counters: `store.counters("attempts").ttl(d).flush_every(d).open()?`.
#[must_use = "a builder does nothing until .open()"]
pub struct CountersBuilder {
    store: Store,
    name: String,
    ttl: Option<Duration>,
    flush_every: Option<Duration>,
}

impl Store {
    /// Counters by name: an int64 a key.
    pub fn counters(&self, name: &str) -> CountersBuilder {
        CountersBuilder {
            store: self.clone(),
            name: name.to_owned(),
            ttl: None,
            flush_every: None,
        }
    }
}

impl CountersBuilder {
    /// Each counter expires this long after its first change, and starts
    /// again from 0 after that: a window of attempts that does not slide.
    pub fn ttl(mut self, d: Duration) -> Self {
        self.ttl = Some(d);
        self
    }

    /// Keeps the counters in memory and writes them every `d` (at least a
    /// second), by `maintain` and on close, instead of on every change. A
    /// crash loses at most the changes of one period. Every handle of a
    /// name must choose the same period, or none.
    pub fn flush_every(mut self, d: Duration) -> Self {
        self.flush_every = Some(d);
        self
    }

    /// Opens the counters, creating the name in the file if it is new.
    pub fn open(self) -> Result<Counters> {
        crate::store::check_name(&self.name)?;
        if let Some(d) = self.flush_every
            && d < MIN_FLUSH_EVERY
        {
            return Err(Error::invalid(format!(
                "flush_every {d:?} is under {MIN_FLUSH_EVERY:?}, how often the store writes memory"
            ))
            .in_bucket(&self.name));
        }
        let core = BucketCore::open(&self.store, &self.name, Kind::Counters, self.ttl, None)?;
        let memory = shared(&self.store).counters_memory(&self.store, core.id, &self.name, self.flush_every)?;
        Ok(Counters {
            core,
            branch: Branch::root(),
            memory,
            flush_every: self.flush_every.is_some(),
        })
    }
}

/// Counters, or one branch of them. Cheap to clone.
#[derive(Clone)]
pub struct Counters {
    core: Arc<BucketCore>,
    branch: Branch,
    memory: Option<Arc<Memory<Count>>>,
    /// Opened with `flush_every`: such counters join no transaction, on
    /// PostgreSQL too, where they have no memory, so that a program's
    /// transactions answer the same on either backend.
    flush_every: bool,
}

impl fmt::Debug for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Counters({:?} under {:?})",
            self.core.name,
            self.branch.show_with(None)
        )
    }
}

/// A counter as memory holds it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Count {
    value: i64,
    expires: Option<i64>,
    present: bool,
}

impl Count {
    const ABSENT: Count = Count {
        value: 0,
        expires: None,
        present: false,
    };

    fn live(&self, now: i64) -> bool {
        self.present && self.expires.is_none_or(|e| e > now)
    }

    fn value(&self, now: i64) -> i64 {
        if self.live(now) { self.value } else { 0 }
    }
}

/// A slot's payload for a counter: bit 47 says it is present, the bits
/// below it hold its expiry plus one (0: none).
const PRESENT: u64 = 1 << 47;
const EXPIRY_MASK: u64 = PRESENT - 1;
const _: () = assert!(PRESENT <= super::shared::MAX_PAYLOAD);

impl Held for Count {
    const NEW: Count = Count::ABSENT;

    fn row(&self, now_ms: i64) -> Option<(i64, Option<i64>)> {
        self.live(now_ms).then_some((self.value, self.expires))
    }

    fn pack(&self) -> (i64, u64) {
        // An expiry before 1970 is as expired as 1970's first millisecond,
        // and one past the year 6000 as good as none.
        let expiry = match self.expires {
            None => 0,
            Some(e) => (e.max(0) as u64).min(EXPIRY_MASK - 1) + 1,
        };
        (self.value, expiry | if self.present { PRESENT } else { 0 })
    }

    fn unpack(value: i64, payload: u64) -> Count {
        let expiry = payload & EXPIRY_MASK;
        Count {
            value,
            expires: (expiry != 0).then(|| (expiry - 1) as i64),
            present: payload & PRESENT != 0,
        }
    }
}

/// How a change combines the counter with `n`.
#[derive(Clone, Copy)]
pub(crate) enum How {
    Add,
    Max,
}

impl How {
    fn apply(self, cur: i64, n: i64) -> Result<i64> {
        match self {
            How::Max => Ok(cur.max(n)),
            How::Add => cur.checked_add(n).ok_or_else(|| {
                Error::limit(format!(
                    "adding {n} to {cur} would pass the int64 range; the counter is unchanged"
                ))
            }),
        }
    }
}

/// What a change makes of a counter at `now`, given the live counter's
/// value and expiry (`None`: missing or expired): the new value and, when
/// it differs, the expiry to write it with. A new or expired counter gets
/// the ttl; a live one keeps its expiry.
pub(crate) fn decide_change(
    live: Option<(i64, Option<i64>)>,
    ttl: Option<i64>,
    now: i64,
    how: How,
    n: i64,
) -> Result<(i64, Option<Option<i64>>)> {
    let (cur, kept) = live.unwrap_or((0, None));
    let new = how.apply(cur, n)?;
    if new == cur {
        return Ok((new, None));
    }
    let expires = match live {
        Some(_) => kept,
        None => ttl.map(|ttl| now.saturating_add(ttl)),
    };
    Ok((new, Some(expires)))
}

/// The change of one counter, inside a group: read the live row, combine,
/// write only if the value changed ([`decide_change`]).
pub(crate) fn op_change(t: &Target, w: &mut WriteCtx<'_>, how: How, n: i64) -> Result<i64> {
    let mut run = || {
        let live = match t.read(w.conn, w.now)? {
            Some(c) => Some((c.value.as_int()?, c.expires)),
            None => None,
        };
        let (new, write) = decide_change(live, t.core.ttl, w.now, how, n)?;
        let Some(expires) = write else {
            return Ok(new);
        };
        let version = w.next_version();
        // A counter's row never spills, so this is the write's one change.
        storage::put(
            w.conn,
            t.core.id,
            t.path(),
            version,
            expires,
            &crate::Raw::Int(new),
            None,
        )?;
        Ok(new)
    };
    run().map_err(|e| t.name(e))
}

impl Counters {
    /// The counters' name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// The owners of this branch, outermost first, for a binding to name a
    /// key in an error of its own.
    pub fn owners(&self) -> &[Vec<u8>] {
        self.branch.owners()
    }

    /// The store this handle belongs to (a binding checks a call against a
    /// transaction its thread holds on the same store).
    pub fn store(&self) -> &Store {
        &self.core.store
    }

    /// The branch of `owner`: the counters that belong to it.
    pub fn under(&self, owner: impl AsKey) -> Counters {
        Counters {
            core: self.core.clone(),
            branch: self.branch.child(&owner.key_bytes()),
            memory: self.memory.clone(),
            flush_every: self.flush_every,
        }
    }

    pub(crate) fn target(&self, key: &[u8]) -> Result<Target> {
        self.core.store.inner.check_open()?;
        Target::new(&self.core, &self.branch, key)
    }

    /// Whether these counters were opened without `flush_every`: only
    /// those can join a transaction.
    pub(crate) fn durable(&self) -> bool {
        !self.flush_every
    }

    /// Reads the counter from the file, as memory first holds it.
    fn load(&self, t: &Target, now: i64) -> Result<Count> {
        let cell = self.core.store.inner.readers.with(|c| t.read(c, now))?;
        match cell {
            None => Ok(Count::ABSENT),
            Some(c) => Ok(Count {
                value: c.value.as_int().map_err(|e| t.name(e))?,
                expires: c.expires,
                present: true,
            }),
        }
    }

    /// A change in memory: the counter's new value.
    fn change_in(&self, memory: &Memory<Count>, t: &Target, how: How, n: i64) -> Result<i64> {
        let inner = &self.core.store.inner;
        let now = inner.clock.now_millis();
        let ttl = self.core.ttl;
        memory
            .change(
                inner,
                t.path(),
                now,
                || self.load(t, now),
                |c| {
                    let cur = c.value(now);
                    let new = how.apply(cur, n)?;
                    if new == cur {
                        return Ok((new, false));
                    }
                    if !c.live(now) {
                        c.present = true;
                        c.expires = ttl.map(|ttl| now.saturating_add(ttl));
                    }
                    c.value = new;
                    Ok((new, true))
                },
            )
            .map_err(|e| t.name(e))
    }

    /// The memory that holds `t`'s key: none for durable counters, and none
    /// for a path too long for the table, which is written at each change.
    fn memory_of(&self, t: &Target) -> Option<&Arc<Memory<Count>>> {
        self.memory.as_ref().filter(|_| Memory::<Count>::holds(t.path()))
    }

    fn change(&self, key: &[u8], how: How, n: i64) -> Result<i64> {
        let t = self.target(key)?;
        if let Some(pg) = self.core.store.inner.postgres() {
            return on_postgres::counter_change(pg, &t, how, n);
        }
        match self.memory_of(&t) {
            Some(m) => self.change_in(m, &t, how, n),
            None => self
                .core
                .store
                .inner
                .writer
                .call_as(0, Isolation::OneStatement, move |w: &mut WriteCtx<'_>| {
                    op_change(&t, w, how, n)
                }),
        }
    }

    fn change_then(
        &self,
        key: &[u8],
        how: How,
        n: i64,
        done: impl FnOnce(Result<i64>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        if let Some(pg) = self.core.store.inner.postgres() {
            return on_postgres::counter_change_then(pg, t, how, n, done);
        }
        match self.memory_of(&t) {
            Some(m) => {
                done(self.change_in(m, &t, how, n));
                Ok(Ticket::finished())
            }
            None => self.core.store.inner.writer.submit_as(
                0,
                Isolation::OneStatement,
                move |w: &mut WriteCtx<'_>| op_change(&t, w, how, n),
                done,
            ),
        }
    }

    /// Adds `n` (which may be negative) and returns the new value. A missing
    /// or expired counter starts from 0; a sum past the int64 range is
    /// `Limit` and changes nothing.
    pub fn add(&self, key: impl AsKey, n: i64) -> Result<i64> {
        self.change(&key.key_bytes(), How::Add, n)
    }

    /// The completion form of [`Counters::add`]: `done` gets the new value
    /// once it is durable (on the writer thread), or at once for
    /// `flush_every` counters.
    pub fn add_then(&self, key: impl AsKey, n: i64, done: impl FnOnce(Result<i64>) + Send + 'static) -> Result<Ticket> {
        self.change_then(&key.key_bytes(), How::Add, n, done)
    }

    /// Keeps the larger of the counter and `n`, and returns it (a missing
    /// counter is 0, so `max(key, -3)` is 0).
    pub fn max(&self, key: impl AsKey, n: i64) -> Result<i64> {
        self.change(&key.key_bytes(), How::Max, n)
    }

    /// The completion form of [`Counters::max`].
    pub fn max_then(&self, key: impl AsKey, n: i64, done: impl FnOnce(Result<i64>) + Send + 'static) -> Result<Ticket> {
        self.change_then(&key.key_bytes(), How::Max, n, done)
    }

    /// The counter's value: 0 when it is missing or expired.
    pub fn get(&self, key: impl AsKey) -> Result<i64> {
        let t = self.target(&key.key_bytes())?;
        if let Some(pg) = self.core.store.inner.postgres() {
            return on_postgres::counter_get(pg, &t);
        }
        let now = self.core.store.inner.clock.now_millis();
        if let Some(c) = self.memory_of(&t).and_then(|m| m.get(t.path())) {
            return Ok(c.value(now));
        }
        Ok(self.load(&t, now)?.value(now))
    }

    /// Deletes the counter; says whether a live one was there.
    pub fn delete(&self, key: impl AsKey) -> Result<bool> {
        let t = self.target(&key.key_bytes())?;
        if let Some(pg) = self.core.store.inner.postgres() {
            return on_postgres::counter_delete(pg, &t);
        }
        match self.memory_of(&t) {
            Some(m) => self.delete_in(m, &t),
            None => self
                .core
                .store
                .inner
                .writer
                .call(0, move |w: &mut WriteCtx<'_>| t.op_delete(w, None)),
        }
    }

    fn delete_in(&self, memory: &Memory<Count>, t: &Target) -> Result<bool> {
        let inner = &self.core.store.inner;
        let now = inner.clock.now_millis();
        memory
            .change(
                inner,
                t.path(),
                now,
                || self.load(t, now),
                |c| {
                    let was = c.live(now);
                    *c = Count::ABSENT;
                    Ok((was, was))
                },
            )
            .map_err(|e| t.name(e))
    }

    /// The completion form of [`Counters::delete`].
    pub fn delete_then(&self, key: impl AsKey, done: impl FnOnce(Result<bool>) + Send + 'static) -> Result<Ticket> {
        let t = self.target(&key.key_bytes())?;
        if let Some(pg) = self.core.store.inner.postgres() {
            return on_postgres::counter_delete_then(pg, t, done);
        }
        match self.memory_of(&t) {
            Some(m) => {
                done(self.delete_in(m, &t));
                Ok(Ticket::finished())
            }
            None => self
                .core
                .store
                .inner
                .writer
                .submit(0, move |w: &mut WriteCtx<'_>| t.op_delete(w, None), done),
        }
    }

    /// The clear's write, and the flag it sets once it has dropped the
    /// branch from memory: only then does its caller end the clear there.
    fn clear_op(
        &self,
    ) -> (
        impl FnOnce(&mut WriteCtx<'_>) -> Result<()> + Send + 'static,
        Arc<AtomicBool>,
    ) {
        let (core, branch, memory) = (self.core.clone(), self.branch.clone(), self.memory.clone());
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = dropped.clone();
        let op = move |w: &mut WriteCtx<'_>| {
            op_clear(&core, &branch, w, false)?;
            if let Some(m) = &memory {
                // In the clear's own write, so no flush after it writes these
                // again, and no key goes in until it commits.
                let (lo, hi) = branch.subtree();
                m.drop_range(&lo, &hi)?;
                flag.store(true, Ordering::Release);
            }
            Ok(())
        };
        (op, dropped)
    }

    fn end_clear(&self, dropped: &AtomicBool) {
        if let Some(m) = &self.memory
            && dropped.load(Ordering::Acquire)
        {
            m.cleared();
        }
    }

    /// Removes this branch's counters and every branch under it, from the
    /// file and from memory.
    pub fn clear(&self) -> Result<()> {
        self.core.store.inner.check_open()?;
        if let Some(pg) = self.core.store.inner.postgres() {
            return on_postgres::clear(pg, &self.core, &self.branch);
        }
        let (op, dropped) = self.clear_op();
        let out = self.core.store.inner.writer.call(0, op);
        self.end_clear(&dropped);
        out
    }

    /// The completion form of [`Counters::clear`].
    pub fn clear_then(&self, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<Ticket> {
        self.core.store.inner.check_open()?;
        if let Some(pg) = self.core.store.inner.postgres() {
            return on_postgres::clear_then(pg, self.core.clone(), self.branch.clone(), done);
        }
        let (op, dropped) = self.clear_op();
        let me = self.clone();
        self.core.store.inner.writer.submit(0, op, move |r| {
            me.end_clear(&dropped);
            done(r)
        })
    }
}

impl InTx<'_, '_> {
    /// Adds to or raises a counter; its new value.
    pub(crate) fn change(self, t: &Target, how: How, n: i64) -> Result<i64> {
        match self {
            InTx::Sqlite(w) => op_change(t, w, how, n),
            InTx::Postgres(p) => on_postgres::op_change_on_postgres(t, p, how, n),
        }
    }
}
