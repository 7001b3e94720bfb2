//! The read calls of [`RawBucket`]: point reads (which renew an idle key)
//! and listings, a page at a time. Kept apart from the writes because they
//! read on a reader connection and never wait for the writer, save to renew
//! a key in its last minute.

use super::{
    BucketCore, DEFAULT_PAGE, Entry, ListOptions, MAX_PAGE, MAX_PAGE_BYTES, PAGE_HOLD, Page, RawBucket, Version,
    name_key,
};
use crate::budget::Held;
use crate::clock::from_millis;
use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::key::{Branch, Key};
use crate::raw::{MAX_VALUE, Raw};
use crate::storage::{self, Cell};

/// An idle key with less than this left is renewed before its read returns.
const LAST_MINUTE: i64 = 60_000;

thread_local! {
    /// Where a point read on this thread builds its key's path.
    static READ_PATH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The entry of `key` from its row.
pub(crate) fn entry_of(key: &[u8], cell: Cell) -> Entry<Raw> {
    Entry {
        key: Key(key.to_vec()),
        value: cell.value,
        version: Version(cell.version),
        expires_at: cell.expires.map(from_millis),
    }
}

impl RawBucket {
    /// Reads a live key with its version and expiry. In an idle bucket the
    /// read asks for a renewal (written about a second later), or renews a key
    /// in its last minute before it returns.
    pub fn entry(&self, key: &[u8]) -> Result<Option<Entry<Raw>>> {
        let _held = self.core.store.inner.hold(MAX_VALUE);
        Ok(self.cell_held(key)?.map(|cell| entry_of(key, cell)))
    }

    /// [`RawBucket::entry`] as the row holds it, for a caller that already
    /// holds the memory of the value it reads (a typed bucket, until it has
    /// decoded it; a `get` needs no copy of the key).
    pub(crate) fn cell_held(&self, key: &[u8]) -> Result<Option<Cell>> {
        let inner = &self.core.store.inner;
        if let Some(pg) = inner.postgres() {
            return self.with_path(key, |path| self.pg_cell(pg, path, key));
        }
        self.with_path(key, |path| {
            let now = inner.clock.now_millis();
            let found = inner.readers.with(|c| c.get(self.core.id, path, now));
            let Some(mut cell) = found.map_err(|e| self.named(key, e))? else {
                return Ok(None);
            };
            if let Some(renewed) = self.renew(path, key, cell.version, cell.expires, now)? {
                cell.expires = Some(renewed);
            }
            Ok(Some(cell))
        })
    }

    /// Whether a live key is there (renewing it as `entry` does).
    pub fn has(&self, key: &[u8]) -> Result<bool> {
        let inner = &self.core.store.inner;
        if let Some(pg) = inner.postgres() {
            return self.with_path(key, |path| self.pg_has(pg, path, key));
        }
        self.with_path(key, |path| {
            let now = inner.clock.now_millis();
            let found = inner
                .readers
                .with(|c| storage::has(c, self.core.id, path, now))
                .map_err(|e| self.named(key, e))?;
            let Some((version, expires)) = found else {
                return Ok(false);
            };
            self.renew(path, key, version, expires, now)?;
            Ok(true)
        })
    }

    /// Runs `read` with `key`'s path, built in this thread's buffer: a point
    /// read allocates nothing for its path and clones no handle (a
    /// [`Target`](super::Target)'s allocation and two `Arc` clones were 2% of a get).
    fn with_path<R>(&self, key: &[u8], read: impl FnOnce(&[u8]) -> Result<R>) -> Result<R> {
        self.core.store.inner.check_open()?;
        READ_PATH.with(|buf| {
            let mut own = Vec::new();
            // A read never starts another on its thread while it holds the
            // buffer; if one ever did, it would build its path apart.
            let mut borrowed = buf.try_borrow_mut();
            let path = match borrowed.as_deref_mut() {
                Ok(path) => path,
                Err(_) => &mut own,
            };
            path.clear();
            self.branch.path_into(&self.core.name, key, path)?;
            read(path)
        })
    }

    /// `e`, naming this bucket and `key` unless it names a key already:
    /// how a binding names an error it found in a key's value or options.
    pub fn named(&self, key: &[u8], e: Error) -> Error {
        name_key(&self.core.name, &self.branch, key, e)
    }

    /// Renews an idle key once a thirtieth of its span has passed: queued
    /// for the next flush, or now if it is in its last minute.
    pub(super) fn renew(
        &self,
        path: &[u8],
        key: &[u8],
        version: i64,
        expires: Option<i64>,
        now: i64,
    ) -> Result<Option<i64>> {
        let (Some(term), Some(exp)) = (self.core.idle, expires) else {
            return Ok(None);
        };
        let left = exp - now;
        if left > term - term / 30 {
            return Ok(None);
        }
        let until = now.saturating_add(term);
        let inner = &self.core.store.inner;
        if left >= LAST_MINUTE {
            inner.renewals.ask(self.core.id, path.to_vec(), version, expires, until);
            return Ok(None);
        }
        if let Some(pg) = inner.postgres() {
            return self.pg_renew(pg, path, key, version, expires, until);
        }
        let (id, path) = (self.core.id, path.to_vec());
        let done = inner
            .writer
            .call(0, move |w: &mut WriteCtx<'_>| {
                storage::renew(w.conn, id, &path, version, expires, until)
            })
            .map_err(|e| self.named(key, e))?;
        Ok(done.then_some(until))
    }

    /// A page of this branch's own keys, in the byte order of their text.
    /// Renews nothing.
    pub fn list(&self, opts: &ListOptions) -> Result<Page<Raw>> {
        let _held = self.core.store.inner.hold(PAGE_HOLD);
        self.list_held(opts)
    }

    /// Holds a page's memory inside a transaction, or `Limit` naming the bucket.
    pub(crate) fn hold_now(&self, bytes: usize) -> Result<Held> {
        self.core
            .store
            .inner
            .hold_now(bytes, "a page of list")
            .map_err(|e| e.in_bucket(&self.core.name))
    }

    /// [`RawBucket::list`] for a caller that already holds a page's memory.
    pub(crate) fn list_held(&self, opts: &ListOptions) -> Result<Page<Raw>> {
        let inner = &self.core.store.inner;
        inner.check_open()?;
        self.branch.check(&self.core.name)?;
        if let Some(pg) = inner.postgres() {
            return self.pg_list(pg, opts);
        }
        let now = inner.clock.now_millis();
        inner.readers.with(|c| list_on(&self.core, &self.branch, c, now, opts))
    }

    /// Every key of this branch, a page at a time, holding no snapshot
    /// between pages.
    pub fn all(&self) -> impl Iterator<Item = Result<Entry<Raw>>> + '_ {
        Pages::new(move |opts| self.list(opts))
    }
}

/// Lists a branch's own keys on `conn`.
pub(crate) fn list_on(
    core: &BucketCore,
    branch: &Branch,
    conn: &rusqlite::Connection,
    now: i64,
    opts: &ListOptions,
) -> Result<Page<Raw>> {
    list_with(core, branch, opts, |after, hi, limit| {
        storage::scan(conn, core.id, after, hi, now, limit, MAX_PAGE_BYTES)
    })
}

/// Lists a branch's own keys, with `scan` reading the live rows with paths
/// in `(after, hi)`, at most `limit`, and whether more may follow.
pub(crate) fn list_with(
    core: &BucketCore,
    branch: &Branch,
    opts: &ListOptions,
    scan: impl FnOnce(&[u8], &[u8], usize) -> Result<(Vec<storage::ScanRow>, bool)>,
) -> Result<Page<Raw>> {
    let limit = match opts.limit {
        Some(n) => super::page_size(n as i128).map_err(|e| e.in_bucket(&core.name))?,
        None => DEFAULT_PAGE,
    };
    let (lo, hi) = branch.own_keys();
    let after = match &opts.after {
        Some(k) => branch.after(&k.0),
        None => lo,
    };
    let (rows, more) = scan(&after, &hi, limit)?;
    let mut entries = Vec::with_capacity(rows.len());
    for r in rows {
        entries.push(Entry {
            key: branch.key_of(&r.path)?,
            value: r.cell.value,
            version: Version(r.cell.version),
            expires_at: r.cell.expires.map(from_millis),
        });
    }
    let next = if more {
        entries.last().map(|e| e.key.clone())
    } else {
        None
    };
    Ok(Page { entries, next })
}

/// Walks pages of a listing, one at a time.
pub(crate) struct Pages<T, F> {
    fetch: F,
    buf: std::vec::IntoIter<Entry<T>>,
    next: Option<Option<Key>>,
}

impl<T, F: FnMut(&ListOptions) -> Result<Page<T>>> Pages<T, F> {
    pub(crate) fn new(fetch: F) -> Self {
        Pages {
            fetch,
            buf: Vec::new().into_iter(),
            next: Some(None),
        }
    }
}

impl<T, F: FnMut(&ListOptions) -> Result<Page<T>>> Iterator for Pages<T, F> {
    type Item = Result<Entry<T>>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.buf.next() {
                return Some(Ok(e));
            }
            let after = self.next.take()?;
            let opts = ListOptions {
                after,
                limit: Some(MAX_PAGE),
            };
            match (self.fetch)(&opts) {
                Ok(page) => {
                    self.next = page.next.map(Some);
                    self.buf = page.entries.into_iter();
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
