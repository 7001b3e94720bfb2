//! The guards against deadlock (KV-16, KV-11), decided here for every
//! language, each with one error kind (`Invalid`) and one message:
//!
//! 1. a write (or any call that waits for the writer) through a handle
//!    outside a transaction, from inside that transaction: it would wait for
//!    the writer the transaction holds ([`crate::inside_tx_error`]; a run of once,
//!    whose claim and answer are writes of their own, is
//!    [`crate::once_run_refused`]);
//! 2. a transaction opened inside a transaction of the same store
//!    ([`crate::nested_tx_error`]);
//! 3. a run of a key of once inside its own run ([`crate::rerun_error`]).
//!
//! What "inside" means is the caller's context, which only its language
//! knows: a Rust thread (marked by `tx` and [`crate::BindingTx::hold_thread`],
//! read here from the writer's thread marks), and for a binding whose work
//! moves between threads, a [`CallerContext`] it keeps in its own context
//! (a Python context variable, Node's `AsyncLocalStorage`, a Go
//! `context.Context`) and hands to every call that may wait for the writer.
//! A binding keeps the context; the decision and its text are here.
//!
//! A transaction or a run is of a store's file, by its directory: two
//! handles of one directory wait for the same write lock and the same claim.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::binding_tx::BindingTx;
use crate::error::{Result, inside_tx_error, nested_tx_error};
use crate::store::Store;

/// A run of once, as a caller's context records it: the name's id and the
/// key's path.
pub(crate) type RunMark = (i64, Vec<u8>);

/// A transaction a caller's context is inside, while it is open.
#[derive(Clone, Debug)]
struct HeldTx {
    dir: Arc<Path>,
    open: Arc<AtomicBool>,
    /// The caller, within the context, that opened it (an asyncio task),
    /// or 0 when the context is the caller.
    by: u64,
}

impl HeldTx {
    fn holds(&self, store: &Store) -> bool {
        self.open.load(Ordering::Acquire) && *self.dir == *store.dir()
    }
}

/// The transactions and runs of once a binding's caller is inside, as the
/// binding keeps them in the caller's context: it hands this to each call
/// that may wait for the writer, and the call is refused here when it
/// would wait for the caller itself. Empty by default (a caller inside
/// nothing); growing it gives a new context, so a context copied into a
/// task or a goroutine is that caller's from then on.
#[derive(Clone, Debug, Default)]
pub struct CallerContext {
    txs: Vec<HeldTx>,
    runs: Vec<(PathBuf, RunMark)>,
}

impl CallerContext {
    /// A context inside nothing.
    pub fn new() -> CallerContext {
        CallerContext::default()
    }

    /// This context inside `tx`, opened by the caller the binding calls
    /// `by` within the context (an asyncio task's id; 0 where the context
    /// is the caller). A nested transaction is refused only to the caller
    /// that opened the outer one: a task started inside a transaction may
    /// open its own once the first has ended.
    pub fn inside_tx(&self, tx: &BindingTx, by: u64) -> CallerContext {
        let mut c = self.clone();
        c.txs.retain(|t| t.open.load(Ordering::Acquire));
        c.txs.push(HeldTx {
            dir: Arc::from(tx.store().dir()),
            open: tx.open.clone(),
            by,
        });
        c
    }

    /// This context inside the run `mark` of `store` (see
    /// `Claim::inside_run`, which knows a claim's mark).
    pub(crate) fn with_run(&self, store: &Store, mark: RunMark) -> CallerContext {
        let mut c = self.clone();
        c.runs.push((store.dir().to_path_buf(), mark));
        c
    }

    /// Whether any transaction of `store` that this context is inside is open.
    fn holds_tx(&self, store: &Store) -> bool {
        self.txs.iter().any(|t| t.holds(store))
    }

    /// Whether this context is inside the run of `mark` on `store`.
    pub(crate) fn runs(&self, store: &Store, mark: &RunMark) -> bool {
        self.runs.iter().any(|(dir, m)| dir == store.dir() && m == mark)
    }
}

impl Store {
    /// Refuses, with [`crate::inside_tx_error`], a call that waits for this store's
    /// writer from inside one of its transactions: this thread's (Rust's
    /// `tx`, a binding's marked thread), or one of `caller`'s. `caller` is
    /// asked only while a binding's transaction of the store is open, so a
    /// write made with none open costs an atomic load.
    pub fn refuse_write(&self, caller: impl FnOnce() -> CallerContext) -> Result<()> {
        if self.holds_writer(caller) {
            return Err(inside_tx_error());
        }
        Ok(())
    }

    /// Refuses, with [`crate::nested_tx_error`], a transaction opened from inside
    /// another of this store: this thread's, or one `by` opened in `caller`
    /// (see [`CallerContext::inside_tx`]).
    pub fn refuse_tx(&self, caller: &CallerContext, by: u64) -> Result<()> {
        if self.inner.writer.held_here() || caller.txs.iter().any(|t| t.by == by && t.holds(self)) {
            return Err(nested_tx_error());
        }
        Ok(())
    }

    /// Whether the caller (this thread, or `caller`) is inside a
    /// transaction of this store.
    pub(crate) fn holds_writer(&self, caller: impl FnOnce() -> CallerContext) -> bool {
        let w = &self.inner.writer;
        w.held_here() || w.sessions_open() && caller().holds_tx(self)
    }
}
