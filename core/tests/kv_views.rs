//! KV-16 views: one snapshot, read through `entry`, `has`, `list` and `all`
//! as well as `get`, for at most five seconds; a read after that is `Limit`
//! and says so. A binding's snapshot reuses the connection of an ended one.

mod common;

use std::time::Duration;

use tinystore::{ErrorKind, ListOptions, Scope, VIEW_LIMIT};

/// The tests of this file one at a time: one counts this process's open files.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn kv16_view_reads_entry_has_list_and_all_from_one_snapshot() {
    let _alone = alone();
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("a", &1).unwrap();
    b.set("b", &1).unwrap();
    let (entry, has_c, listed, all) = store
        .view(|v| {
            let entry = v.with(&b).entry("a")?;
            // Committed after the view's first read: the view does not see them.
            b.set("b", &2)?;
            b.set("c", &3)?;
            let listed: Vec<(String, i64)> = v
                .with(&b)
                .list(&ListOptions::default())?
                .entries
                .into_iter()
                .map(|e| (String::from_utf8(e.key.0).unwrap(), e.value))
                .collect();
            let all = v.with(&b).all().collect::<tinystore::Result<Vec<_>>>()?.len();
            Ok((entry, v.with(&b).has("c")?, listed, all))
        })
        .unwrap();
    assert_eq!(entry.map(|e| e.value), Some(1));
    assert!(!has_c, "a key set after the first read is not in the snapshot");
    assert_eq!(listed, vec![("a".into(), 1), ("b".into(), 1)]);
    assert_eq!(all, 2);
    assert_eq!(b.get("b").unwrap(), Some(2));
}

#[test]
fn kv16_a_view_read_after_five_seconds_is_limit_saying_why() {
    let _alone = alone();
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("a", &1).unwrap();
    let e = store
        .view(|v| {
            assert_eq!(v.with(&b).get("a")?, Some(1));
            store.clock().advance(VIEW_LIMIT + Duration::from_millis(1))?;
            v.with(&b).get("a")
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.message().contains("open longer than 5s"), "{e}");
    assert_eq!(e.bucket(), Some("b"));
    // A new view reads again, and the store writes.
    assert_eq!(store.view(|v| v.with(&b).get("a")).unwrap(), Some(1));
    b.set("a", &2).unwrap();
}

#[test]
fn kv16_a_binding_snapshot_ends_after_five_seconds_and_reuses_its_connection() {
    let _alone = alone();
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("a", &1).unwrap();
    let before = open_files();
    let snap = store.snapshot().unwrap();
    assert!(Scope::View(&snap).entry(b.raw(), b"a").unwrap().is_some());
    store.clock().advance(VIEW_LIMIT + Duration::from_millis(1)).unwrap();
    let e = Scope::View(&snap).entry(b.raw(), b"a").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.message().contains("open longer than 5s"), "{e}");
    drop(snap);
    assert!(open_files() > before, "the ended snapshot's connection is kept");
    b.set("a", &2).unwrap();
    // An ended snapshot's connection stays open for the next one, and
    // snapshots one after another read on it: none opens the file again.
    let kept = open_files();
    for i in 0..20 {
        let s = store.snapshot().unwrap();
        assert_eq!(
            Scope::View(&s).entry(b.raw(), b"a").unwrap().map(|e| e.value),
            Some(tinystore::Raw::Int(2)),
            "snapshot {i}"
        );
        assert_eq!(open_files(), kept, "snapshot {i} opened a connection of its own");
    }
}

/// File descriptors this process has open.
fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// A checkpoint of the whole WAL into kv.db, from a connection of its own:
/// whether it completed (no reader's snapshot held it back).
fn checkpoint_completes(dir: &std::path::Path) -> bool {
    let c = rusqlite::Connection::open(dir.join(tinystore::FILE_NAME)).unwrap();
    let (busy, log, done): (i64, i64, i64) = c
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    busy == 0 && log == done
}

#[test]
fn kv16_an_idle_binding_snapshot_past_its_bound_lets_checkpoints_complete() {
    let _alone = alone();
    let (d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("a", &1).unwrap();
    let snap = store.snapshot().unwrap();
    assert!(Scope::View(&snap).entry(b.raw(), b"a").unwrap().is_some());
    b.set("a", &2).unwrap();
    assert!(!checkpoint_completes(d.path()), "the open snapshot holds the WAL back");
    store.maintain().unwrap();
    assert!(
        !checkpoint_completes(d.path()),
        "within its bound, maintenance keeps it"
    );
    // Past the bound, with no read: maintenance ends the snapshot.
    store.clock().advance(VIEW_LIMIT + Duration::from_millis(1)).unwrap();
    store.maintain().unwrap();
    assert!(
        checkpoint_completes(d.path()),
        "the idle snapshot let go when its bound passed"
    );
    let e = Scope::View(&snap).entry(b.raw(), b"a").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.message().contains("open longer than 5s"), "{e}");
    // Its connection went back to the store: the next snapshot reads on.
    let next = store.snapshot().unwrap();
    assert_eq!(
        Scope::View(&next).entry(b.raw(), b"a").unwrap().map(|e| e.value),
        Some(tinystore::Raw::Int(2))
    );
}
