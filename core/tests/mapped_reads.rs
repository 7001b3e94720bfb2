//! Readers map kv.db into memory (`Options::mmap_size`). A mapped page
//! that the file no longer holds would stop the process with SIGBUS, so
//! these tests shrink the file under live readers the ways SQLite itself
//! does, and check that every read still answers right; and that a store
//! with a memory budget maps nothing.

mod common;

use std::time::Duration;

use tinystore::{Options, Store};

fn value(i: usize) -> String {
    format!("{i}:{}", "v".repeat(2000))
}

/// Whether this process maps `path` (Linux: /proc/self/maps).
fn maps(path: &std::path::Path) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let path = path.canonicalize().unwrap();
    let want = path.to_string_lossy();
    maps.lines().any(|l| l.ends_with(want.as_ref()))
}

#[test]
fn kv19_a_vacuum_from_another_program_shrinks_the_file_under_mapped_readers_and_every_read_answers() {
    let (dir, store) = common::manual();
    let b = store.bucket::<String>("b").open().unwrap();
    let n = 3000;
    store
        .tx(|tx| {
            let b = tx.with(&b);
            for i in 0..n {
                b.set(format!("k{i}"), &value(i))?;
            }
            Ok(())
        })
        .unwrap();
    // Every page is read, so each reader maps the whole file.
    for _ in 0..2 {
        for i in 0..n {
            assert_eq!(b.get(format!("k{i}")).unwrap(), Some(value(i)));
        }
    }
    let file = store.file();
    if cfg!(target_os = "linux") {
        assert!(maps(&file), "the readers map kv.db by default");
    }
    store
        .tx(|tx| {
            let b = tx.with(&b);
            for i in (0..n).filter(|i| i % 100 != 0) {
                b.delete(format!("k{i}"))?;
            }
            Ok(())
        })
        .unwrap();
    let before = std::fs::metadata(&file).unwrap().len();

    // Another program vacuums the file; the checkpoint then cuts it short.
    let other = rusqlite::Connection::open(&file).unwrap();
    other.busy_timeout(Duration::from_secs(10)).unwrap();
    other.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    let after = std::fs::metadata(&file).unwrap().len();
    assert!(
        after * 4 < before,
        "the vacuum shrank kv.db from {before} to {after} bytes"
    );

    for _ in 0..2 {
        for i in 0..n {
            let want = (i % 100 == 0).then(|| value(i));
            assert_eq!(b.get(format!("k{i}")).unwrap(), want, "k{i} after the vacuum");
        }
    }
    // The file grows again under the same readers.
    b.set("k1", &value(1)).unwrap();
    assert_eq!(b.get("k1").unwrap(), Some(value(1)));
    drop(other);
    store.close().unwrap();
    drop(dir);
}

#[test]
fn a_store_with_a_memory_budget_maps_nothing_and_mmap_size_0_turns_the_map_off() {
    if !cfg!(target_os = "linux") {
        return;
    }
    for (name, options) in [
        ("a memory budget", Options::new().memory(8 << 20)),
        ("mmap_size(0)", Options::new().mmap_size(0)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with(dir.path(), options.test_clock(common::start())).unwrap();
        let b = store.bucket::<String>("b").open().unwrap();
        b.set("k", &value(1)).unwrap();
        assert_eq!(b.get("k").unwrap(), Some(value(1)));
        assert!(!maps(&store.file()), "a store opened with {name} maps kv.db");
        store.close().unwrap();
    }
}

#[test]
fn kv19_kv_db_cut_short_under_mapped_readers_is_corrupt_at_the_next_read_not_a_crash() {
    let (dir, store) = common::manual();
    let b = store.bucket::<String>("b").open().unwrap();
    store
        .tx(|tx| {
            let b = tx.with(&b);
            for i in 0..2000 {
                b.set(format!("k{i}"), &value(i))?;
            }
            Ok(())
        })
        .unwrap();
    for i in 0..2000 {
        assert_eq!(b.get(format!("k{i}")).unwrap(), Some(value(i)));
    }
    // Everything is in kv.db itself, then something that is not SQLite cuts it.
    let file = store.file();
    let other = rusqlite::Connection::open(&file).unwrap();
    other.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    drop(other);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(8192)
        .unwrap();
    for i in (0..2000).step_by(7) {
        let err = b.get(format!("k{i}")).expect_err("a read of a page the file lost");
        assert_eq!(err.kind(), tinystore::ErrorKind::Corrupt, "k{i}: {err}");
    }
    let _ = store.close();
    drop(dir);
}
