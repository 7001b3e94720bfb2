//! The store's clock on PostgreSQL never moves back (KV-17), even when the
//! database server's clock steps back (an NTP step, a failover to a server
//! whose clock is behind): a high-water mark in the database, the value of
//! the sequence `tinystore_clock` (ms), holds it.
//!
//! Invariant: every statement that judges time reads it through
//! `tinystore_now` / `tinystore_now_ns`, which answer
//! `greatest(clock_timestamp(), mark)`; and the mark only rises, to the
//! server's clock, at every open and at every maintenance round of every
//! store on the server's clock (about a second apart), each raise checking
//! and setting it under an advisory lock. So "now" is never below a time
//! the mark recorded: a key that expired, or a rate limit's `due` that
//! passed, before the last raise stays so whatever the server's clock does
//! afterwards. A step back can only give again the times since the last
//! raise (at most a round), never more; and a mark left ahead by a server
//! whose clock ran fast holds "now" there until the clock catches up, as
//! kv.db's system clock is held.
//!
//! Why not raise it at every read: a write per read, on one value every
//! server shares, would serialize the whole store on it. One raise a
//! second per process is off every call's path. Why a sequence and not a
//! row: `pg_sequence_last_value` is a plain function call, which lets
//! PostgreSQL inline `tinystore_now` into each statement, where a
//! sub-select of a row would make it a function run per statement; and
//! `setval` leaves no dead row behind.
//!
//! A store with a test clock passes its own time, which neither reads nor
//! raises the mark: a test's times must not hold a real clock later.

/// The schema's version 5: the mark, and the clock functions that read it.
/// Idempotent. The sequence is made before the functions, whose bodies
/// name it.
pub const SCHEMA_V5: &str = "
CREATE SEQUENCE IF NOT EXISTS tinystore_clock;
CREATE OR REPLACE FUNCTION tinystore_now(given bigint) RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT coalesce(given, greatest(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint,
                                     pg_sequence_last_value('tinystore_clock'))) $$;
CREATE OR REPLACE FUNCTION tinystore_now_ns(given bigint) RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT coalesce(given, greatest(floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
                                     pg_sequence_last_value('tinystore_clock') * 1000000)) $$;
";

/// Serializes the raises, so that a raise that read a lower mark cannot
/// set it below one a racer set meanwhile.
pub const MARK_LOCK: i64 = 0x7473_6b76_0003;

/// Raises the mark to the server's clock, one statement: the advisory lock
/// (held to the statement's end) is taken in the sub-select, before the
/// mark is read; nothing is set when the mark is there already (the clock
/// stepped back, or another process raised it).
pub const MARK_RAISE: &str = "SELECT setval('tinystore_clock', n.clock) FROM (
    SELECT pg_advisory_xact_lock($1) AS locked, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS clock
    OFFSET 0) n
    WHERE n.clock > coalesce(pg_sequence_last_value('tinystore_clock'), 0)";

use super::PgStore;
use super::errors::{self, Sent};
use crate::error::Result;

/// Raises the mark to the server's clock, for the maintenance round of a
/// store on the server's clock.
pub(crate) fn raise(pg: &PgStore) -> Result<()> {
    pg.block(async |pool, _| {
        let c = pool.shared().await?;
        c.client
            .execute(MARK_RAISE, &[&MARK_LOCK])
            .await
            .map_err(|e| errors::failed(&pool.shown, &e, Sent::Commit))?;
        Ok(())
    })
}
