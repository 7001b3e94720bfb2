//! Every SQL statement of TinyStore, as named constants.
//!
//! Nothing outside `storage` knows SQL. Statements are prepared once per
//! connection through rusqlite's statement cache, with positional
//! parameters (binding by name searches the names on every call). The time
//! a statement judges expiry by is always the store's clock in
//! milliseconds, never SQLite's.

/// SQLite `application_id` of kv.db: "TKVS".
pub const APPLICATION_ID: i32 = 0x544b_5653;

/// The migrations, in order; `user_version` is how many have run. Until
/// 0.1.0 is published the first may still be edited in place.
pub const MIGRATIONS: &[&str] = &[
    // 1: the cells of every handle, spilled values, clear marks, the revision.
    "CREATE TABLE buckets (
        id   INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL
    ) STRICT;
    CREATE TABLE cells (
        bucket  INTEGER NOT NULL,
        path    BLOB NOT NULL,
        version INTEGER NOT NULL,
        expires INTEGER,
        value   ANY,
        spill   INTEGER,
        PRIMARY KEY (bucket, path)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX cells_expiry ON cells (expires) WHERE expires IS NOT NULL;
    CREATE TABLE spilled (
        id    INTEGER PRIMARY KEY,
        value BLOB NOT NULL
    ) STRICT;
    CREATE TABLE branches (
        bucket  INTEGER NOT NULL,
        lo      BLOB NOT NULL,
        hi      BLOB NOT NULL,
        cleared INTEGER NOT NULL,
        PRIMARY KEY (bucket, lo)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE meta (
        name  TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    INSERT INTO meta (name, value) VALUES ('revision', 0);
    CREATE TABLE runs (
        bucket  INTEGER NOT NULL,
        path    BLOB NOT NULL,
        holder  TEXT NOT NULL,
        until   INTEGER NOT NULL,
        PRIMARY KEY (bucket, path)
    ) STRICT, WITHOUT ROWID;",
    // 2: the highest time a commit saw, under which the clock never falls.
    "INSERT INTO meta (name, value) VALUES ('clock', 0);",
];

/// The format version this build writes and the newest it reads.
pub const FORMAT_VERSION: i64 = MIGRATIONS.len() as i64;

pub const TABLE_COUNT: &str = "SELECT count(*) FROM sqlite_schema WHERE type = 'table'";

/// A row is hidden when it expired at the time `$now` (a parameter), or
/// when a clear mark over its path is at or after its version.
macro_rules! visible {
    ($c:literal, $now:literal) => {
        concat!(
            "(",
            $c,
            ".expires IS NULL OR ",
            $c,
            ".expires > ",
            $now,
            ") AND NOT EXISTS (SELECT 1 FROM branches b WHERE b.bucket = ",
            $c,
            ".bucket AND ",
            $c,
            ".version <= b.cleared AND ",
            $c,
            ".path >= b.lo AND ",
            $c,
            ".path < b.hi)"
        )
    };
}

pub const BUCKET_FIND: &str = "SELECT id, kind FROM buckets WHERE name = ?1";
pub const BUCKET_INSERT: &str = "INSERT INTO buckets (name, kind) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING";
pub const BUCKET_LIST: &str = "SELECT id, name, kind FROM buckets ORDER BY name";

/// At least every version in the file: the top of the last block of
/// revisions a writer reserved (`storage/revisions.rs`).
pub const REVISION_GET: &str = "SELECT value FROM meta WHERE name = 'revision'";
/// A writer's new block. A point update: with `name IN ('revision',
/// 'clock')` SQLite built an ephemeral table for the list, 30k instructions
/// a group, 400 a write of a group of 64.
pub const REVISION_SET: &str = "UPDATE meta SET value = ?1 WHERE name = 'revision'";
/// The highest time (ms) any commit to the file has seen, within a second:
/// a store's clock starts there, so a system clock set back before a
/// restart cannot revive a key that was already expired.
/// Raises the revision to at least ?1, for a copy whose versions came from
/// another store: every later write takes a version above them.
pub const REVISION_RAISE: &str = "UPDATE meta SET value = max(value, ?1) WHERE name = 'revision'";
pub const CLOCK_GET: &str = "SELECT value FROM meta WHERE name = 'clock'";
pub const CLOCK_RAISE: &str = "UPDATE meta SET value = ?1 WHERE name = 'clock' AND value < ?1";

/// The writer's transaction statements, prepared once per connection like
/// every other: parsing them again each group showed in profiles.
pub const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";
pub const COMMIT: &str = "COMMIT";
/// A read transaction on a reader: its statements see one snapshot.
pub const BEGIN_READ: &str = "BEGIN DEFERRED";
pub const ROLLBACK: &str = "ROLLBACK";
/// The savepoint of one write of a group, which rolls back alone.
pub const WRITE_SAVEPOINT: &str = "SAVEPOINT w";
pub const WRITE_RELEASE: &str = "RELEASE w";
pub const WRITE_ROLLBACK: &str = "ROLLBACK TO w";
/// A savepoint inside one write, for the part of it that must roll back
/// as one (a spilled value replaced and its spill freed).
pub const INNER_SAVEPOINT: &str = "SAVEPOINT within";
pub const INNER_RELEASE: &str = "RELEASE within";
pub const INNER_ROLLBACK: &str = "ROLLBACK TO within";

/// A live row with its value, the spilled one when it has one.
pub const CELL_GET: &str = concat!(
    "SELECT c.version, c.expires, coalesce(s.value, c.value) FROM cells c LEFT JOIN spilled s ON s.id = c.spill
     WHERE c.bucket = ?1 AND c.path = ?2 AND ",
    visible!("c", "?3")
);

/// A point read without the join to `spilled`: the value when it is in
/// the row, else the spill's id, for the caller to read again with
/// [`CELL_GET`] in one statement (one snapshot). Most values are in their
/// row, and the join's cursor cost a get 350 instructions.
pub const CELL_GET_INLINE: &str = concat!(
    "SELECT c.version, c.expires, c.value, c.spill FROM cells c WHERE c.bucket = ?1 AND c.path = ?2 AND ",
    visible!("c", "?3")
);

/// [`CELL_GET_INLINE`] without the clear-mark check, for a reader that
/// knows the snapshot it read holds no mark (`readers.rs` says how it
/// knows). The check's subquery on `branches` cost a get 940 instructions
/// of its 8.8k in SQLite.
pub const CELL_GET_UNMARKED: &str = "SELECT c.version, c.expires, c.value, c.spill FROM cells c
     WHERE c.bucket = ?1 AND c.path = ?2 AND (c.expires IS NULL OR c.expires > ?3)";

/// Whether any clear mark exists.
pub const MARKS_ANY: &str = "SELECT EXISTS (SELECT 1 FROM branches)";

/// Whether a live row is there, without reading its value.
pub const CELL_HAS: &str = concat!(
    "SELECT c.version, c.expires FROM cells c WHERE c.bucket = ?1 AND c.path = ?2 AND ",
    visible!("c", "?3")
);

/// The row as a write sees it: dead rows too, so their spill can be freed.
pub const CELL_META: &str = concat!(
    "SELECT c.version, c.expires, c.spill, (",
    visible!("c", "?3"),
    ") FROM cells c WHERE c.bucket = ?1 AND c.path = ?2"
);

/// Writes a row whatever was there; the caller frees a replaced spill.
pub const CELL_UPSERT: &str = "INSERT INTO cells (bucket, path, version, expires, value, spill)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
     ON CONFLICT (bucket, path) DO UPDATE SET version = excluded.version, expires = excluded.expires,
       value = excluded.value, spill = excluded.spill";

/// A `set` of an inline value in one statement, with no read before it:
/// like [`CELL_UPSERT`], with the row's expiry given. A row with a spilled
/// value is left alone (no change), for the caller to replace in a
/// savepoint with its spill freed. No trigger on `cells`: one would make
/// SQLite journal every statement's pages. Positional, because binding by
/// name searches the names per call: ?1 bucket, ?2 path, ?3 version, ?4
/// expires, ?5 value.
pub const CELL_SET: &str = "INSERT INTO cells (bucket, path, version, expires, value, spill)
     VALUES (?1, ?2, ?3, ?4, ?5, NULL)
     ON CONFLICT (bucket, path) DO UPDATE SET version = excluded.version,
       expires = excluded.expires, value = excluded.value, spill = NULL
     WHERE cells.spill IS NULL";

/// [`CELL_SET`] for a write that lets a live key keep its expiry (a bucket
/// with a ttl, no expiry of the call's own): a live row changes its version
/// and value only. `expires` is not assigned at all, since SQLite rewrites
/// the entry of `cells_expiry` of every row whose UPDATE assigns the
/// column, changed or not: one more page of the index for each overwrite.
/// A new key takes ?4. A row that is not visible at ?6 (expired, cleared)
/// or holds a spilled value is left alone, for the caller to replace.
pub const CELL_SET_KEEPING_EXPIRY: &str = concat!(
    "INSERT INTO cells (bucket, path, version, expires, value, spill)
     VALUES (?1, ?2, ?3, ?4, ?5, NULL)
     ON CONFLICT (bucket, path) DO UPDATE SET version = excluded.version, value = excluded.value
     WHERE cells.spill IS NULL AND ",
    visible!("cells", "?6")
);

pub const CELL_DELETE: &str = "DELETE FROM cells WHERE bucket = ?1 AND path = ?2";

pub const CELL_EXPIRE: &str = "UPDATE cells SET expires = ?3 WHERE bucket = ?1 AND path = ?2";

/// An idle renewal: only a row still at the version and expiry the read saw.
pub const CELL_RENEW: &str = "UPDATE cells SET expires = ?5
     WHERE bucket = ?1 AND path = ?2 AND version = ?3 AND expires IS ?4";

pub const SPILL_INSERT: &str = "INSERT INTO spilled (value) VALUES (?1)";
pub const SPILL_DELETE: &str = "DELETE FROM spilled WHERE id = ?1";

/// A page of a branch's own keys, after a path, in path order.
pub const CELL_SCAN: &str = concat!(
    "SELECT c.path, c.version, c.expires, coalesce(s.value, c.value) FROM cells c LEFT JOIN spilled s ON s.id = c.spill
     WHERE c.bucket = ?1 AND c.path > ?2 AND c.path < ?3 AND ",
    visible!("c", "?4"),
    " ORDER BY c.path LIMIT ?5"
);

/// Rows of a subtree, up to a bound, to choose between deleting and marking.
pub const SUBTREE_COUNT: &str = "SELECT count(*) FROM (SELECT 1 FROM cells
     WHERE bucket = ?1 AND path >= ?2 AND path < ?3 LIMIT ?4)";
pub const SUBTREE_SPILLS: &str = "DELETE FROM spilled WHERE id IN (SELECT spill FROM cells
     WHERE bucket = ?1 AND path >= ?2 AND path < ?3 AND spill IS NOT NULL)";
pub const SUBTREE_DELETE: &str = "DELETE FROM cells WHERE bucket = ?1 AND path >= ?2 AND path < ?3";
pub const MARK_UPSERT: &str = "INSERT INTO branches (bucket, lo, hi, cleared) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (bucket, lo) DO UPDATE SET cleared = excluded.cleared, hi = excluded.hi";

pub const MARKS: &str = "SELECT bucket, lo, hi, cleared FROM branches";
/// The hidden rows under one mark, a batch at a time.
pub const MARKED_ROWS: &str = "SELECT path, spill FROM cells
     WHERE bucket = ?1 AND path >= ?2 AND path < ?3 AND version <= ?4 LIMIT ?5";
pub const MARK_DELETE: &str = "DELETE FROM branches WHERE bucket = ?1 AND lo = ?2 AND cleared = ?3";

/// Expired rows, oldest first, a batch at a time.
pub const EXPIRED_ROWS: &str = "SELECT bucket, path, spill FROM cells
     WHERE expires IS NOT NULL AND expires <= ?1 ORDER BY expires LIMIT ?2";
/// One batch of one name's expired rows, oldest expiry first. Through the
/// expiry index (`+bucket` keeps SQLite from walking the name's every row
/// by its key instead), so it reads expired rows only.
pub const EXPIRED_IN_BUCKET: &str = "SELECT path, spill FROM cells
     WHERE expires IS NOT NULL AND expires <= ?2 AND +bucket = ?1 ORDER BY expires LIMIT ?3";
pub const EXPIRED_COUNT: &str = "SELECT count(*) FROM cells WHERE expires IS NOT NULL AND expires <= ?1";

pub const STATS: &str = "SELECT (SELECT count(*) FROM cells), (SELECT count(*) FROM spilled),
     (SELECT count(*) FROM branches), (SELECT count(*) FROM buckets)";
pub const BUCKET_ROWS: &str = "SELECT count(*) FROM cells WHERE bucket = ?1";

// ---- once: claims of runs across processes (limits/claims.rs) ----

/// Who holds the run of a key, and until when (real ms).
pub const RUN_FIND: &str = "SELECT holder, until FROM runs WHERE bucket = ?1 AND path = ?2";
/// Claims the run of a key for a holder until a time (real ms).
pub const RUN_CLAIM: &str = "INSERT INTO runs (bucket, path, holder, until) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (bucket, path) DO UPDATE SET holder = excluded.holder, until = excluded.until";
/// Lets go of a run, only if this holder still has it.
pub const RUN_RELEASE: &str = "DELETE FROM runs WHERE bucket = ?1 AND path = ?2 AND holder = ?3";
/// The heartbeat: every run of a holder lives on.
pub const RUNS_RENEW: &str = "UPDATE runs SET until = ?2 WHERE holder = ?1";
/// Forgets the runs whose holder stopped renewing them.
pub const RUNS_SWEEP: &str = "DELETE FROM runs WHERE until < ?1";
/// The latest expiry of a handle's rows (i64::MAX if one never expires):
/// until then a key a rate limit's memory lacks may have a live row.
pub const BUCKET_LAST_EXPIRY: &str = "SELECT CASE WHEN count(*) > count(expires) THEN 9223372036854775807
     ELSE coalesce(max(expires), 0) END FROM cells WHERE bucket = ?1";
