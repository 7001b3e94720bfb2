//! Moving a store: [`export`] reads every name and live key of a store (a
//! directory's `kv.db`, or a PostgreSQL location), and [`import`] writes
//! them into an empty store of either kind, keeping each key's value,
//! version and expiry. What `tinystore kv copy SRC DST` runs.
//!
//! The rules of a copy live here, above both backends:
//! - every name is carried with its kind (KV-2), those without a live key
//!   too, so that the target refuses the same kinds the source did;
//! - a key expired, or hidden by a clear, is not carried: it is already
//!   absent to every reader;
//! - the target's versions go on above the top of the source's (its
//!   revision, or its sequence), not only above the versions copied, so
//!   that no version a caller saw on the source, of a key since deleted
//!   included, is given again on the target (KV-10);
//! - a limit store's count of entries is written as the number of entries
//!   carried, since the expired ones it counted stay behind;
//! - what a running store holds only for itself is not carried: the runs
//!   of `once` in progress (their answers are carried once kept), and, on
//!   `kv.db`, what the limits table beside it has not yet written to the
//!   file (about a second of rate-limit and `flush_every` counter changes).
//!   Stop the applications before a copy.
//!
//! The export reads one snapshot of the source; the import writes in one
//! transaction, into a store that holds no name (checked again inside the
//! transaction), so that a refused or failed copy writes nothing. The
//! export is held in memory: about the size of the values and paths.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::clock::to_millis;
use crate::error::{Error, Result};
use crate::postgres::{self, PgStore};
use crate::storage::{self, Kind, ScanRow, file};
use crate::store::FILE_NAME;

/// Everything a copy carries of a store, read in one snapshot of it.
pub struct Export {
    source: String,
    names: Vec<Exported>,
    top_version: i64,
}

/// One name of an export: its kind and live rows, in path order.
struct Exported {
    name: String,
    kind: String,
    rows: Vec<ScanRow>,
}

/// A name a copy carried, and how many live keys it held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopiedName {
    /// The handle's name.
    pub name: String,
    /// Its kind: `values`, `counters`, `rate_limit`, `quota`, `once`, `config` or `limit_store`.
    pub kind: String,
    /// The live keys carried.
    pub keys: usize,
}

/// What a copy wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Copied {
    /// The source, as messages name it (never a password).
    pub from: String,
    /// The target, likewise.
    pub to: String,
    /// Every name, by name.
    pub names: Vec<CopiedName>,
    /// The top of the source's versions: every later write to the target
    /// takes a version above it.
    pub top_version: i64,
}

impl Export {
    /// The source, as messages name it (never a password).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Every name with its kind and the live keys read, by name.
    pub fn names(&self) -> Vec<CopiedName> {
        self.names
            .iter()
            .map(|n| CopiedName {
                name: n.name.clone(),
                kind: n.kind.clone(),
                keys: n.rows.len(),
            })
            .collect()
    }

    /// The top of the source's versions: at least every version it gave.
    pub fn top_version(&self) -> i64 {
        self.top_version
    }
}

/// Where a copy reads or writes.
enum Place<'a> {
    Dir(&'a Path),
    Postgres(&'a str),
}

fn place(location: &Path) -> Place<'_> {
    match location.to_str().filter(|l| postgres::is_postgres(l)) {
        Some(url) => Place::Postgres(url),
        None => Place::Dir(location),
    }
}

fn shown(location: &Path) -> String {
    match place(location) {
        Place::Postgres(url) => postgres::hide_password(url),
        Place::Dir(dir) => dir.display().to_string(),
    }
}

/// Reads every name and live key of the store at `location` (a directory,
/// or `postgres://...`), writing nothing: a store that is not there is an
/// error that says so, and is not created.
pub fn export(location: impl AsRef<Path>) -> Result<Export> {
    let location = location.as_ref();
    let (names, top_version) = match place(location) {
        Place::Dir(dir) => export_file(&dir.join(FILE_NAME))?,
        Place::Postgres(url) => {
            let pg = PgStore::open_existing(url)?;
            let out = postgres::copy::export(&pg)?;
            let names = out
                .names
                .into_iter()
                .map(|(name, kind, rows)| Exported { name, kind, rows })
                .collect();
            (names, out.top_version)
        }
    };
    let mut names: Vec<Exported> = names;
    let mut top_version = top_version;
    for n in &mut names {
        if n.kind == Kind::LimitStore.as_str() {
            recount(&mut n.rows);
        }
        top_version = n.rows.iter().map(|r| r.cell.version).fold(top_version, i64::max);
    }
    Ok(Export {
        source: shown(location),
        names,
        top_version,
    })
}

fn export_file(file: &Path) -> Result<(Vec<Exported>, i64)> {
    let conn = file::open_inspector(file)?;
    storage::in_snapshot(&conn, || {
        // The clock a store opening the file would start at, at least.
        let now = to_millis(SystemTime::now()).max(file::clock_mark(&conn, file)?);
        let top = storage::revision(&conn)?;
        let mut out = Vec::new();
        for (id, name, kind) in storage::list_buckets(&conn)? {
            let mut rows: Vec<ScanRow> = Vec::new();
            loop {
                let after = rows.last().map_or(Vec::new(), |r| r.path.clone());
                let (page, more) = storage::scan(&conn, id, &after, &[0x03], now, 10_000, usize::MAX)?;
                rows.extend(page);
                if !more {
                    break;
                }
            }
            out.push(Exported { name, kind, rows });
        }
        Ok((out, top))
    })
}

/// A limit store's count row says how many entry rows it has, expired ones
/// included until they are swept; the copy carries the live ones only.
fn recount(rows: &mut [ScanRow]) {
    let entries = rows.len().saturating_sub(1);
    if let Some(count) = rows.iter_mut().find(|r| r.path == crate::limit_count::count_path()) {
        count.cell.value = crate::raw::Raw::Int(entries as i64);
    }
}

/// The refusal of a target that holds names already.
fn not_empty(target: &str, count: i64, some: &[String]) -> Error {
    let more = if count as usize > some.len() { ", ..." } else { "" };
    Error::invalid(format!(
        "the target {target} is not empty: it holds {count} name{} ({}{more}); a copy goes only into an empty \
         store, and nothing was written",
        if count == 1 { "" } else { "s" },
        some.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
    ))
}

/// Writes `export` into the store at `location` (a directory, created if
/// missing, or `postgres://...`), which must hold no name: a target that
/// does is refused with an error naming it, and nothing is written.
pub fn import(location: impl AsRef<Path>, export: &Export) -> Result<Copied> {
    let location = location.as_ref();
    let to = shown(location);
    match place(location) {
        Place::Dir(dir) => import_file(dir, &to, export)?,
        Place::Postgres(url) => import_postgres(url, &to, export)?,
    }
    Ok(Copied {
        from: export.source.clone(),
        to,
        names: export.names(),
        top_version: export.top_version,
    })
}

fn import_file(dir: &Path, to: &str, export: &Export) -> Result<()> {
    let file: PathBuf = dir.join(FILE_NAME);
    // Looked at read-only first, so that a refused target is not even
    // migrated; and again inside the write, for a store opened meanwhile.
    if file.exists() {
        let conn = file::open_inspector(&file)?;
        let names = storage::list_buckets(&conn)?;
        if !names.is_empty() {
            let some: Vec<String> = names.into_iter().take(4).map(|(_, n, _)| n).collect();
            let count = storage::stats(&conn)?.3 as i64;
            return Err(not_empty(to, count, &some));
        }
    }
    crate::store::check_dir(dir)?;
    crate::store::create_private(dir, 0o600)?;
    let conn = file::open_writer(&file)?;
    storage::run_tx_statement(&conn, storage::sql::BEGIN_WRITE)?;
    let write = || -> Result<()> {
        let names = storage::list_buckets(&conn)?;
        if !names.is_empty() {
            let some: Vec<String> = names.iter().take(4).map(|(_, n, _)| n.clone()).collect();
            return Err(not_empty(to, names.len() as i64, &some));
        }
        for n in &export.names {
            let kind = Kind::parse(&n.kind)
                .ok_or_else(|| Error::corrupt(format!("the name {:?} holds an unknown kind {:?}", n.name, n.kind)))?;
            let id = storage::register_bucket(&conn, &n.name, kind)?;
            for r in &n.rows {
                storage::put(&conn, id, &r.path, r.cell.version, r.cell.expires, &r.cell.value, None)?;
            }
        }
        storage::raise_revision(&conn, export.top_version)
    };
    match write() {
        Ok(()) => Ok(storage::run_tx_statement(&conn, storage::sql::COMMIT)?),
        Err(e) => {
            let _ = storage::run_tx_statement(&conn, storage::sql::ROLLBACK);
            Err(e)
        }
    }
}

fn import_postgres(url: &str, to: &str, export: &Export) -> Result<()> {
    for n in &export.names {
        Kind::parse(&n.kind)
            .ok_or_else(|| Error::corrupt(format!("the name {:?} holds an unknown kind {:?}", n.name, n.kind)))?;
    }
    // Looked at without creating anything first, so that a refused target
    // is not even migrated. A database without a store (or at a newer
    // schema, which the open below refuses) answers `Invalid` here.
    match PgStore::open_existing(url) {
        Ok(pg) => {
            let (count, some) = postgres::copy::names_held(&pg)?;
            if count > 0 {
                return Err(not_empty(to, count, &some));
            }
        }
        Err(e) if e.kind() == crate::ErrorKind::Invalid => {}
        Err(e) => return Err(e),
    }
    let pg = PgStore::open(url)?;
    let names: Vec<(&str, &str, &[ScanRow])> = export
        .names
        .iter()
        .map(|n| (n.name.as_str(), n.kind.as_str(), n.rows.as_slice()))
        .collect();
    postgres::copy::import(&pg, &names, export.top_version, |count, some| {
        not_empty(to, count, &some)
    })
}

/// Copies the store at `from` into the empty store at `to` (each a
/// directory or a `postgres://` location): [`export`], then [`import`].
pub fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<Copied> {
    let export = export(from)?;
    import(to, &export)
}
