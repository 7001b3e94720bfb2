//! Where a store keeps its rows: `kv.db` in a directory (SQLite, the
//! default), or a PostgreSQL database shared by several servers.
//!
//! The seam sits at what the handles need: point reads, a group of writes,
//! range scans, the clear of a branch, versions, the expiry sweep. SQLite's
//! side is the writer and readers the store holds as before, called
//! directly, so its hot paths gain one predictable branch and nothing else;
//! PostgreSQL's is [`crate::postgres`]. A handle asks
//! `StoreInner::postgres` and takes the PostgreSQL path when it answers.

use std::sync::Arc;

use crate::postgres::PgStore;

/// The engine behind one store.
pub(crate) enum Backend {
    /// `kv.db`, through the store's writer and readers.
    Sqlite,
    /// A PostgreSQL database.
    Postgres(Arc<PgStore>),
}
