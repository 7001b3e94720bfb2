//! One key of one bucket as a write carries it to the writer ([`Target`]),
//! and the writes themselves as functions of the group's [`WriteCtx`].
//! Kept apart from `writes` because `RawBucket`, a `tx`, a session, kept
//! config and the limits all run these same functions; `writes` only
//! submits them.

use std::sync::Arc;

use super::{BucketCore, Created, Entry, Expiry, Version, WriteOptions, entry_of, name_key};
use crate::budget::Held;
use crate::clock::from_millis;
use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::key::Branch;
use crate::raw::Raw;
use crate::storage::{self, Cell};

/// Bytes of path and key a write carries in its own allocation: enough
/// for a session id of 43 characters under an owner, so that a typical
/// write allocates nothing for its key (an allocation on the caller's
/// thread freed on the writer's is slow in glibc's malloc).
const PATH_INLINE: usize = 112;

/// One key of one bucket, owned, so that a write can travel to the writer.
#[derive(Clone)]
pub(crate) struct Target {
    pub core: Arc<BucketCore>,
    pub branch: Branch,
    /// The path, then the key: inline up to [`PATH_INLINE`] bytes, else
    /// one allocation a write.
    path_and_key: smallvec::SmallVec<[u8; PATH_INLINE]>,
    path_len: usize,
}

impl Target {
    pub(crate) fn new(core: &Arc<BucketCore>, branch: &Branch, key: &[u8]) -> Result<Target> {
        let mut path_and_key = smallvec::SmallVec::with_capacity(branch.prefix().len() + 2 * key.len() + 8);
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

    pub(super) fn conflict(&self, what: &str) -> Error {
        self.name(Error::conflict(what.to_owned()))
    }

    pub(crate) fn entry(&self, cell: Cell) -> Entry<Raw> {
        entry_of(self.key(), cell)
    }

    /// Reads the key on `conn`, without renewal.
    pub(crate) fn read(&self, conn: &rusqlite::Connection, now: i64) -> Result<Option<Cell>> {
        storage::get(conn, self.core.id, self.path(), now).map_err(|e| self.name(e))
    }

    pub(super) fn check_version(&self, live: Option<&storage::CellMeta>, want: Option<Version>) -> Result<()> {
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
                let keeping = matches!(expiry, storage::SetExpiry::KeepLiveElse(_));
                let mut st = w.cell_set(keeping);
                let set = storage::set_inline(&mut st, self.core.id, self.path(), version, expiry, value, now);
                drop(st); // the case below may take it again
                if set? {
                    return Ok(Version(version));
                }
                // The row holds a spilled value (replace it and free the
                // spill, two changes, so in a savepoint of their own), or,
                // for a set that keeps a live key's expiry, is not live.
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
        self.put_row(w, expires, value, any.and_then(|m| m.spill))
    }

    /// Writes the key's row with the group's next version, replacing the
    /// value spilled in row `old_spill`, if any.
    fn put_row(
        &self,
        w: &mut WriteCtx<'_>,
        expires: Option<i64>,
        value: &Raw,
        old_spill: Option<i64>,
    ) -> Result<Version> {
        let version = w.next_version();
        storage::put(w.conn, self.core.id, self.path(), version, expires, value, old_spill)?;
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
            let version = self.put_row(w, expires, value, any.and_then(|m| m.spill))?;
            Ok(Created::Written {
                version,
                expires_at: expires.map(from_millis),
            })
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
