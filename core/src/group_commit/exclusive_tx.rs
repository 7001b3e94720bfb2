//! The `tx` path: a transaction run alone on the caller's thread, holding
//! the writer's connection so that it and a group never interleave.
//! Separate because it commits outside any group.
//!
//! A panic in the caller's closure rolls the transaction back and gives the
//! connection and the write lock back before it goes on unwinding: a web
//! framework catches a handler's panic and serves the next request on the
//! same store, whose writes (and other processes' writes) must go on.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::error::{Error, Result};
use crate::storage::file::BUSY_TIMEOUT;
use crate::storage::{self, sql};

use super::commit::WriteCtx;
use super::{IN_TX, ON_WRITER, Writer, after_commit, lock};

impl Writer {
    /// Runs `work` alone in its own transaction, in this thread: the
    /// all-or-nothing `tx`. `Ok` commits; an error or a panic rolls
    /// everything back, and a panic then goes on to the caller.
    pub fn exclusive<T>(&self, work: impl FnOnce(&mut WriteCtx<'_>) -> Result<T>) -> Result<T> {
        if self.held_here() {
            return Err(crate::error::nested_tx_error());
        }
        if ON_WRITER.with(|w| w.get()) {
            return Err(Error::invalid(
                "a transaction was opened from inside a write's completion",
            ));
        }
        let guard = lock(&self.shared.conn);
        let conn = guard.as_ref().ok_or_else(Error::closed)?;
        let now = self.shared.clock.now_millis();
        lock(&self.shared.turns).begin(conn, BUSY_TIMEOUT)?;
        let mut ctx = WriteCtx::new(conn, now, 0);
        let mut panicked = None;
        let out = conn.revisions().start(conn).and_then(|rev| {
            ctx.rev = rev;
            /// Clears the thread's mark however `work` ends, a panic too.
            struct InTx;
            impl Drop for InTx {
                fn drop(&mut self) {
                    IN_TX.with(|t| t.set(0));
                }
            }
            IN_TX.with(|t| t.set(self.id()));
            let _in_tx = InTx;
            // The context holds no state a panic could leave half-changed
            // that the rollback below does not undo.
            catch_unwind(AssertUnwindSafe(|| work(&mut ctx))).unwrap_or_else(|p| {
                panicked = Some(p);
                Err(Error::invalid("the transaction's function panicked"))
            })
        });
        let out = out.and_then(|v| {
            if ctx.dirty {
                conn.revisions()
                    .finish(conn, ctx.rev, true, self.shared.clock.mark_millis())?;
            }
            Ok(v)
        });
        let out = match out {
            Ok(v) => match storage::run_tx_statement(conn, sql::COMMIT) {
                Ok(()) => Ok(v),
                Err(e) => {
                    conn.revisions().forget();
                    let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
                    Err(Error::outcome_unknown(&e.into()))
                }
            },
            Err(e) => {
                conn.revisions().forget();
                if !conn.is_autocommit() {
                    let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
                }
                Err(e)
            }
        };
        // Let go of the connection before yielding the write lock to other
        // processes: the group loop and the next `tx` of this process need
        // not wait out another process's turn.
        drop(guard);
        if out.is_ok() {
            after_commit(&self.shared);
        } else {
            lock(&self.shared.turns).ended();
        }
        if let Some(p) = panicked {
            resume_unwind(p);
        }
        out
    }
}

impl Writer {
    /// Runs `work` with this thread marked as inside a `tx` of this store,
    /// for a transaction the store runs elsewhere (on PostgreSQL), so that
    /// the guards refuse what they refuse inside a `tx` on kv.db.
    pub(crate) fn marked_in_tx<T>(&self, work: impl FnOnce() -> T) -> T {
        struct InTx(usize);
        impl Drop for InTx {
            fn drop(&mut self) {
                IN_TX.with(|t| t.set(self.0));
            }
        }
        let _restore = InTx(IN_TX.with(|t| t.replace(self.id())));
        work()
    }
}
