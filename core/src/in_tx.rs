//! What a call runs on inside a transaction, on either backend, and what
//! may join one: a handle of the transaction's own store, and not the kinds
//! whose state is in memory. The refusals here are the one text of each
//! for every language (KV-16).

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::group_commit::WriteCtx;
use crate::postgres::tx::PgTx;
use crate::storage::Cell;
use crate::store::Store;
use crate::values::{Target, pg_in_tx};

/// What a call of a durable kind runs on inside a transaction.
pub(crate) enum InTx<'w, 'c> {
    /// The write context of kv.db's transaction.
    Sqlite(&'w mut WriteCtx<'c>),
    /// The PostgreSQL transaction, on its own connection.
    Postgres(&'w PgTx),
}

impl InTx<'_, '_> {
    /// The time the transaction judges keys on (ms).
    pub(crate) fn now(&self) -> i64 {
        match self {
            InTx::Sqlite(w) => w.now,
            InTx::Postgres(p) => p.now,
        }
    }

    /// The key's live row as the transaction sees it.
    pub(crate) fn read(&mut self, t: &Target) -> Result<Option<Cell>> {
        match self {
            InTx::Sqlite(w) => t.read(w.conn, w.now),
            InTx::Postgres(p) => p.get(t.core.id, t.path()).map_err(|e| t.name(e)),
        }
    }

    /// Deletes the key; says whether a live one was there.
    pub(crate) fn delete(self, t: &Target) -> Result<bool> {
        match self {
            InTx::Sqlite(w) => t.op_delete(w, None),
            InTx::Postgres(p) => pg_in_tx::delete(p, t, None),
        }
    }
}

/// The refusal of `flush_every` counters inside a transaction.
pub fn flush_every_refused(name: &str) -> Error {
    Error::invalid(
        "counters with flush_every keep their counts in memory and write them every period, \
         so they cannot join a transaction; open them without flush_every to count inside one",
    )
    .in_bucket(name)
}

/// The refusal of a rate limit inside a transaction.
pub fn rate_limit_refused(name: &str) -> Error {
    Error::invalid(
        "a rate limit keeps its state in memory and writes it every second, so it cannot join a \
         transaction; call it outside the transaction (a quota joins one)",
    )
    .in_bucket(name)
}

/// The refusal of a run of `once` inside a transaction of the same store.
pub fn once_run_refused() -> Error {
    Error::invalid(
        "once.run cannot run inside a transaction: it claims its key and keeps its answer in writes \
         of its own, which would wait for the transaction; run it outside (get and delete join one)",
    )
}

/// The refusal of the handle `name` of another store in a transaction or
/// a view, at `with` or at a call: one text for every language.
pub fn other_store_refused(name: &str) -> Error {
    Error::invalid("this handle is of another store: a transaction or a view takes the handles of its own store")
        .in_bucket(name)
}

/// `Invalid` unless the handle `name` belongs to `scope`'s store.
pub(crate) fn same_store(scope: &Store, handle: &Store, name: &str) -> Result<()> {
    if Arc::ptr_eq(&scope.inner, &handle.inner) {
        Ok(())
    } else {
        Err(other_store_refused(name))
    }
}

/// The refusal of the call `call` of the handle `name` in a transaction or
/// a view, for a call that runs on the store only (a counters' `clear`).
pub fn store_only_refused(call: &str, name: &str) -> Error {
    Error::invalid(format!("{call} runs on the store, not in a transaction or view")).in_bucket(name)
}
