//! The store's clock on PostgreSQL never moves back (KV-17), even when the
//! database server's clock steps back (an NTP step, a failover to a server
//! whose clock is behind): a high-water mark in the database,
//! `tinystore_clock.high` (ms), holds it.
//!
//! Invariant: every statement that judges time reads it through
//! `tinystore_now` / `tinystore_now_ns`, which answer
//! `greatest(clock_timestamp(), high)`; and `high` only rises, to the
//! server's clock, at every open and at every maintenance round of every
//! store on the server's clock (about a second apart). So "now" is
//! never below a time the mark recorded: a key that expired, or a rate
//! limit's `due` that passed, before the last raise stays so whatever the
//! server's clock does afterwards. A step back can only give again the
//! times since the last raise (at most a round), never more; and a mark
//! left ahead by a server whose clock ran fast holds "now" there until the
//! clock catches up, as kv.db's system clock is held.
//!
//! Why not raise it at every read: a write per read, on one row every
//! server shares, would serialize the whole store on it. One `UPDATE` a
//! second per process, off every call's path, costs nothing a call waits
//! for, and reading the one-row table is an index probe within each
//! statement.
//!
//! A store with a test clock passes its own time, which neither reads nor
//! raises the mark: a test's times must not hold a real clock later.

/// The schema's version 5: the mark, and the clock functions that read it.
/// Idempotent; the mark starts at the server's clock.
pub const SCHEMA_V5: &str = "
CREATE TABLE IF NOT EXISTS tinystore_clock (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    high bigint NOT NULL);
INSERT INTO tinystore_clock (high) VALUES (floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
    ON CONFLICT (one) DO NOTHING;
CREATE OR REPLACE FUNCTION tinystore_now(given bigint) RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT coalesce(given, greatest(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint,
                                     (SELECT high FROM tinystore_clock))) $$;
CREATE OR REPLACE FUNCTION tinystore_now_ns(given bigint) RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT coalesce(given, greatest(floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
                                     (SELECT high FROM tinystore_clock) * 1000000)) $$;
";

/// Raises the mark to the server's clock; writes nothing when the mark is
/// there already (the clock stepped back, or another process raised it).
pub const MARK_RAISE: &str =
    "UPDATE tinystore_clock SET high = floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
    WHERE high < floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

use super::PgStore;
use super::errors::{self, Sent};
use crate::error::Result;

/// Raises the mark to the server's clock: one statement, for the
/// maintenance round of a store on the server's clock.
pub(crate) fn raise(pg: &PgStore) -> Result<()> {
    pg.block(async |pool, _| {
        let c = pool.shared().await?;
        c.client
            .execute(MARK_RAISE, &[])
            .await
            .map_err(|e| errors::failed(&pool.shown, &e, Sent::Commit))?;
        Ok(())
    })
}
