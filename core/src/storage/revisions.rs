//! The file's revision and clock mark, written only when they must move.
//!
//! Every write takes a new revision as its version, and the file must
//! remember the highest one so that no version repeats. Writing
//! `meta.revision` in every group dirtied the `meta` page in every commit:
//! one more 4 KiB frame in the WAL and in the fsync, a thirteenth of what a
//! group of 64 sets wrote, for a number that only has to stay ahead.
//!
//! So a writer reserves revisions in blocks. It records the top of a block,
//! [`RESERVE`] ahead of the last version it gave, and then gives versions
//! from the block without writing `meta` again, for as long as the file's
//! revision is still the top it wrote: no other writer (another process, or
//! this one after a failed commit) has reserved since. Each group reads
//! `meta.revision` under the write lock, so a writer whose block was passed
//! sees it and starts above the other's top.
//!
//! Invariant: in every committed state of the file, `meta.revision` is at
//! least every version in it, and a group's versions are above every
//! version committed before it. Versions therefore still rise in commit
//! order (clear marks compare them), and never repeat across a crash, a
//! reopen or a process. A reopen or another writer's block leaves a gap,
//! as a rolled-back write always did.
//!
//! The clock's high-water mark (`meta.clock`) is on the same page, and is
//! raised when it is [`MARK_EVERY`] behind rather than in every group.

use std::cell::Cell;

use rusqlite::Connection;

use super::sql;
use crate::error::Result;

/// How many revisions a writer reserves at once. At 130,000 sets a second
/// a block lasts 30 ms, and one group of 64 in 64 writes `meta`. Small
/// enough that versions stay short to read: a process that opens, writes
/// once and exits spends one block, and five such processes in turn end
/// near 20,000, not near 330,000 as blocks of 65,536 did.
pub const RESERVE: i64 = 1 << 12;

/// How far (ms) the clock's mark in the file may fall behind the time a
/// group saw before the group raises it. The mark already trails by as much
/// as a minute while no writes come, so a second under load changes what a
/// restart can rely on by at most that second.
pub const MARK_EVERY: i64 = 1_000;

/// One write connection's block of revisions and the mark it last wrote.
#[derive(Debug, Default)]
pub struct Revisions {
    /// The top this connection wrote into `meta.revision`, and the last
    /// version it gave from that block; `None` until it reserves, or after
    /// a transaction that may not have committed.
    block: Cell<Option<(i64, i64)>>,
    /// Whether the open transaction started inside this connection's block.
    in_block: Cell<bool>,
    /// The clock mark this connection last wrote (ms), 0 for none.
    mark: Cell<i64>,
}

impl Revisions {
    /// The revision the transaction's first write follows: the last version
    /// given from this connection's block while the file still holds its
    /// top, else the file's revision. Called inside the write transaction.
    pub fn start(&self, conn: &Connection) -> Result<i64> {
        let file: i64 = conn.prepare_cached(sql::REVISION_GET)?.query_row([], |r| r.get(0))?;
        match self.block.get() {
            Some((top, last)) if top == file => {
                self.in_block.set(true);
                Ok(last)
            }
            _ => {
                self.in_block.set(false);
                Ok(file)
            }
        }
    }

    /// Records, inside the transaction and before its commit, that the
    /// transaction gave versions up to `rev` (when `gave`), and that the
    /// time is `mark` (ms; 0 raises nothing). Writes `meta` only when `rev`
    /// passed the block or the file's mark is [`MARK_EVERY`] behind. If the
    /// commit then fails, the caller calls [`Revisions::forget`].
    pub fn finish(&self, conn: &Connection, rev: i64, gave: bool, mark: i64) -> Result<()> {
        if gave {
            match self.block.get() {
                Some((top, _)) if self.in_block.get() && rev <= top => self.block.set(Some((top, rev))),
                _ => {
                    let top = rev.saturating_add(RESERVE);
                    conn.prepare_cached(sql::REVISION_SET)?.execute([top])?;
                    self.block.set(Some((top, rev)));
                }
            }
        }
        if mark > 0 && mark >= self.mark.get().saturating_add(MARK_EVERY) {
            conn.prepare_cached(sql::CLOCK_RAISE)?.execute([mark])?;
            self.mark.set(mark);
        }
        Ok(())
    }

    /// Drops the block and the mark: the transaction that recorded them may
    /// not have committed. The block alone would be safe (the next group
    /// compares its top with the file's), but a mark kept in memory that
    /// never reached the file would hold the next raise back a second.
    pub fn forget(&self) {
        self.block.set(None);
        self.in_block.set(false);
        self.mark.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        for m in sql::MIGRATIONS {
            conn.execute_batch(m).unwrap();
        }
        conn
    }

    fn meta(conn: &Connection, name: &str) -> i64 {
        conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| r.get(0))
            .unwrap()
    }

    /// One committed group: takes `n` versions from `r`, returns them.
    fn group(conn: &Connection, r: &Revisions, n: i64, mark: i64) -> Vec<i64> {
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        let first = r.start(conn).unwrap();
        let versions: Vec<i64> = (first + 1..=first + n).collect();
        r.finish(conn, first + n, n > 0, mark).unwrap();
        conn.execute_batch("COMMIT").unwrap();
        versions
    }

    #[test]
    fn a_block_is_written_once_and_its_versions_follow_each_other() {
        let conn = file();
        let r = Revisions::default();
        assert_eq!(group(&conn, &r, 3, 0), vec![1, 2, 3]);
        assert_eq!(meta(&conn, "revision"), 3 + RESERVE);
        assert_eq!(group(&conn, &r, 2, 0), vec![4, 5]);
        // The second group wrote nothing to meta: the block's top stands.
        assert_eq!(meta(&conn, "revision"), 3 + RESERVE);
    }

    #[test]
    fn versions_rise_across_two_writers_of_one_file_in_commit_order() {
        let dir = tempfile::tempdir().unwrap();
        let open = || {
            let c = Connection::open(dir.path().join("kv.db")).unwrap();
            c.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
            c
        };
        let (a, b) = (open(), open());
        for m in sql::MIGRATIONS {
            a.execute_batch(m).unwrap();
        }
        let (ra, rb) = (Revisions::default(), Revisions::default());
        let mut seen = Vec::new();
        for round in 0..4 {
            seen.extend(group(&a, &ra, 2, 0));
            seen.extend(group(&a, &ra, 1, 0));
            seen.extend(group(&b, &rb, 2 + round, 0));
        }
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "versions in commit order: {seen:?}"
        );
        assert!(meta(&a, "revision") >= *seen.last().unwrap());
    }

    #[test]
    fn a_commit_that_failed_gives_no_version_twice() {
        let conn = file();
        let r = Revisions::default();
        let before = group(&conn, &r, 2, 0);
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        let first = r.start(&conn).unwrap();
        r.finish(&conn, first + 1 + RESERVE, true, 0).unwrap();
        conn.execute_batch("ROLLBACK").unwrap();
        r.forget();
        let after = group(&conn, &r, 1, 0);
        assert!(after[0] > *before.last().unwrap());
        assert!(meta(&conn, "revision") >= after[0]);
    }

    #[test]
    fn the_clock_mark_is_raised_once_it_is_a_second_behind() {
        let conn = file();
        let r = Revisions::default();
        group(&conn, &r, 1, 10_000);
        assert_eq!(meta(&conn, "clock"), 10_000);
        group(&conn, &r, 1, 10_000 + MARK_EVERY - 1);
        assert_eq!(meta(&conn, "clock"), 10_000, "less than a second later: unchanged");
        group(&conn, &r, 0, 10_000 + MARK_EVERY);
        assert_eq!(meta(&conn, "clock"), 10_000 + MARK_EVERY);
        group(&conn, &r, 1, 0);
        assert_eq!(meta(&conn, "clock"), 10_000 + MARK_EVERY, "a test clock raises nothing");
    }
}
