//! Reading a store without opening it for writing: what the `tinystore`
//! command shows. An inspector never creates, migrates, renews or writes, so
//! it can look at a kv.db that an application has open without blocking it.
//! A PostgreSQL location (`postgres://...`) is read the same way, with
//! plain `SELECT`s on the database's clock.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::Connection;

use crate::clock::{from_millis, to_millis};
use crate::error::{Error, Result};
use crate::key::{Branch, Key, split_path};
use crate::raw::Raw;
use crate::storage::{self, file};
use crate::store::FILE_NAME;

/// A read-only view of a store's file, or of its PostgreSQL database.
pub struct Inspector {
    source: Source,
    /// The file, or the location without its password: for messages.
    file: PathBuf,
}

/// Where an inspector reads.
enum Source {
    File(Connection),
    Postgres(crate::postgres::PgStore),
}

/// A name in the file: its kind and how many rows it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameInfo {
    /// The handle's name.
    pub name: String,
    /// Its kind: `values`, `counters`, `rate_limit`, `quota`, `once`, `config` or `limit_store`.
    pub kind: String,
    /// Its rows, expired ones included until maintenance deletes them.
    pub rows: usize,
}

/// One live key of a listing, with its owners.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The owners of the key's branch, outermost first.
    pub owners: Vec<Key>,
    /// The key.
    pub key: Key,
    /// The value as its row keeps it.
    pub value: Raw,
    /// The revision that wrote it.
    pub version: i64,
    /// When it expires.
    pub expires_at: Option<SystemTime>,
}

/// The size and rows of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStats {
    /// Bytes of kv.db.
    pub file_bytes: u64,
    /// Bytes of kv.db-wal, not yet checkpointed into the file.
    pub wal_bytes: u64,
    /// Rows of every handle, expired ones included.
    pub rows: usize,
    /// Values over 512 bytes, kept in rows of their own.
    pub spilled: usize,
    /// Clears of large branches still being deleted.
    pub clear_marks: usize,
    /// Names of handles.
    pub names: usize,
    /// Rows expired and waiting for maintenance.
    pub expired_waiting: usize,
}

impl Inspector {
    /// Opens the store in `dir` read-only, or the store at a PostgreSQL
    /// location (`postgres://...`). A missing store is an error that says
    /// so; nothing is created.
    pub fn open(dir: impl AsRef<Path>) -> Result<Inspector> {
        if let Some(location) = dir.as_ref().to_str().filter(|l| crate::postgres::is_postgres(l)) {
            let pg = crate::postgres::PgStore::open_existing(location)?;
            return Ok(Inspector {
                source: Source::Postgres(pg),
                file: PathBuf::from(crate::postgres::hide_password(location)),
            });
        }
        let file = dir.as_ref().join(FILE_NAME);
        let conn = file::open_inspector(&file)?;
        Ok(Inspector {
            source: Source::File(conn),
            file,
        })
    }

    /// Every name with its kind and rows, by name.
    pub fn names(&self) -> Result<Vec<NameInfo>> {
        let conn = match &self.source {
            Source::File(conn) => conn,
            Source::Postgres(pg) => {
                let all = pg.block(async |pool, _| crate::postgres::inspect::names(pool).await)?;
                return Ok(all
                    .into_iter()
                    .map(|(_, name, kind, rows)| NameInfo {
                        name,
                        kind,
                        rows: rows as usize,
                    })
                    .collect());
            }
        };
        storage::list_buckets(conn)?
            .into_iter()
            .map(|(id, name, kind)| {
                Ok(NameInfo {
                    rows: storage::bucket_rows(conn, id)?,
                    name,
                    kind,
                })
            })
            .collect()
    }

    fn find(&self, name: &str) -> Result<(i64, String)> {
        let found = match &self.source {
            Source::File(conn) => storage::find_bucket(conn, name)?,
            Source::Postgres(pg) => pg
                .block(async |pool, _| crate::postgres::inspect::names(pool).await)?
                .into_iter()
                .find(|(_, n, _, _)| n == name)
                .map(|(id, _, kind, _)| (id, kind)),
        };
        found.ok_or_else(|| {
            Error::invalid(format!("there is no bucket named {name:?} in {}", self.file.display())).in_bucket(name)
        })
    }

    /// Live keys of a branch and every branch under it, in path order, from
    /// after `after` (a key's full path, as the second value this returns
    /// gives), at most `limit`. Returns the rows and the path to continue
    /// after.
    pub fn list(
        &self,
        name: &str,
        owners: &[Vec<u8>],
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<(Vec<Row>, Option<Vec<u8>>)> {
        let (id, kind) = self.find(name)?;
        let mut branch = Branch::root();
        for o in owners {
            branch = branch.child(o);
        }
        branch.check(name)?;
        let (lo, hi) = branch.subtree();
        let after = after.unwrap_or_else(|| lo[..lo.len() - 1].to_vec());
        let (rows, more) = match &self.source {
            Source::File(conn) => {
                storage::scan(conn, id, &after, &hi, to_millis(SystemTime::now()), limit, usize::MAX)?
            }
            // A limit store's rows are in tables of their own there.
            Source::Postgres(pg) if kind == crate::storage::Kind::LimitStore.as_str() => {
                pg.block(async |pool, _| crate::postgres::inspect::limit_scan(pool, id, (&after, &hi), limit).await)?
            }
            Source::Postgres(pg) => pg.block(async |pool, _| {
                crate::postgres::cells::scan(pool, id, (&after, &hi), None, limit, usize::MAX).await
            })?,
        };
        let next = if more {
            rows.last().map(|r| r.path.clone())
        } else {
            None
        };
        let rows = rows
            .into_iter()
            .map(|r| {
                let (owners, key) = split_path(&r.path)?;
                Ok(Row {
                    owners: owners.into_iter().map(Key).collect(),
                    key,
                    value: r.cell.value,
                    version: r.cell.version,
                    expires_at: r.cell.expires.map(from_millis),
                })
            })
            .collect::<Result<_>>()?;
        Ok((rows, next))
    }

    /// One live key.
    pub fn get(&self, name: &str, owners: &[Vec<u8>], key: &[u8]) -> Result<Option<Row>> {
        let (id, _) = self.find(name)?;
        let mut branch = Branch::root();
        for o in owners {
            branch = branch.child(o);
        }
        let path = branch.path(name, key)?;
        let found = match &self.source {
            Source::File(conn) => storage::get(conn, id, &path, to_millis(SystemTime::now()))?,
            Source::Postgres(pg) => pg
                .block(async |pool, _| crate::postgres::cells::get(pool, id, &path, None).await)?
                .map(|(cell, _)| cell),
        };
        Ok(found.map(|c| Row {
            owners: owners.iter().cloned().map(Key).collect(),
            key: Key(key.to_vec()),
            value: c.value,
            version: c.version,
            expires_at: c.expires.map(from_millis),
        }))
    }

    /// The file's size and rows. On PostgreSQL, `file_bytes` is the size
    /// of the store's tables and indexes, and there is no WAL of its own,
    /// no spilled value and no clear mark.
    pub fn stats(&self) -> Result<FileStats> {
        let conn = match &self.source {
            Source::File(conn) => conn,
            Source::Postgres(pg) => {
                let c = pg.block(async |pool, _| crate::postgres::inspect::counts(pool).await)?;
                return Ok(FileStats {
                    file_bytes: c.bytes as u64,
                    wal_bytes: 0,
                    rows: c.rows as usize,
                    spilled: 0,
                    clear_marks: 0,
                    names: c.names as usize,
                    expired_waiting: c.expired as usize,
                });
            }
        };
        let (rows, spilled, clear_marks, names) = storage::stats(conn)?;
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = self.file.clone().into_os_string();
        wal.push("-wal");
        Ok(FileStats {
            file_bytes: size(&self.file),
            wal_bytes: size(Path::new(&wal)),
            rows,
            spilled,
            clear_marks,
            names,
            expired_waiting: storage::count_expired(conn, to_millis(SystemTime::now()))?,
        })
    }
}
