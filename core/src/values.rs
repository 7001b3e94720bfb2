//! Buckets of values, untyped: the rules of keys, versions and expiry
//! (KV-4 to KV-10) on rows of [`Raw`] values.
//!
//! [`RawBucket`] is what the bindings call: every write has a blocking form
//! and a completion form (`*_then`). The typed [`crate::Bucket`] is a
//! `RawBucket` plus the serde codec. Each write is a function of the
//! group's [`WriteCtx`], so a `tx` runs the very same code inline.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::budget::Held;
use crate::clock::{duration_millis, from_millis, to_millis};
use crate::error::{Error, Result};
use crate::group_commit::{Isolation, Ticket, WriteCtx};
use crate::key::{AsKey, Branch, Key};
use crate::raw::{MAX_VALUE, Raw};
use crate::storage::{self, Cell, Kind};
use crate::store::Store;

/// The most keys one page of `list` holds.
pub const MAX_PAGE: usize = 1000;
/// The keys of a page when the call does not say.
pub const DEFAULT_PAGE: usize = 100;
/// The most bytes of values one page holds.
pub const MAX_PAGE_BYTES: usize = 4 << 20;

/// What a page of `list` holds of the memory budget: its bytes and the row
/// past them, which it reads to know the page is full.
pub(crate) const PAGE_HOLD: usize = MAX_PAGE_BYTES + MAX_VALUE;
/// A branch with more keys than this is hidden by a clear mark and deleted
/// by maintenance, instead of deleted in one write.
pub const CLEAR_BOUND: usize = 10_000;
/// An idle key with less than this left is renewed before its read returns.
const LAST_MINUTE: i64 = 60_000;

/// The revision of the file that wrote a value. Versions never repeat, and
/// compare only for equality; as text they are the decimal revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Version(pub(crate) i64);

impl Version {
    /// The revision as a number, for bindings that carry it across.
    pub fn get(self) -> i64 {
        self.0
    }

    /// A version from the number [`Version::get`] gave.
    pub fn from_raw(v: i64) -> Version {
        Version(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Version {
    type Err = Error;
    fn from_str(s: &str) -> Result<Version> {
        s.parse()
            .map(Version)
            .map_err(|_| Error::invalid(format!("{s:?} is not a version")))
    }
}

/// A key with its value, version and expiry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry<T> {
    /// The key, without its owners.
    pub key: Key,
    /// The value.
    pub value: T,
    /// The revision that wrote the value.
    pub version: Version,
    /// When the key expires, if it does.
    pub expires_at: Option<SystemTime>,
}

/// When a key expires: a span from now or a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// This long from now.
    In(Duration),
    /// At this time; a time in the past makes the key absent at once.
    At(SystemTime),
}

impl From<Duration> for Expiry {
    fn from(d: Duration) -> Expiry {
        Expiry::In(d)
    }
}

impl From<SystemTime> for Expiry {
    fn from(t: SystemTime) -> Expiry {
        Expiry::At(t)
    }
}

impl Expiry {
    fn at(self, now: i64) -> i64 {
        match self {
            Expiry::In(d) => now.saturating_add(duration_millis(d)),
            Expiry::At(t) => to_millis(t),
        }
    }
}

/// A write's own options: its expiry and the version it expects.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// The key's new expiry, replacing the bucket's `ttl` and a live key's own.
    pub expiry: Option<Expiry>,
    /// Apply only to a live key at this version; otherwise `Conflict`.
    pub if_version: Option<Version>,
}

/// Where a listing starts and how much a page holds.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Start after this key (the `next` of the page before).
    pub after: Option<Key>,
    /// Keys a page holds, 1 to 1000 (100 when not given).
    pub limit: Option<usize>,
}

/// One page of a listing.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    /// The entries, in the byte order of their keys.
    pub entries: Vec<Entry<T>>,
    /// The cursor of the next page, when there may be one.
    pub next: Option<Key>,
}

/// What `create` found.
#[derive(Clone, Debug, PartialEq)]
pub enum Created<T> {
    /// The key was absent and now holds the value at this version.
    Written(Version),
    /// The key was there: its entry, unchanged.
    Found(Entry<T>),
}

/// The options and identity of one bucket, shared by its branches.
pub(crate) struct BucketCore {
    pub store: Store,
    pub name: String,
    pub id: i64,
    pub ttl: Option<i64>,
    pub idle: Option<i64>,
}

/// Checks a bucket's expiry options: not both, not zero.
pub(crate) fn check_spans(name: &str, ttl: Option<Duration>, idle: Option<Duration>) -> Result<()> {
    if ttl.is_some() && idle.is_some() {
        return Err(Error::invalid("a bucket takes ttl or idle, not both").in_bucket(name));
    }
    if ttl.is_some_and(|d| d.is_zero()) || idle.is_some_and(|d| d.is_zero()) {
        return Err(Error::invalid("a ttl or idle of zero would expire every key at once").in_bucket(name));
    }
    Ok(())
}

impl BucketCore {
    pub(crate) fn open(
        store: &Store,
        name: &str,
        kind: Kind,
        ttl: Option<Duration>,
        idle: Option<Duration>,
    ) -> Result<Arc<BucketCore>> {
        crate::store::check_name(name)?;
        check_spans(name, ttl, idle)?;
        let id = store.register(name, kind)?;
        Ok(Arc::new(BucketCore {
            store: store.clone(),
            name: name.to_owned(),
            id,
            ttl: ttl.map(duration_millis),
            idle: idle.map(duration_millis),
        }))
    }

    /// The expiry a `set` gives, as the one statement that writes it
    /// decides: the rule of [`BucketCore::expiry`] without reading the row.
    fn set_expiry(&self, now: i64, own: Option<Expiry>) -> storage::SetExpiry {
        match (own, self.idle) {
            (Some(e), _) => storage::SetExpiry::Give(Some(e.at(now))),
            (None, Some(term)) => storage::SetExpiry::Give(Some(now.saturating_add(term))),
            (None, None) => storage::SetExpiry::KeepLiveElse(self.ttl.map(|t| now.saturating_add(t))),
        }
    }

    /// The expiry a write gives: its own, else a live key's (not in an idle
    /// bucket, where a write renews), else the bucket's.
    fn expiry(&self, now: i64, own: Option<Expiry>, live: Option<Option<i64>>) -> Option<i64> {
        if let Some(e) = own {
            return Some(e.at(now));
        }
        if let Some(term) = self.idle {
            return Some(now.saturating_add(term));
        }
        match live {
            Some(kept) => kept,
            None => self.ttl.map(|t| now.saturating_add(t)),
        }
    }
}

thread_local! {
    /// Where a point read on this thread builds its key's path.
    static READ_PATH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `e`, naming the bucket and the key's path unless it names a key already.
fn name_key(bucket: &str, branch: &Branch, key: &[u8], e: Error) -> Error {
    if e.path().is_some() {
        return e;
    }
    e.at(bucket, branch.show_with(Some(key)))
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

/// One key of one bucket, owned, so that a write can travel to the writer.
#[derive(Clone)]
pub(crate) struct Target {
    pub core: Arc<BucketCore>,
    pub branch: Branch,
    /// The path, then the key: one allocation a write, not two.
    path_and_key: Vec<u8>,
    path_len: usize,
}

impl Target {
    pub(crate) fn new(core: &Arc<BucketCore>, branch: &Branch, key: &[u8]) -> Result<Target> {
        let mut path_and_key = Vec::with_capacity(branch.prefix().len() + 2 * key.len() + 8);
        branch.path_into(&core.name, key, &mut path_and_key)?;
        let path_len = path_and_key.len();
        path_and_key.extend_from_slice(key);
        Ok(Target {
            core: core.clone(),
            branch: branch.clone(),
            path_and_key,
            path_len,
        })
    }

    /// The key's encoded path in its bucket.
    pub(crate) fn path(&self) -> &[u8] {
        &self.path_and_key[..self.path_len]
    }

    /// The key as the caller gave it.
    pub(crate) fn key(&self) -> &[u8] {
        &self.path_and_key[self.path_len..]
    }

    /// Names this key in an error.
    pub(crate) fn name(&self, e: Error) -> Error {
        name_key(&self.core.name, &self.branch, self.key(), e)
    }

    /// Holds `bytes` of the memory budget inside a transaction: what is
    /// free now, or `Limit` naming this key.
    pub(crate) fn hold_now(&self, bytes: usize, what: &str) -> Result<Held> {
        self.core.store.inner.hold_now(bytes, what).map_err(|e| self.name(e))
    }

    fn conflict(&self, what: &str) -> Error {
        self.name(Error::conflict(what.to_owned()))
    }

    pub(crate) fn entry(&self, cell: Cell) -> Entry<Raw> {
        entry_of(self.key(), cell)
    }

    /// Reads the key on `conn`, without renewal.
    pub(crate) fn read(&self, conn: &rusqlite::Connection, now: i64) -> Result<Option<Cell>> {
        storage::get(conn, self.core.id, self.path(), now).map_err(|e| self.name(e))
    }

    fn check_version(&self, live: Option<&storage::CellMeta>, want: Option<Version>) -> Result<()> {
        let Some(want) = want else { return Ok(()) };
        match live {
            Some(m) if m.version == want.0 => Ok(()),
            Some(m) => Err(self.conflict(&format!("the key is at version {}, not {}", m.version, want))),
            None => Err(self.conflict(&format!("the key is absent, not at version {want}"))),
        }
    }

    fn live_meta(&self, w: &WriteCtx<'_>) -> Result<(Option<storage::CellMeta>, Option<storage::CellMeta>)> {
        let m = storage::meta(w.conn, self.core.id, self.path(), w.now)?;
        Ok((m, m.filter(|m| m.live)))
    }

    // ---- the writes, as functions of the group ----

    pub(crate) fn op_set(&self, w: &mut WriteCtx<'_>, value: &Raw, opts: WriteOptions) -> Result<Version> {
        value.check_size().map_err(|e| self.name(e))?;
        let mut run = || {
            if opts.if_version.is_none() && !storage::spills(value) {
                // The common write: one statement, the expiry rule in SQL,
                // no read first. It runs without a savepoint of its own.
                let version = w.next_version();
                let expiry = self.core.set_expiry(w.now, opts.expiry);
                let now = w.now;
                let mut st = w.cell_set();
                let set = storage::set_inline(&mut st, self.core.id, self.path(), version, expiry, value, now);
                drop(st); // the spilled case below may take it again
                if set? {
                    return Ok(Version(version));
                }
                // The row holds a spilled value: replace it and free the
                // spill, two changes, so in a savepoint of their own.
                return w.savepoint(|w| self.put_reading(w, value, opts));
            }
            self.put_reading(w, value, opts)
        };
        run().map_err(|e| self.name(e))
    }

    /// A `set` that reads the row first: for `if_version`, for a value that
    /// spills, and for a row whose value spilled.
    fn put_reading(&self, w: &mut WriteCtx<'_>, value: &Raw, opts: WriteOptions) -> Result<Version> {
        let (any, live) = self.live_meta(w)?;
        self.check_version(live.as_ref(), opts.if_version)?;
        let expires = self.core.expiry(w.now, opts.expiry, live.map(|m| m.expires));
        let version = w.next_version();
        storage::put(
            w.conn,
            self.core.id,
            self.path(),
            version,
            expires,
            value,
            any.and_then(|m| m.spill),
        )?;
        Ok(Version(version))
    }

    pub(crate) fn op_create(&self, w: &mut WriteCtx<'_>, value: &Raw, expiry: Option<Expiry>) -> Result<Created<Raw>> {
        value.check_size().map_err(|e| self.name(e))?;
        let mut run = || {
            if let Some(cell) = self.read(w.conn, w.now)? {
                return Ok(Created::Found(self.entry(cell)));
            }
            let any = storage::meta(w.conn, self.core.id, self.path(), w.now)?;
            let expires = self.core.expiry(w.now, expiry, None);
            let version = w.next_version();
            storage::put(
                w.conn,
                self.core.id,
                self.path(),
                version,
                expires,
                value,
                any.and_then(|m| m.spill),
            )?;
            Ok(Created::Written(Version(version)))
        };
        run().map_err(|e| self.name(e))
    }

    /// Reads and deletes in one write. `decode` runs inside the write's
    /// savepoint: a value that does not decode is `Corrupt` and stays.
    pub(crate) fn op_take<T>(
        &self,
        w: &mut WriteCtx<'_>,
        if_version: Option<Version>,
        decode: impl FnOnce(Entry<Raw>) -> Result<T>,
    ) -> Result<Option<T>> {
        let run = || {
            let Some(cell) = self.read(w.conn, w.now)? else {
                return match if_version {
                    Some(v) => Err(self.conflict(&format!("the key is absent, not at version {v}"))),
                    None => Ok(None),
                };
            };
            if let Some(v) = if_version
                && v.0 != cell.version
            {
                return Err(self.conflict(&format!("the key is at version {}, not {v}", cell.version)));
            }
            let spill = storage::meta(w.conn, self.core.id, self.path(), w.now)?.and_then(|m| m.spill);
            let value = decode(self.entry(cell))?;
            storage::delete(w.conn, self.core.id, self.path(), spill)?;
            Ok(Some(value))
        };
        run().map_err(|e| self.name(e))
    }

    pub(crate) fn op_delete(&self, w: &mut WriteCtx<'_>, if_version: Option<Version>) -> Result<bool> {
        let run = || {
            let (any, live) = self.live_meta(w)?;
            self.check_version(live.as_ref(), if_version)?;
            let Some(m) = any else { return Ok(false) };
            storage::delete(w.conn, self.core.id, self.path(), m.spill)?;
            Ok(live.is_some())
        };
        run().map_err(|e| self.name(e))
    }

    pub(crate) fn op_expire(&self, w: &mut WriteCtx<'_>, expiry: Expiry, if_version: Option<Version>) -> Result<bool> {
        let run = || {
            let (_, live) = self.live_meta(w)?;
            self.check_version(live.as_ref(), if_version)?;
            if live.is_none() {
                return Ok(false);
            }
            storage::set_expiry(w.conn, self.core.id, self.path(), Some(expiry.at(w.now)))?;
            Ok(true)
        };
        run().map_err(|e| self.name(e))
    }
}

/// What a write of one key carries to the writer: the bytes of its value
/// (how groups are bounded) and whether it needs a savepoint.
fn cost(value: Option<&Raw>) -> (usize, Isolation) {
    (value.map_or(0, Raw::encoded_len), Isolation::Savepoint)
}

/// A `set`'s cost: an inline value is written in one statement, or, when it
/// replaces a spilled one, in a savepoint the write opens itself.
fn set_cost(value: &Raw) -> (usize, Isolation) {
    match storage::spills(value) {
        true => (value.encoded_len(), Isolation::Savepoint),
        false => (value.encoded_len(), Isolation::OneStatement),
    }
}

/// Clears a branch and every branch under it. Small branches are deleted in
/// this write; larger ones are hidden by a mark at a new revision, which
/// hides every row written before it, and deleted by maintenance.
pub(crate) fn op_clear(core: &BucketCore, branch: &Branch, w: &mut WriteCtx<'_>, in_tx: bool) -> Result<()> {
    let named = |e: Error| e.at(&core.name, branch.show_with(None));
    branch.check(&core.name)?;
    let (lo, hi) = branch.subtree();
    let n = storage::count_subtree(w.conn, core.id, &lo, &hi, CLEAR_BOUND + 1).map_err(named)?;
    if n <= CLEAR_BOUND {
        storage::delete_subtree(w.conn, core.id, &lo, &hi).map_err(named)?;
        return Ok(());
    }
    if in_tx {
        return Err(named(Error::limit(format!(
            "a clear of more than {CLEAR_BOUND} keys cannot run inside a transaction"
        ))));
    }
    let version = w.next_version();
    storage::mark_cleared(w.conn, core.id, &lo, &hi, version).map_err(named)
}

/// A bucket of [`Raw`] values: every call of a bucket, on rows as they are
/// kept. Bindings convert their language's values to `Raw` and call this.
#[derive(Clone)]
pub struct RawBucket {
    pub(crate) core: Arc<BucketCore>,
    pub(crate) branch: Branch,
}

impl fmt::Debug for RawBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RawBucket({:?} under {:?})",
            self.core.name,
            self.branch.show_with(None)
        )
    }
}

impl RawBucket {
    /// Opens the bucket `name` with a `ttl` or an `idle` span (not both).
    pub fn open(store: &Store, name: &str, ttl: Option<Duration>, idle: Option<Duration>) -> Result<RawBucket> {
        Ok(RawBucket {
            core: BucketCore::open(store, name, Kind::Values, ttl, idle)?,
            branch: Branch::root(),
        })
    }

    /// The bucket's name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// The store this handle belongs to (a binding checks a call against a
    /// transaction its thread holds on the same store).
    pub fn store(&self) -> &Store {
        &self.core.store
    }

    /// The branch of `owner` under this one.
    pub fn under(&self, owner: impl AsKey) -> RawBucket {
        RawBucket {
            core: self.core.clone(),
            branch: self.branch.child(&owner.key_bytes()),
        }
    }

    /// The owners of this branch.
    pub fn owners(&self) -> &[Vec<u8>] {
        self.branch.owners()
    }

    fn target(&self, key: &[u8]) -> Result<Target> {
        self.core.store.inner.check_open()?;
        Target::new(&self.core, &self.branch, key)
    }

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
    /// [`Target`]'s allocation and two `Arc` clones were 2% of a get).
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

    /// `e`, naming this bucket and `key` unless it names a key already.
    pub(crate) fn named(&self, key: &[u8], e: Error) -> Error {
        name_key(&self.core.name, &self.branch, key, e)
    }

    /// Renews an idle key once a thirtieth of its span has passed: queued
    /// for the next flush, or now if it is in its last minute.
    fn renew(&self, path: &[u8], key: &[u8], version: i64, expires: Option<i64>, now: i64) -> Result<Option<i64>> {
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
        let now = inner.clock.now_millis();
        inner.readers.with(|c| list_on(&self.core, &self.branch, c, now, opts))
    }

    /// Every key of this branch, a page at a time, holding no snapshot
    /// between pages.
    pub fn all(&self) -> impl Iterator<Item = Result<Entry<Raw>>> + '_ {
        Pages::new(move |opts| self.list(opts))
    }

    /// Every write of a key changes at most one row of cells, and a value
    /// that spills adds a row before it: only that write needs a savepoint.
    /// `held` is the memory budget the write holds until it is answered.
    fn write<T: Send + 'static>(
        &self,
        t: Target,
        (weight, isolation): (usize, Isolation),
        held: Held,
        op: impl FnOnce(&Target, &mut WriteCtx<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let _held = held;
        // The writer's own errors (closed, cancelled, outcome unknown) name
        // the key too; an op's errors already do.
        self.core.store.inner.writer.call_with(
            weight,
            isolation,
            t,
            move |t: &Target, w: &mut WriteCtx<'_>| op(t, w),
            |t, e| t.name(e),
        )
    }

    fn write_then<T: Send + 'static>(
        &self,
        t: Target,
        (weight, isolation): (usize, Isolation),
        held: Held,
        op: impl FnOnce(&Target, &mut WriteCtx<'_>) -> Result<T> + Send + 'static,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<Ticket> {
        self.core
            .store
            .inner
            .writer
            .submit_with(weight, isolation, t, op, move |t, r| {
                drop(held);
                done(r.map_err(|e| t.name(e)))
            })
            .map_err(|(e, t)| t.name(e))
    }

    /// Writes `value`, durably, and returns its version.
    pub fn set(&self, key: &[u8], value: Raw, opts: WriteOptions) -> Result<Version> {
        let held = self.core.store.inner.hold(value.encoded_len());
        self.set_held(key, value, opts, held)
    }

    /// [`RawBucket::set`] holding memory the caller took before it made the value.
    pub(crate) fn set_held(&self, key: &[u8], value: Raw, opts: WriteOptions, held: Held) -> Result<Version> {
        let t = self.target(key)?;
        self.write(t, set_cost(&value), held, move |t, w| t.op_set(w, &value, opts))
    }

    /// The completion form of [`RawBucket::set`]: returns at once, and `done`
    /// gets the result on the writer thread once the write is durable.
    pub fn set_then(
        &self,
        key: &[u8],
        value: Raw,
        opts: WriteOptions,
        done: impl FnOnce(Result<Version>) + Send + 'static,
    ) -> Result<Ticket> {
        let held = self.core.store.inner.hold(value.encoded_len());
        self.set_then_held(key, value, opts, held, done)
    }

    /// [`RawBucket::set_then`] holding memory the caller took before it made the value.
    pub(crate) fn set_then_held(
        &self,
        key: &[u8],
        value: Raw,
        opts: WriteOptions,
        held: Held,
        done: impl FnOnce(Result<Version>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        self.write_then(t, set_cost(&value), held, move |t, w| t.op_set(w, &value, opts), done)
    }

    /// Writes `value` only if the key is absent.
    pub fn create(&self, key: &[u8], value: Raw, expiry: Option<Expiry>) -> Result<Created<Raw>> {
        // Its own value, and the largest, for the value it may find.
        let held = self.core.store.inner.hold(value.encoded_len() + MAX_VALUE);
        self.create_held(key, value, expiry, held)
    }

    /// [`RawBucket::create`] holding memory the caller took before it made the value.
    pub(crate) fn create_held(
        &self,
        key: &[u8],
        value: Raw,
        expiry: Option<Expiry>,
        held: Held,
    ) -> Result<Created<Raw>> {
        let t = self.target(key)?;
        self.write(t, cost(Some(&value)), held, move |t, w| t.op_create(w, &value, expiry))
    }

    /// The completion form of [`RawBucket::create`].
    pub fn create_then(
        &self,
        key: &[u8],
        value: Raw,
        expiry: Option<Expiry>,
        done: impl FnOnce(Result<Created<Raw>>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        let held = self.core.store.inner.hold(value.encoded_len() + MAX_VALUE);
        self.write_then(
            t,
            cost(Some(&value)),
            held,
            move |t, w| t.op_create(w, &value, expiry),
            done,
        )
    }

    /// Reads and deletes a key in one write. `check` runs inside the write:
    /// an error from it (a value the caller cannot decode) keeps the value.
    pub fn take(
        &self,
        key: &[u8],
        if_version: Option<Version>,
        check: impl FnOnce(&Entry<Raw>) -> Result<()> + Send + 'static,
    ) -> Result<Option<Entry<Raw>>> {
        let t = self.target(key)?;
        let held = self.core.store.inner.hold(MAX_VALUE);
        self.write(t, cost(None), held, move |t, w| {
            t.op_take(w, if_version, |e| {
                check(&e)?;
                Ok(e)
            })
        })
    }

    /// The completion form of [`RawBucket::take`].
    pub fn take_then(
        &self,
        key: &[u8],
        if_version: Option<Version>,
        check: impl FnOnce(&Entry<Raw>) -> Result<()> + Send + 'static,
        done: impl FnOnce(Result<Option<Entry<Raw>>>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        let held = self.core.store.inner.hold(MAX_VALUE);
        self.write_then(
            t,
            cost(None),
            held,
            move |t, w| {
                t.op_take(w, if_version, |e| {
                    check(&e)?;
                    Ok(e)
                })
            },
            done,
        )
    }

    /// Deletes a key; says whether a live key was there.
    pub fn delete(&self, key: &[u8], if_version: Option<Version>) -> Result<bool> {
        let t = self.target(key)?;
        self.write(t, cost(None), Held::nothing(), move |t, w| t.op_delete(w, if_version))
    }

    /// The completion form of [`RawBucket::delete`].
    pub fn delete_then(
        &self,
        key: &[u8],
        if_version: Option<Version>,
        done: impl FnOnce(Result<bool>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        self.write_then(
            t,
            cost(None),
            Held::nothing(),
            move |t, w| t.op_delete(w, if_version),
            done,
        )
    }

    /// Gives a live key a new expiry, keeping its value and version; says
    /// whether a live key was there.
    pub fn expire(&self, key: &[u8], expiry: Expiry, if_version: Option<Version>) -> Result<bool> {
        let t = self.target(key)?;
        self.write(t, cost(None), Held::nothing(), move |t, w| {
            t.op_expire(w, expiry, if_version)
        })
    }

    /// The completion form of [`RawBucket::expire`].
    pub fn expire_then(
        &self,
        key: &[u8],
        expiry: Expiry,
        if_version: Option<Version>,
        done: impl FnOnce(Result<bool>) + Send + 'static,
    ) -> Result<Ticket> {
        let t = self.target(key)?;
        self.write_then(
            t,
            cost(None),
            Held::nothing(),
            move |t, w| t.op_expire(w, expiry, if_version),
            done,
        )
    }

    /// Removes this branch and every branch under it, for every reader at once.
    pub fn clear(&self) -> Result<()> {
        let inner = &self.core.store.inner;
        inner.check_open()?;
        let (core, branch) = (self.core.clone(), self.branch.clone());
        inner
            .writer
            .call(0, move |w: &mut WriteCtx<'_>| op_clear(&core, &branch, w, false))
    }

    /// The completion form of [`RawBucket::clear`].
    pub fn clear_then(&self, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<Ticket> {
        let inner = &self.core.store.inner;
        inner.check_open()?;
        let (core, branch) = (self.core.clone(), self.branch.clone());
        inner
            .writer
            .submit(0, move |w: &mut WriteCtx<'_>| op_clear(&core, &branch, w, false), done)
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
    let limit = opts.limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > MAX_PAGE {
        return Err(Error::invalid(format!("a page holds 1 to {MAX_PAGE} keys, not {limit}")).in_bucket(&core.name));
    }
    let (lo, hi) = branch.own_keys();
    let after = match &opts.after {
        Some(k) => branch.after(&k.0),
        None => lo,
    };
    let (rows, more) = storage::scan(conn, core.id, &after, &hi, now, limit, MAX_PAGE_BYTES)?;
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
