//! The statements of the point read and of the common set, called on
//! SQLite directly rather than through rusqlite's `Statement`.
//!
//! Why: rusqlite binds every blob `SQLITE_TRANSIENT` (SQLite copies it into
//! memory of its own: a malloc, a copy and a free per key and per value)
//! and converts each parameter and column through its generic `ToSql` and
//! `ValueRef` layers. On a point read of 10,000 keys that was 640 of its
//! 10.9k instructions, and 610 of a set's 10.6k. A [`DirectStatement`] binds
//! blobs `SQLITE_STATIC`, which is sound because [`DirectStatement::run`]
//! binds, steps, reads and resets in one call: the borrowed bytes outlive
//! every use SQLite makes of them.
//!
//! Everything else (a hundred rarer statements) stays on rusqlite.

use std::ffi::c_int;
use std::ptr::NonNull;

use rusqlite::Connection;
use rusqlite::ffi;

use super::revisions::Revisions;
use crate::error::{Error, Result};
use crate::raw::Raw;

/// A parameter of a [`DirectStatement`], borrowed for one run.
#[derive(Clone, Copy)]
pub enum Param<'a> {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// Bytes, bound without a copy.
    Blob(&'a [u8]),
}

impl<'a> Param<'a> {
    /// An integer or NULL.
    pub fn opt(v: Option<i64>) -> Param<'a> {
        v.map_or(Param::Null, Param::Int)
    }

    /// A value as its row holds it.
    pub fn raw(v: &'a Raw) -> Param<'a> {
        match v {
            Raw::Null => Param::Null,
            Raw::Int(i) => Param::Int(*i),
            Raw::Bytes(b) => Param::Blob(b),
        }
    }
}

/// One prepared statement owned outright, for the life of its connection.
///
/// Invariant: it is finalized before its connection closes. The owner
/// declares it before the connection, so that it drops first.
pub struct DirectStatement {
    stmt: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    params: usize,
}

// SAFETY: a statement may move between threads with its connection; it is
// used by one thread at a time, under the same lock as the connection.
unsafe impl Send for DirectStatement {}

impl DirectStatement {
    /// Prepares `sql` on `conn`, persistent (SQLite keeps it out of its
    /// lookaside memory, since it lives as long as the connection).
    ///
    /// # Safety
    /// The statement must be dropped before `conn` is closed.
    pub unsafe fn prepare(conn: &Connection, sql: &str) -> Result<DirectStatement> {
        // SAFETY: the handle is the open connection's; SQLite copies what it
        // needs of `sql` (length given, no NUL needed).
        unsafe {
            let db = conn.handle();
            let mut stmt = std::ptr::null_mut();
            let rc = ffi::sqlite3_prepare_v3(
                db,
                sql.as_ptr().cast(),
                sql.len() as c_int,
                ffi::SQLITE_PREPARE_PERSISTENT as _,
                &mut stmt,
                std::ptr::null_mut(),
            );
            let stmt = match (rc, NonNull::new(stmt)) {
                (ffi::SQLITE_OK, Some(stmt)) => stmt,
                (rc, other) => {
                    let e = failure(db, rc);
                    if let Some(s) = other {
                        ffi::sqlite3_finalize(s.as_ptr());
                    }
                    return Err(e);
                }
            };
            let params = ffi::sqlite3_bind_parameter_count(stmt.as_ptr()) as usize;
            Ok(DirectStatement { stmt, db, params })
        }
    }

    /// Binds `params` (every parameter, in order), steps once, hands the
    /// first row (if any) to `read`, and resets. Returns what `read` made
    /// and the rows the statement changed.
    pub fn run<T>(
        &mut self,
        params: &[Param<'_>],
        read: impl FnOnce(Option<&Row<'_>>) -> Result<T>,
    ) -> Result<(T, usize)> {
        assert_eq!(params.len(), self.params, "a direct statement binds all its parameters");
        let st = self.stmt.as_ptr();
        // SAFETY: `st` is this live statement, used by this thread alone
        // (the owner's lock). Blobs are bound SQLITE_STATIC: they are
        // borrowed for this call, and the statement is reset before it
        // returns, so SQLite never reads them after the borrow ends (the
        // next run binds every parameter again before stepping).
        unsafe {
            for (i, p) in params.iter().enumerate() {
                let i = i as c_int + 1;
                let rc = match *p {
                    Param::Null => ffi::sqlite3_bind_null(st, i),
                    Param::Int(v) => ffi::sqlite3_bind_int64(st, i, v),
                    Param::Blob(b) => {
                        ffi::sqlite3_bind_blob64(st, i, b.as_ptr().cast(), b.len() as u64, ffi::SQLITE_STATIC())
                    }
                };
                if rc != ffi::SQLITE_OK {
                    let e = failure(self.db, rc);
                    ffi::sqlite3_reset(st);
                    return Err(e);
                }
            }
            let rc = ffi::sqlite3_step(st);
            let out = match rc {
                ffi::SQLITE_ROW => read(Some(&Row {
                    st,
                    _life: std::marker::PhantomData,
                })),
                ffi::SQLITE_DONE => read(None),
                _ => {
                    // The reset returns the step's error with its extended code.
                    let rc = ffi::sqlite3_reset(st);
                    return Err(failure(
                        self.db,
                        if rc == ffi::SQLITE_OK { ffi::SQLITE_ERROR } else { rc },
                    ));
                }
            };
            let changed = if rc == ffi::SQLITE_DONE {
                ffi::sqlite3_changes64(self.db) as usize
            } else {
                0
            };
            ffi::sqlite3_reset(st);
            out.map(|v| (v, changed))
        }
    }
}

impl Drop for DirectStatement {
    fn drop(&mut self) {
        // SAFETY: the owner drops this before the connection (see the type).
        unsafe {
            ffi::sqlite3_finalize(self.stmt.as_ptr());
        }
    }
}

/// The row a [`DirectStatement`] stepped to, readable until its run returns.
pub struct Row<'a> {
    st: *mut ffi::sqlite3_stmt,
    _life: std::marker::PhantomData<&'a ()>,
}

impl Row<'_> {
    /// An integer column (NULL reads as `None`).
    pub fn opt_int(&self, col: c_int) -> Option<i64> {
        // SAFETY: the statement is on this row for the row's life.
        unsafe {
            match ffi::sqlite3_column_type(self.st, col) {
                ffi::SQLITE_NULL => None,
                _ => Some(ffi::sqlite3_column_int64(self.st, col)),
            }
        }
    }

    /// An integer column that is never NULL.
    pub fn int(&self, col: c_int) -> i64 {
        // SAFETY: as above.
        unsafe { ffi::sqlite3_column_int64(self.st, col) }
    }

    /// A value column as its row holds it; a REAL is damage.
    pub fn raw(&self, col: c_int) -> Result<Raw> {
        // SAFETY: as above; the blob pointer is read before any other call
        // on the column, and copied out.
        unsafe {
            match ffi::sqlite3_column_type(self.st, col) {
                ffi::SQLITE_NULL => Ok(Raw::Null),
                ffi::SQLITE_INTEGER => Ok(Raw::Int(ffi::sqlite3_column_int64(self.st, col))),
                ffi::SQLITE_BLOB | ffi::SQLITE_TEXT => {
                    let p = ffi::sqlite3_column_blob(self.st, col) as *const u8;
                    let n = ffi::sqlite3_column_bytes(self.st, col) as usize;
                    Ok(Raw::Bytes(if n == 0 {
                        Vec::new()
                    } else {
                        std::slice::from_raw_parts(p, n).to_vec()
                    }))
                }
                _ => Err(Error::corrupt("a value row holds a REAL")),
            }
        }
    }
}

/// The error of a failed call on `db`, as rusqlite would have made it, so
/// that one mapping (`From<rusqlite::Error>`) names its kind.
///
/// # Safety
/// `db` is an open connection, and the failed call was its last.
unsafe fn failure(db: *mut ffi::sqlite3, rc: c_int) -> Error {
    // SAFETY: per the function's contract.
    let msg = unsafe {
        let p = ffi::sqlite3_errmsg(db);
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
    };
    Error::from(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), msg))
}

/// The write connection, with the statements of the common `set`
/// ([`crate::storage::sql::CELL_SET`] and
/// [`crate::storage::sql::CELL_SET_KEEPING_EXPIRY`]) prepared once for its
/// life, and the block of revisions it gives versions from.
pub struct WriteConn {
    // Declared before `conn`, so dropped first (finalized before it closes).
    cell_set: std::cell::RefCell<DirectStatement>,
    cell_set_keeping: std::cell::RefCell<DirectStatement>,
    revisions: Revisions,
    conn: Connection,
}

impl WriteConn {
    /// Wraps the migrated write connection.
    pub fn new(conn: Connection) -> Result<WriteConn> {
        // SAFETY: the statement is a field declared before the connection.
        let cell_set = unsafe { DirectStatement::prepare(&conn, crate::storage::sql::CELL_SET)? };
        // SAFETY: as above.
        let keeping = unsafe { DirectStatement::prepare(&conn, crate::storage::sql::CELL_SET_KEEPING_EXPIRY)? };
        Ok(WriteConn {
            cell_set: std::cell::RefCell::new(cell_set),
            cell_set_keeping: std::cell::RefCell::new(keeping),
            revisions: Revisions::default(),
            conn,
        })
    }

    /// The common `set`'s statement: the one that lets a live key keep its
    /// expiry, or the one that gives it one.
    pub fn cell_set(&self, keeping_expiry: bool) -> std::cell::RefMut<'_, DirectStatement> {
        match keeping_expiry {
            true => self.cell_set_keeping.borrow_mut(),
            false => self.cell_set.borrow_mut(),
        }
    }

    /// The revisions this connection gives its writes' versions from.
    pub fn revisions(&self) -> &Revisions {
        &self.revisions
    }
}

impl std::ops::Deref for WriteConn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}
