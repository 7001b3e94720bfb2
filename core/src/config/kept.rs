//! Updates kept in kv.db, field by field: the rows of a config's bucket.
//!
//! A config named `app` is a bucket `app` of kind `config`. Under the
//! branch `fields`, the key is a field's path and the value its JSON, at
//! the version (file revision) that wrote it. The root key `stamp` is
//! rewritten by every update and reset, so a handle in another process
//! learns of a change by reading one row. On PostgreSQL the rows are the
//! same, written in one transaction, and a handle on another server learns
//! of a change the same way.

use std::collections::BTreeMap;

use serde_json::Value;

use super::fields::{MAX_FIELD_VALUE, MAX_KEPT};
use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::key::Branch;
use crate::raw::Raw;
use crate::storage::Kind;
use crate::store::Store;
use crate::values::{BucketCore, RawBucket, Target, WriteOptions};

/// The key every change rewrites.
const STAMP: &[u8] = b"stamp";
/// The branch of the fields' rows.
const FIELDS: &[u8] = b"fields";

/// One kept row, as read: its JSON (or why it does not read) and version.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeptRow {
    pub value: std::result::Result<Value, String>,
    pub version: i64,
    pub bytes: usize,
}

/// Every kept row of one config, and the stamp's version when read.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct KeptRows {
    pub stamp: Option<i64>,
    pub rows: BTreeMap<String, KeptRow>,
}

/// A change to one field: a new value, or back to the layers.
#[derive(Clone, Debug)]
pub(crate) enum Change {
    Set(String, Value),
    Reset(String),
}

/// The rows of one config's bucket.
pub(crate) struct KeptStore {
    bucket: RawBucket,
}

impl KeptStore {
    /// Opens (registering if need be) the bucket `name` as a config.
    pub(crate) fn open(store: &Store, name: &str) -> Result<KeptStore> {
        let core = BucketCore::open(store, name, Kind::Config, None, None)?;
        Ok(KeptStore {
            bucket: RawBucket {
                core,
                branch: Branch::root(),
            },
        })
    }

    pub(crate) fn store(&self) -> &Store {
        &self.bucket.core.store
    }

    /// The stamp's version: one row, read to learn whether anything changed.
    pub(crate) fn stamp(&self) -> Result<Option<i64>> {
        Ok(self.bucket.entry(STAMP)?.map(|e| e.version.get()))
    }

    /// Every kept row.
    pub(crate) fn read(&self) -> Result<KeptRows> {
        let stamp = self.stamp()?;
        let mut rows = BTreeMap::new();
        for entry in self.bucket.under(FIELDS).all() {
            let entry = entry?;
            let Some(path) = entry.key.as_str().map(str::to_owned) else {
                continue;
            };
            let (value, bytes) = match entry.value.as_json() {
                Ok(b) => (
                    serde_json::from_slice(b).map_err(|e| format!("the kept JSON does not read: {e}")),
                    b.len(),
                ),
                Err(e) => (Err(format!("the kept row is not JSON: {}", e.message())), 0),
            };
            rows.insert(
                path,
                KeptRow {
                    value,
                    version: entry.version.get(),
                    bytes,
                },
            );
        }
        Ok(KeptRows { stamp, rows })
    }

    /// Writes `changes` in one write, with the stamp, all or nothing.
    /// `kept` is what the file held when the changes were checked, for the
    /// bound on a config's kept bytes.
    pub(crate) fn write(&self, kept: &KeptRows, changes: Vec<Change>) -> Result<()> {
        let name = self.bucket.core.name.clone();
        let mut total: usize = kept.rows.values().map(|r| r.bytes).sum();
        let mut ops = Vec::with_capacity(changes.len());
        let fields = self.bucket.branch.child(FIELDS);
        for change in changes {
            let path = match &change {
                Change::Set(p, _) | Change::Reset(p) => p.clone(),
            };
            let target = Target::new(&self.bucket.core, &fields, path.as_bytes())?;
            total -= kept.rows.get(&path).map_or(0, |r| r.bytes);
            match change {
                Change::Set(_, v) => {
                    let json = serde_json::to_vec(&v).map_err(|e| Error::invalid(e.to_string()))?;
                    if json.len() > MAX_FIELD_VALUE {
                        return Err(Error::limit(format!(
                            "config field {path:?} would keep {} bytes of JSON, over {MAX_FIELD_VALUE}",
                            json.len()
                        ))
                        .in_bucket(&name));
                    }
                    total += json.len();
                    ops.push((target, Some(Raw::json(json))));
                }
                Change::Reset(_) => ops.push((target, None)),
            }
        }
        if total > MAX_KEPT {
            return Err(Error::limit(format!(
                "the config would keep {total} bytes of fields, over {MAX_KEPT}"
            ))
            .in_bucket(&name));
        }
        let stamp = Target::new(&self.bucket.core, &self.bucket.branch, STAMP)?;
        if let Some(pg) = self.store().inner.postgres() {
            return write_on_postgres(pg, &self.bucket.core, ops, stamp);
        }
        let weight = ops.iter().map(|(_, r)| r.as_ref().map_or(0, Raw::encoded_len)).sum();
        let writer = &self.bucket.core.store.inner.writer;
        writer.call(weight, move |w: &mut WriteCtx<'_>| {
            for (target, raw) in &ops {
                match raw {
                    Some(raw) => {
                        target.op_set(w, raw, WriteOptions::default())?;
                    }
                    None => {
                        target.op_delete(w, None)?;
                    }
                }
            }
            stamp.op_set(w, &Raw::int(0), WriteOptions::default())?;
            Ok(())
        })
    }
}

/// [`KeptStore::write`] on PostgreSQL: the same rows, each written as a
/// `set` of the bucket writes it, in one transaction.
fn write_on_postgres(
    pg: &crate::postgres::PgStore,
    core: &BucketCore,
    ops: Vec<(Target, Option<Raw>)>,
    stamp: Target,
) -> Result<()> {
    use crate::values::on_postgres::{clock_of, set_expiry};
    let mut rows: Vec<(Vec<u8>, Option<Raw>)> = ops.into_iter().map(|(t, raw)| (t.path().to_vec(), raw)).collect();
    rows.push((stamp.path().to_vec(), Some(Raw::int(0))));
    let (expiry, now) = (set_expiry(core, None), clock_of(core));
    pg.block(async |pool, sent| crate::postgres::kept::write_rows(pool, sent, core.id, &rows, expiry, now).await)
        .map_err(|e| e.in_bucket(&core.name))
}
