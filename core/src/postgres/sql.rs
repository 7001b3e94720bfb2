//! Every statement the PostgreSQL backend sends, in one place, as
//! `docs/postgres.md` describes the tables.
//!
//! Times are milliseconds since the Unix epoch. `tinystore_now($n)` is the
//! database server's clock (`clock_timestamp()`), held at the high-water
//! mark so that it never moves back (`super::clock`), or the store's test
//! clock when the store passes one: every server judges expiry on one clock. It
//! is evaluated once per statement (`(SELECT tinystore_now(..))`), not per row.

/// The schema this build writes. A database at a newer schema is refused.
pub const SCHEMA_VERSION: i32 = 5;

/// Serializes the creation of the tables by several processes at once.
pub const SCHEMA_LOCK: i64 = 0x7473_6b76_0001;
/// Held by the one process that sweeps expired rows at a time.
pub const SWEEP_LOCK: i64 = 0x7473_6b76_0002;

/// The version row, read before anything else is created.
pub const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS tinystore_schema (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    version integer NOT NULL)";
pub const SCHEMA_READ: &str = "SELECT version FROM tinystore_schema";
/// Whether the store's schema has its version table, as a store makes it
/// (the two columns, by name and type).
pub const SCHEMA_TABLE_SHAPE: &str = "SELECT
    to_regclass('tinystore_schema') IS NOT NULL,
    (SELECT count(*) FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'tinystore_schema'
        AND ((column_name = 'one' AND data_type = 'boolean')
          OR (column_name = 'version' AND data_type = 'integer'))) = 2";
/// The relations of the store's schema named as a store names its own.
pub const SCHEMA_OUR_NAMES: &str = "SELECT string_agg(c.relname, ', ' ORDER BY c.relname) FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relname LIKE 'tinystore\\_%'";
pub const SCHEMA_WRITE: &str = "INSERT INTO tinystore_schema (version) VALUES ($1)
    ON CONFLICT (one) DO UPDATE SET version = greatest(tinystore_schema.version, excluded.version)";

/// The rest of the schema, version 1.
pub const SCHEMA_V1: &str = "
CREATE SEQUENCE IF NOT EXISTS tinystore_versions;
CREATE OR REPLACE FUNCTION tinystore_now(given bigint) RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT coalesce(given, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) $$;
CREATE TABLE IF NOT EXISTS tinystore_names (
    id bigserial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    kind text NOT NULL);
CREATE TABLE IF NOT EXISTS tinystore_cells (
    bucket bigint NOT NULL,
    path bytea NOT NULL,
    version bigint NOT NULL,
    expires bigint,
    int_value bigint,
    bytes_value bytea,
    PRIMARY KEY (bucket, path)) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02);
CREATE INDEX IF NOT EXISTS tinystore_cells_expires ON tinystore_cells (expires) WHERE expires IS NOT NULL;
";

/// Version 2: the clock in nanoseconds, for rate limits. Counters, quotas
/// and rate limits keep their rows in `tinystore_cells`, as in kv.db.
pub const SCHEMA_V2: &str = "
CREATE OR REPLACE FUNCTION tinystore_now_ns(given bigint) RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT coalesce(given, floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000) $$;
";

pub const NAME_FIND: &str = "SELECT id, kind FROM tinystore_names WHERE name = $1";
pub const NAME_INSERT: &str = "INSERT INTO tinystore_names (name, kind) VALUES ($1, $2)
    ON CONFLICT (name) DO NOTHING";
pub const NAME_LIST: &str = "SELECT id, name, kind FROM tinystore_names ORDER BY name";

/// A live row: version, expiry, value, and the clock that judged it (an
/// idle key's renewal is decided on it).
pub const CELL_GET: &str = "WITH n AS (SELECT tinystore_now($3) AS now)
    SELECT c.version, c.expires, c.int_value, c.bytes_value, n.now FROM n JOIN tinystore_cells c
    ON c.bucket = $1 AND c.path = $2 AND (c.expires IS NULL OR c.expires > n.now)";
pub const CELL_HAS: &str = "WITH n AS (SELECT tinystore_now($3) AS now)
    SELECT c.version, c.expires, n.now FROM n JOIN tinystore_cells c
    ON c.bucket = $1 AND c.path = $2 AND (c.expires IS NULL OR c.expires > n.now)";

/// The common `set`, one statement: a new version from the sequence, the
/// expiry `$6` (a time) or now + `$7` (a span), or, with `$8`, a live
/// key's own expiry kept.
pub const CELL_SET: &str = "WITH n AS (SELECT tinystore_now($3) AS now)
INSERT INTO tinystore_cells AS c (bucket, path, version, expires, int_value, bytes_value)
SELECT $1::bigint, $2::bytea, nextval('tinystore_versions'), coalesce($6::bigint, n.now + $7::bigint), $4::bigint, $5::bytea
FROM n
ON CONFLICT (bucket, path) DO UPDATE SET
    version = excluded.version,
    int_value = excluded.int_value,
    bytes_value = excluded.bytes_value,
    expires = CASE WHEN $8::boolean AND (c.expires IS NULL OR c.expires > (SELECT now FROM n))
                   THEN c.expires ELSE excluded.expires END
RETURNING version";

/// The row of a key, locked for the rest of the transaction, dead or live.
pub const CELL_LOCK: &str = "SELECT version, expires, int_value, bytes_value FROM tinystore_cells
    WHERE bucket = $1 AND path = $2 FOR UPDATE";
/// The clock, read after the row's lock was granted.
pub const NOW: &str = "SELECT tinystore_now($1)";
/// A row where there was none; no row back when a racer wrote one first.
pub const CELL_INSERT: &str = "INSERT INTO tinystore_cells (bucket, path, version, expires, int_value, bytes_value)
    VALUES ($1, $2, nextval('tinystore_versions'), $3, $4, $5) ON CONFLICT (bucket, path) DO NOTHING
    RETURNING version";
/// A new value for a locked row.
pub const CELL_UPDATE: &str = "UPDATE tinystore_cells
    SET version = nextval('tinystore_versions'), expires = $3, int_value = $4, bytes_value = $5
    WHERE bucket = $1 AND path = $2 RETURNING version";
pub const CELL_DELETE: &str = "DELETE FROM tinystore_cells WHERE bucket = $1 AND path = $2";
pub const CELL_SET_EXPIRES: &str = "UPDATE tinystore_cells SET expires = $3 WHERE bucket = $1 AND path = $2";

/// `take`: the live row, deleted and returned; of racers, exactly one gets
/// it (the others wait on its lock and then find no row).
pub const CELL_TAKE: &str = "DELETE FROM tinystore_cells
    WHERE bucket = $1 AND path = $2 AND (expires IS NULL OR expires > (SELECT tinystore_now($3)))
      AND ($4::bigint IS NULL OR version = $4)
    RETURNING version, expires, int_value, bytes_value";

/// The renewal of an idle key, only if nothing wrote it since it was read.
pub const CELL_RENEW: &str = "UPDATE tinystore_cells SET expires = $5
    WHERE bucket = $1 AND path = $2 AND version = $3 AND expires IS NOT DISTINCT FROM $4";

/// Live rows with paths in `($2, $3)`, in byte order, at most `$5`.
pub const CELL_SCAN: &str = "SELECT path, version, expires, int_value, bytes_value FROM tinystore_cells
    WHERE bucket = $1 AND path > $2 AND path < $3
      AND (expires IS NULL OR expires > (SELECT tinystore_now($4)))
    ORDER BY path LIMIT $5";

/// A branch and every branch under it, in one statement: readers see the
/// rows before it or none of them.
pub const SUBTREE_DELETE: &str = "DELETE FROM tinystore_cells WHERE bucket = $1 AND path >= $2 AND path < $3";

/// A batch of expired rows, oldest expiry first.
pub const SWEEP_EXPIRED: &str = "DELETE FROM tinystore_cells WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM tinystore_cells WHERE expires <= (SELECT tinystore_now($1)) ORDER BY expires LIMIT $2))";
pub const SWEEP_TRY_LOCK: &str = "SELECT pg_try_advisory_lock($1)";
pub const SWEEP_UNLOCK: &str = "SELECT pg_advisory_unlock($1)";

/// A rate limit's `allow`, one statement: the key's `due` (ns, in
/// `int_value`) moves `$4` (the cost) later, from now if it lies in the
/// past, where the result stays within `$5` (the tolerance) of now; the row
/// expires when the key is as good as new. It commits without waiting for
/// the WAL flush (`synchronous_commit` off for its own transaction only).
/// Returns the clock, the new `due` when it passed, and the `due` the
/// statement's snapshot read (the core decides the answer on them).
pub const RATE_ALLOW: &str = "WITH n AS MATERIALIZED (
    SELECT tinystore_now_ns($3) AS now, set_config('synchronous_commit', 'off', true) AS commit_mode),
up AS (
    INSERT INTO tinystore_cells AS c (bucket, path, version, expires, int_value)
    SELECT $1::bigint, $2::bytea, nextval('tinystore_versions'), (n.now + $4::bigint + 999999) / 1000000,
           n.now + $4::bigint
    FROM n
    ON CONFLICT (bucket, path) DO UPDATE SET
        version = excluded.version,
        int_value = greatest(c.int_value, (SELECT now FROM n)) + $4::bigint,
        expires = (greatest(c.int_value, (SELECT now FROM n)) + $4::bigint + 999999) / 1000000
    WHERE greatest(c.int_value, (SELECT now FROM n)) + $4::bigint <= (SELECT now FROM n) + $5::bigint
    RETURNING c.int_value)
SELECT n.now, (SELECT int_value FROM up),
       (SELECT int_value FROM tinystore_cells WHERE bucket = $1 AND path = $2), n.commit_mode
FROM n";
/// A rate limit's key as `peek` reads it: the clock and the key's `due`.
pub const RATE_PEEK: &str = "SELECT tinystore_now_ns($3),
    (SELECT int_value FROM tinystore_cells WHERE bucket = $1 AND path = $2)";

pub const BEGIN: &str = "BEGIN";
pub const COMMIT: &str = "COMMIT";
pub const ROLLBACK: &str = "ROLLBACK";
