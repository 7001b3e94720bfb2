//! Opening kv.db: refuse what is not ours before anything is written, then
//! create or migrate the schema.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::sql;
use crate::error::{Error, ErrorKind, Result};

/// How long a connection waits for another process's writer or checkpoint.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Checks the first bytes of an existing file without opening it in SQLite,
/// so a file that is not a database is left exactly as it was.
pub(crate) fn check_header(path: &Path) -> Result<()> {
    let mut f = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::new(ErrorKind::Io, format!("{}: {e}", path.display()))),
    };
    let mut head = [0u8; 16];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    if n == 0 {
        return Ok(()); // an empty file: SQLite treats it as a new database
    }
    if n < 16 || &head != SQLITE_MAGIC {
        return Err(Error::corrupt(format!(
            "{} is not a SQLite database, so it is not a TinyStore file; it was left as it was",
            path.display()
        )));
    }
    // Pages are written whole, so a file that ends inside a page was cut
    // short, and SQLite would read the missing bytes as zeros. While a WAL
    // with content is beside it, a checkpoint may be copying pages in, so
    // only a file without one is judged here.
    let mut size = [0u8; 2];
    if f.read_exact(&mut size).is_ok() {
        let page = match u16::from_be_bytes(size) {
            1 => 65_536,
            p => u64::from(p),
        };
        let len = f.metadata()?.len();
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let wal_len = fs::metadata(Path::new(&wal)).map_or(0, |m| m.len());
        if page >= 512 && wal_len == 0 && len % page != 0 {
            return Err(Error::corrupt(format!(
                "{} is {len} bytes, not a whole number of its {page}-byte pages: it was cut short (truncated); it was left as it was",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Settings every connection of the store carries.
fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(64);
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // 2 MiB of page cache per connection: enough for the hot part of the tree.
    conn.pragma_update(None, "cache_size", -2048)?;
    // The planner's stability guarantee. Without it SQLite marks some bound
    // parameters "re-prepare when rebound", and the statement cache's
    // clear_bindings then expires the statement, so every cached statement
    // was parsed again at each use (point reads measured 6x slower).
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// Opens the write connection of `path`, creating or migrating the schema.
/// A file of another application or a newer format is refused untouched.
pub fn open_writer(path: &Path) -> Result<Connection> {
    check_header(path)?;
    let existed = path.exists();
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| opened(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    if existed {
        // Read-only checks first: nothing is written to a file that is not ours.
        check_owner(&conn, path)?;
    }
    // Switching a new file to WAL takes its exclusive lock, and SQLite
    // answers a connection that would deadlock with another doing the same
    // with SQLITE_BUSY at once, without its busy handler: ask again.
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mode: String = loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            other => break other.map_err(|e| opened(path, e))?,
        }
    };
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "{}: the file system does not allow WAL (journal_mode is {mode})",
                path.display()
            ),
        ));
    }
    configure(&conn)?;
    migrate(&conn, path)?;
    Ok(conn)
}

/// The clock's high-water mark, read at open: an error names the file,
/// since a damaged page here refuses the whole store.
pub fn clock_mark(conn: &Connection, path: &Path) -> Result<i64> {
    conn.query_row(sql::CLOCK_GET, [], |r| r.get(0))
        .map_err(|e| opened(path, e))
}

/// Opens a reader: read-only statements, no schema work, and up to
/// `mmap_size` bytes of the file read through a memory map. With
/// `keep_locks`, through the VFS that keeps its read-mark lock between
/// reads (`read_locks`), where that VFS could be registered.
pub fn open_reader(path: &Path, mmap_size: u64, keep_locks: bool) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if keep_locks && crate::read_locks::vfs::register().is_ok() {
        Connection::open_with_flags_and_vfs(path, flags, crate::read_locks::vfs::NAME)
    } else {
        Connection::open_with_flags(path, flags)
    }
    .map_err(|e| opened(path, e))?;
    configure(&conn)?;
    conn.pragma_update(None, "query_only", true)?;
    if mmap_size > 0 {
        // SQLite caps it at its compile-time limit (2 GiB) without an error.
        conn.pragma_update(None, "mmap_size", mmap_size.min(i64::MAX as u64) as i64)?;
    }
    Ok(conn)
}

fn opened(path: &Path, e: rusqlite::Error) -> Error {
    let err = Error::from(e);
    Error::new(err.kind(), format!("{}: {}", path.display(), err.message()))
}

/// Refuses a database that is not ours, or is of a newer format.
pub(crate) fn check_owner(conn: &Connection, path: &Path) -> Result<()> {
    if conn.is_autocommit() {
        // The marks must come from one state of the file: another process
        // may be creating it this moment, and an id read before its commit
        // beside tables read after it looks like another application's file.
        conn.execute_batch("BEGIN").map_err(|e| opened(path, e))?;
        let out = check_owner(conn, path);
        // Only reads ran: ending the transaction keeps nothing either way.
        let _ = conn.execute_batch("COMMIT");
        return out;
    }
    let app: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(|e| opened(path, e))?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| opened(path, e))?;
    let tables: i64 = conn
        .query_row(sql::TABLE_COUNT, [], |r| r.get(0))
        .map_err(|e| opened(path, e))?;
    if app == 0 && version == 0 && tables == 0 {
        return Ok(()); // an empty database: ours to create
    }
    if app != sql::APPLICATION_ID {
        return Err(Error::invalid(format!(
            "{} belongs to another application (application_id {app:#x}, not TinyStore's {:#x}); it was left as it was",
            path.display(),
            sql::APPLICATION_ID
        )));
    }
    if version > sql::FORMAT_VERSION {
        return Err(Error::invalid(format!(
            "{} has format version {version}, newer than this build reads ({}); upgrade TinyStore to open it. It was left as it was",
            path.display(),
            sql::FORMAT_VERSION
        )));
    }
    Ok(())
}

/// Runs the migrations this file lacks, in one transaction. Two processes
/// creating one file at once serialize on `BEGIN IMMEDIATE`; the second
/// finds the work done.
fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let run = || -> Result<()> {
        check_owner(conn, path)?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        for (i, step) in sql::MIGRATIONS.iter().enumerate().skip(version as usize) {
            conn.execute_batch(step)?;
            conn.pragma_update(None, "user_version", i as i64 + 1)?;
        }
        if version == 0 {
            conn.pragma_update(None, "application_id", sql::APPLICATION_ID)?;
        }
        Ok(())
    };
    match run() {
        Ok(()) => conn.execute_batch("COMMIT").map_err(Error::from),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Opens kv.db read-only, for tools that look at a file an application may
/// have open: never creates, migrates or writes anything.
pub fn open_inspector(path: &Path) -> Result<Connection> {
    if !path.exists() {
        return Err(Error::invalid(format!(
            "there is no store at {}: {} does not exist",
            path.parent().unwrap_or(path).display(),
            path.display()
        )));
    }
    check_header(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| opened(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    check_owner(&conn, path)?;
    Ok(conn)
}
