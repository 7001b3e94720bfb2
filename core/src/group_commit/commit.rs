//! Committing one group: what each write sees while it runs ([`WriteCtx`],
//! its inner savepoints), each write's own savepoint, the commit, and the
//! answers. Separate from the writer thread's loop because a blocking
//! caller that commits on its own thread runs it too.

use std::sync::atomic::Ordering;
use std::time::Instant;

use rusqlite::Connection;

use crate::error::{Error, ErrorKind, Result};
use crate::storage::direct_statements::{DirectStatement, WriteConn};
use crate::storage::{self, sql};

use super::Shared;
use super::job::{Isolation, WriteOp};
use super::writer_thread::gather;

/// What a write sees while it runs: the connection inside the group's
/// transaction, the time, and the file's revision counter.
pub struct WriteCtx<'a> {
    pub(crate) conn: &'a Connection,
    /// The write connection, for its statement of the common `set`.
    write_conn: &'a WriteConn,
    /// The store's clock when the group started, in ms.
    pub(crate) now: i64,
    pub(super) rev: i64,
    pub(super) dirty: bool,
}

impl<'a> WriteCtx<'a> {
    pub(super) fn new(conn: &'a WriteConn, now: i64, rev: i64) -> WriteCtx<'a> {
        WriteCtx {
            conn,
            write_conn: conn,
            now,
            rev,
            dirty: false,
        }
    }

    /// A statement of the common `set` (`storage::sql::CELL_SET` or, when a
    /// live key keeps its expiry, `CELL_SET_KEEPING_EXPIRY`), prepared once
    /// for the connection's life.
    pub(crate) fn cell_set(&self, keeping_expiry: bool) -> std::cell::RefMut<'a, DirectStatement> {
        self.write_conn.cell_set(keeping_expiry)
    }

    /// A new revision of the file: the version of what this write writes.
    /// Versions never repeat because the counter lives in the file and
    /// moves inside the same transaction as the write.
    pub(crate) fn next_version(&mut self) -> i64 {
        self.rev += 1;
        self.dirty = true;
        self.rev
    }

    /// Runs `f` in a savepoint: when it fails, nothing it changed stays. For
    /// a write that runs without one ([`Isolation::OneStatement`]) and finds
    /// that it must change more than one row after all.
    pub(crate) fn savepoint<T>(&mut self, f: impl FnOnce(&mut WriteCtx<'a>) -> Result<T>) -> Result<T> {
        storage::run_tx_statement(self.conn, sql::INNER_SAVEPOINT)?;
        let out = f(self);
        if self.conn.is_autocommit() {
            return out; // SQLite ended the whole transaction (I/O failure)
        }
        let end = match out {
            Ok(_) => storage::run_tx_statement(self.conn, sql::INNER_RELEASE),
            Err(_) => storage::run_tx_statement(self.conn, sql::INNER_ROLLBACK)
                .and_then(|()| storage::run_tx_statement(self.conn, sql::INNER_RELEASE)),
        };
        end?;
        out
    }
}

/// Commits one group, inside the transaction the caller began, and answers
/// it; when it `gathers`, it takes an open burst's writes as they come.
/// Returns the writes that never ran because SQLite ended the transaction
/// under them; they go back in front of the queue.
pub(super) fn commit_group(
    conn: &WriteConn,
    shared: &Shared,
    mut group: Vec<Box<dyn WriteOp>>,
    gathers: bool,
) -> Vec<Box<dyn WriteOp>> {
    let (clock, stats) = (&shared.clock, &shared.stats);
    let started = Instant::now();
    let now = clock.now_millis();
    let rev = match conn.revisions().start(conn) {
        Ok(r) => r,
        Err(e) => {
            let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
            for op in group {
                op.finish(None, Some(e.clone()));
            }
            return Vec::new();
        }
    };
    let mut ctx = WriteCtx::new(conn, now, rev);
    let mut bytes = if gathers {
        group.iter().map(|op| op.weight()).sum()
    } else {
        0
    };
    let mut ran = 0;
    let mut aborted: Option<Error> = None;
    while ran < group.len() || (gathers && aborted.is_none() && gather(shared, &mut group, &mut bytes, started)) {
        let savepoint = group[ran].isolation() == Isolation::Savepoint;
        if savepoint && let Err(e) = storage::run_tx_statement(conn, sql::WRITE_SAVEPOINT) {
            aborted = Some(e.into());
            break;
        }
        let failed = group[ran].run(&mut ctx);
        ran += 1;
        if conn.is_autocommit() {
            // SQLite rolled the whole transaction back (a full disk, an I/O
            // error): nothing of this group is in the file.
            aborted = Some(Error::new(
                ErrorKind::Io,
                "SQLite rolled back the group's transaction after an I/O failure; nothing of it was written",
            ));
            break;
        }
        let end = match (savepoint, failed) {
            (false, _) => Ok(()),
            (true, true) => storage::run_tx_statement(conn, sql::WRITE_ROLLBACK)
                .and_then(|()| storage::run_tx_statement(conn, sql::WRITE_RELEASE)),
            (true, false) => storage::run_tx_statement(conn, sql::WRITE_RELEASE),
        };
        if let Err(e) = end {
            aborted = Some(e.into());
            break;
        }
    }
    let leftover = group.split_off(ran);
    let commit = match aborted {
        Some(e) => {
            if !conn.is_autocommit() {
                let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
            }
            // Nothing was written: answer each write that ran with the
            // sure failure, not OutcomeUnknown.
            for op in group {
                op.finish(None, Some(e.clone()));
            }
            return leftover;
        }
        None => {
            // A group raises the clock's mark once it is a second behind
            // (a sweep, which commits every minute, too), so the file
            // remembers how late it has been within a minute or so.
            let saved = conn.revisions().finish(conn, ctx.rev, ctx.dirty, clock.mark_millis());
            let commit = || {
                if stats.fail_next_commit.swap(false, Ordering::AcqRel) {
                    storage::run_tx_statement(conn, sql::ROLLBACK)?;
                    return Err(Error::new(ErrorKind::Io, "disk I/O error (injected by a test)"));
                }
                storage::run_tx_statement(conn, sql::COMMIT).map_err(Error::from)
            };
            match saved.and_then(|()| commit()) {
                Ok(()) => {
                    stats.groups.fetch_add(1, Ordering::Relaxed);
                    stats.writes.fetch_add(group.len() as u64, Ordering::Relaxed);
                    shared.last_group.store(group.len(), Ordering::Relaxed);
                    None
                }
                Err(e) => {
                    conn.revisions().forget();
                    if !conn.is_autocommit() {
                        let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
                    }
                    Some(e)
                }
            }
        }
    };
    for op in group {
        op.finish(commit.as_ref(), None);
    }
    leftover
}
