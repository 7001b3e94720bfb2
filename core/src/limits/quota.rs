//! Quotas (KV-13): uses counted against a plan in named windows that reset
//! on their own.
//!
//! A key's row is JSON, one entry a started window: `{"session": [used,
//! resetAtMs], ...}`, and the row expires when its last window resets.
//! Every `allow`, `refund` and `reset` is one durable grouped write that
//! reads the row inside the group, so racing allows pass exactly the limit
//! and a use counts in every window or in none. A window starts at the
//! first use after the last one ended, not on a clock edge. The windows are
//! the program's: a window the row holds but the program no longer names is
//! forgotten at the next write, and a new one starts at the next use.
//!
//! On PostgreSQL each write is a transaction on the key's locked row, on
//! the database's clock, deciding by the same rules ([`on_postgres`]);
//! inside a caller's transaction, the same decision on the row it locks.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::Allowance;
use super::WindowUsage;
use super::on_postgres;
use crate::clock::{duration_millis, from_millis};
use crate::error::{Error, Result};
use crate::group_commit::{Ticket, WriteCtx};
use crate::in_tx::InTx;
use crate::key::{AsKey, Branch};
use crate::raw::Raw;
use crate::storage::{self, Cell, Kind};
use crate::store::Store;
use crate::values::{BucketCore, Target};

/// The most windows one quota has.
pub const MAX_WINDOWS: usize = 8;

/// Opens a quota:
/// `store.quota("messages").window("session", 100, d).window("weekly", 300, w).open()?`.
#[must_use = "a builder does nothing until .open()"]
pub struct QuotaBuilder {
    store: Store,
    name: String,
    windows: Vec<(String, u64, Duration)>,
}

impl Store {
    /// A quota by name.
    pub fn quota(&self, name: &str) -> QuotaBuilder {
        QuotaBuilder {
            store: self.clone(),
            name: name.to_owned(),
            windows: Vec::new(),
        }
    }
}

struct Window {
    name: String,
    limit: u64,
    span_ms: i64,
}

fn check_window_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 32
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

impl QuotaBuilder {
    /// Adds a window: `limit` uses per `span`, starting at a key's first
    /// use. A name is `[a-z][a-z0-9_]{0,31}`; a quota has one to eight.
    pub fn window(mut self, name: &str, limit: u64, span: Duration) -> Self {
        self.windows.push((name.to_owned(), limit, span));
        self
    }

    /// Opens the quota, creating the name in the file if it is new.
    pub fn open(self) -> Result<Quota> {
        crate::store::check_name(&self.name)?;
        let bad = |why: String| Err(Error::invalid(why).in_bucket(&self.name));
        if self.windows.is_empty() || self.windows.len() > MAX_WINDOWS {
            return bad(format!(
                "a quota has 1 to {MAX_WINDOWS} windows, not {}",
                self.windows.len()
            ));
        }
        let mut windows: Vec<Window> = Vec::new();
        for (name, limit, span) in self.windows {
            if !check_window_name(&name) {
                return bad(format!(
                    "the window name {name:?} is not [a-z][a-z0-9_]{{0,31}}: use a lowercase letter, then up to 31 of a-z, 0-9 and '_'"
                ));
            }
            if windows.iter().any(|w| w.name == name) {
                return bad(format!("the window {name:?} is given twice"));
            }
            if limit == 0 {
                return bad(format!(
                    "the window {name:?} has a limit of 0, which lets nothing through"
                ));
            }
            if limit > i64::MAX as u64 {
                return bad(format!("the window {name:?} has a limit over the int64 range"));
            }
            if span < Duration::from_millis(1) {
                return bad(format!(
                    "the window {name:?} spans {span:?}, under the shortest span of 1ms"
                ));
            }
            windows.push(Window {
                name,
                limit,
                span_ms: duration_millis(span),
            });
        }
        let bucket = BucketCore::open(&self.store, &self.name, Kind::Quota, None, None)?;
        Ok(Quota {
            core: Arc::new(QuotaCore { bucket, windows }),
            branch: Branch::root(),
        })
    }
}

pub(super) struct QuotaCore {
    bucket: Arc<BucketCore>,
    windows: Vec<Window>,
}

/// A quota, or one branch of it. Cheap to clone.
#[derive(Clone)]
pub struct Quota {
    core: Arc<QuotaCore>,
    branch: Branch,
}

impl fmt::Debug for Quota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Quota({:?} under {:?})",
            self.core.bucket.name,
            self.branch.show_with(None)
        )
    }
}

/// A key's started windows: name to (used, reset at ms).
pub(super) type Row = BTreeMap<String, (u64, i64)>;

pub(super) fn parse_row(cell: Option<Cell>) -> Result<Row> {
    let Some(cell) = cell else {
        return Ok(Row::new());
    };
    let bytes = cell.value.as_json()?;
    serde_json::from_slice(bytes)
        .map_err(|e| Error::corrupt(format!("a quota row is not windows of [used, resetAt]: {e}")))
}

/// What a quota decided for one key at one time.
pub(super) struct Decided {
    pub answer: Allowance,
    /// The row to write, when the call changed it.
    pub write: Option<Row>,
}

impl QuotaCore {
    /// The windows as they stand at `now`: used and reset time, or nothing
    /// for a window that has not started.
    fn current(&self, row: &Row, now: i64) -> Vec<Option<(u64, i64)>> {
        self.windows
            .iter()
            .map(|w| row.get(&w.name).copied().filter(|&(_, reset)| reset > now))
            .collect()
    }

    fn answer(&self, state: &[Option<(u64, i64)>], ok: bool, retry_at: Option<i64>) -> Allowance {
        let mut windows = BTreeMap::new();
        let mut left = u64::MAX;
        for (w, s) in self.windows.iter().zip(state) {
            let used = s.map_or(0, |(u, _)| u);
            let l = w.limit.saturating_sub(used);
            left = left.min(l);
            windows.insert(
                w.name.clone(),
                WindowUsage {
                    used,
                    limit: w.limit,
                    left: l,
                    resets_at: s.map(|(_, r)| from_millis(r)),
                },
            );
        }
        Allowance {
            ok,
            left,
            retry_at: retry_at.map(from_millis),
            windows,
        }
    }

    fn row_of(&self, state: &[Option<(u64, i64)>]) -> Row {
        self.windows
            .iter()
            .zip(state)
            .filter_map(|(w, s)| s.map(|s| (w.name.clone(), s)))
            .collect()
    }

    /// Counts `n` uses in every window, or in none when one has no room.
    pub(super) fn allow(&self, row: &Row, now: i64, n: u64, count: bool) -> Decided {
        let mut state = self.current(row, now);
        let refusing: Vec<i64> = self
            .windows
            .iter()
            .zip(&state)
            .filter(|(w, s)| s.map_or(0, |(u, _)| u).saturating_add(n) > w.limit)
            .filter_map(|(_, s)| s.map(|(_, reset)| reset))
            .collect();
        if !refusing.is_empty() {
            let retry = refusing.into_iter().max();
            return Decided {
                answer: self.answer(&state, false, retry),
                write: None,
            };
        }
        if !count {
            return Decided {
                answer: self.answer(&state, true, None),
                write: None,
            };
        }
        for (w, s) in self.windows.iter().zip(state.iter_mut()) {
            *s = Some(match *s {
                Some((used, reset)) => (used + n, reset),
                None => (n, now.saturating_add(w.span_ms)),
            });
        }
        Decided {
            answer: self.answer(&state, true, None),
            write: Some(self.row_of(&state)),
        }
    }

    /// Gives `n` uses back to every window that has not reset, never below 0.
    pub(super) fn refund(&self, row: &Row, now: i64, n: u64) -> Decided {
        let mut state = self.current(row, now);
        for (used, _) in state.iter_mut().flatten() {
            *used = used.saturating_sub(n);
        }
        let write = self.row_of(&state);
        let changed = write != *row;
        Decided {
            answer: self.answer(&state, true, None),
            write: changed.then_some(write),
        }
    }

    /// The smallest limit: a request over it could never pass.
    fn min_limit(&self) -> u64 {
        self.windows.iter().map(|w| w.limit).min().unwrap_or(0)
    }
}

/// A quota row as it is stored: its JSON and its expiry, when its last
/// window resets; `None` when no window has started and the row goes.
pub(super) fn encode_row(row: &Row) -> Result<Option<(Raw, Option<i64>)>> {
    if row.is_empty() {
        return Ok(None);
    }
    let expires = row.values().map(|&(_, reset)| reset).max();
    let json = serde_json::to_vec(row).map_err(|e| Error::corrupt(format!("a quota row did not encode: {e}")))?;
    Ok(Some((Raw::Bytes(json), expires)))
}

/// Writes a quota row, or deletes it when no window has started.
fn write_row(t: &Target, w: &mut WriteCtx<'_>, row: &Row) -> Result<()> {
    let Some((value, expires)) = encode_row(row)? else {
        storage::delete(w.conn, t.core.id, t.path(), None)?;
        return Ok(());
    };
    let version = w.next_version();
    storage::put(w.conn, t.core.id, t.path(), version, expires, &value, None)
}

impl Quota {
    /// The quota's name.
    pub fn name(&self) -> &str {
        &self.core.bucket.name
    }

    /// The store this handle belongs to (a binding checks a call against a
    /// transaction its thread holds on the same store).
    pub fn store(&self) -> &Store {
        &self.core.bucket.store
    }

    /// The branch of `owner`: its keys count apart from the others.
    pub fn under(&self, owner: impl AsKey) -> Quota {
        Quota {
            core: self.core.clone(),
            branch: self.branch.child(&owner.key_bytes()),
        }
    }

    /// `e`, naming this quota and `key` unless it names a key already: how
    /// a binding names an error it found in a call's arguments.
    pub fn named(&self, key: &[u8], e: Error) -> Error {
        if e.path().is_some() {
            return e;
        }
        e.at(&self.core.bucket.name, self.branch.show_with(Some(key)))
    }

    fn target(&self, key: &[u8]) -> Result<Target> {
        self.core.bucket.store.inner.check_open()?;
        Target::new(&self.core.bucket, &self.branch, key)
    }

    fn check_n(&self, t: &Target, n: u64, what: &str) -> Result<()> {
        let min = self.core.min_limit();
        if n == 0 || n > min {
            return Err(t.name(Error::invalid(format!(
                "{what} takes 1 to {min} uses (the smallest window's limit), not {n}"
            ))));
        }
        Ok(())
    }

    /// A write of the key: read its row in the group, decide, write.
    fn op(
        &self,
        t: Target,
        decide: impl FnOnce(&QuotaCore, &Row, i64) -> Decided + Send + 'static,
    ) -> impl FnOnce(&mut WriteCtx<'_>) -> Result<Allowance> + Send + 'static {
        let core = self.core.clone();
        move |w: &mut WriteCtx<'_>| {
            let run = || {
                let row = parse_row(t.read(w.conn, w.now)?)?;
                let d = decide(&core, &row, w.now);
                if let Some(new) = &d.write {
                    write_row(&t, w, new)?;
                }
                Ok(d.answer)
            };
            run().map_err(|e| t.name(e))
        }
    }

    /// A write of the key inside a transaction: in kv.db's write, as
    /// [`Quota::op`]; on PostgreSQL, on the row the transaction locks.
    fn tx_op(
        &self,
        t: Target,
        decide: impl Fn(&QuotaCore, &Row, i64) -> Decided + Clone + Send + Sync + 'static,
    ) -> impl FnOnce(InTx<'_, '_>) -> Result<Allowance> + Send + 'static {
        let core = self.core.clone();
        let in_sqlite = self.op(t.clone(), decide.clone());
        move |on: InTx<'_, '_>| match on {
            InTx::Sqlite(w) => in_sqlite(w),
            InTx::Postgres(p) => on_postgres::quota_write_in_tx(p, &core, &t, decide),
        }
    }

    /// The write of [`Quota::allow_n`] of `key`, for a transaction to run
    /// on its own context.
    pub(crate) fn allow_op(
        &self,
        key: &[u8],
        n: u64,
    ) -> Result<impl FnOnce(InTx<'_, '_>) -> Result<Allowance> + Send + 'static> {
        let t = self.target(key)?;
        self.check_n(&t, n, "allow")?;
        Ok(self.tx_op(t, move |q, row, now| q.allow(row, now, n, true)))
    }

    /// The write of [`Quota::refund_n`] of `key`, for a transaction.
    pub(crate) fn refund_op(
        &self,
        key: &[u8],
        n: u64,
    ) -> Result<impl FnOnce(InTx<'_, '_>) -> Result<Allowance> + Send + 'static> {
        let t = self.target(key)?;
        self.check_n(&t, n, "refund")?;
        Ok(self.tx_op(t, move |q, row, now| q.refund(row, now, n)))
    }

    /// The read of [`Quota::peek`] of `key`, for a transaction: it sees the
    /// transaction's own uses.
    pub(crate) fn peek_op(
        &self,
        key: &[u8],
    ) -> Result<impl FnOnce(InTx<'_, '_>) -> Result<Allowance> + Send + 'static> {
        let t = self.target(key)?;
        let core = self.core.clone();
        Ok(move |mut on: InTx<'_, '_>| {
            let row = parse_row(on.read(&t)?).map_err(|e| t.name(e))?;
            Ok(core.allow(&row, on.now(), 1, false).answer)
        })
    }

    /// The write of [`Quota::reset`] of `key`, for a transaction.
    pub(crate) fn reset_op(&self, key: &[u8]) -> Result<impl FnOnce(InTx<'_, '_>) -> Result<()> + Send + 'static> {
        let t = self.target(key)?;
        Ok(move |on: InTx<'_, '_>| on.delete(&t).map(|_| ()))
    }

    /// Counts one use in every window, or in none; see [`Quota::allow_n`].
    pub fn allow(&self, key: impl AsKey) -> Result<Allowance> {
        self.allow_n(key, 1)
    }

    /// Counts `n` uses in every window, or in none when one has no room, in
    /// one durable write. A refusal is an answer: its `retry_at` is when the
    /// windows that refused reset. `n` over the smallest limit is `Invalid`.
    pub fn allow_n(&self, key: impl AsKey, n: u64) -> Result<Allowance> {
        let t = self.target(&key.key_bytes())?;
        self.check_n(&t, n, "allow")?;
        let decide = move |q: &QuotaCore, row: &Row, now| q.allow(row, now, n, true);
        if let Some(pg) = self.store().inner.postgres() {
            return on_postgres::quota_write(pg, &self.core, &t, decide);
        }
        let op = self.op(t, decide);
        self.core.bucket.store.inner.writer.call(0, op)
    }

    /// The completion form of [`Quota::allow_n`]: `done` gets the answer
    /// once it is durable, on the writer thread.
    pub fn allow_n_then(
        &self,
        key: impl AsKey,
        n: u64,
        done: impl FnOnce(Result<Allowance>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(&key.key_bytes())?;
        self.check_n(&t, n, "allow")?;
        let decide = move |q: &QuotaCore, row: &Row, now| q.allow(row, now, n, true);
        if let Some(pg) = self.store().inner.postgres() {
            return on_postgres::quota_write_then(pg, self.core.clone(), t, decide, done);
        }
        let op = self.op(t, decide);
        self.core.bucket.store.inner.writer.submit(0, op, done)
    }

    /// The answer one use would get now, counting nothing.
    pub fn peek(&self, key: impl AsKey) -> Result<Allowance> {
        let t = self.target(&key.key_bytes())?;
        let inner = &self.core.bucket.store.inner;
        if let Some(pg) = inner.postgres() {
            let (row, now) = on_postgres::quota_read(pg, &t)?;
            return Ok(self.core.allow(&row, now, 1, false).answer);
        }
        let now = inner.clock.now_millis();
        let cell = inner.readers.with(|c| t.read(c, now))?;
        let row = parse_row(cell).map_err(|e| t.name(e))?;
        Ok(self.core.allow(&row, now, 1, false).answer)
    }

    /// Gives one use back; see [`Quota::refund_n`].
    pub fn refund(&self, key: impl AsKey) -> Result<Allowance> {
        self.refund_n(key, 1)
    }

    /// Gives `n` uses back to every window that has not reset since, never
    /// below zero: for work that failed after its use was counted.
    pub fn refund_n(&self, key: impl AsKey, n: u64) -> Result<Allowance> {
        let t = self.target(&key.key_bytes())?;
        self.check_n(&t, n, "refund")?;
        let decide = move |q: &QuotaCore, row: &Row, now| q.refund(row, now, n);
        if let Some(pg) = self.store().inner.postgres() {
            return on_postgres::quota_write(pg, &self.core, &t, decide);
        }
        let op = self.op(t, decide);
        self.core.bucket.store.inner.writer.call(0, op)
    }

    /// The completion form of [`Quota::refund_n`].
    pub fn refund_n_then(
        &self,
        key: impl AsKey,
        n: u64,
        done: impl FnOnce(Result<Allowance>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(&key.key_bytes())?;
        self.check_n(&t, n, "refund")?;
        let decide = move |q: &QuotaCore, row: &Row, now| q.refund(row, now, n);
        if let Some(pg) = self.store().inner.postgres() {
            return on_postgres::quota_write_then(pg, self.core.clone(), t, decide, done);
        }
        let op = self.op(t, decide);
        self.core.bucket.store.inner.writer.submit(0, op, done)
    }

    /// Forgets the key: every window starts again at its next use.
    pub fn reset(&self, key: impl AsKey) -> Result<()> {
        let t = self.target(&key.key_bytes())?;
        if let Some(pg) = self.store().inner.postgres() {
            return on_postgres::delete(pg, &t);
        }
        self.core
            .bucket
            .store
            .inner
            .writer
            .call(0, move |w: &mut WriteCtx<'_>| t.op_delete(w, None).map(|_| ()))
    }

    /// The completion form of [`Quota::reset`].
    pub fn reset_then(&self, key: impl AsKey, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<Ticket> {
        let t = self.target(&key.key_bytes())?;
        if let Some(pg) = self.store().inner.postgres() {
            return on_postgres::delete_then(pg, t, done);
        }
        self.core.bucket.store.inner.writer.submit(
            0,
            move |w: &mut WriteCtx<'_>| t.op_delete(w, None).map(|_| ()),
            done,
        )
    }
}
