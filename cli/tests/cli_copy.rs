//! `tinystore kv copy`: a store in a directory copied to PostgreSQL and
//! back, on the server CI starts (`make pg-start`; make exports
//! TINYSTORE_TEST_PG).

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{location, tinystore};
use serde_json::Value;
use tinystore::{Inspector, Options, Raw, Store};

/// Every row of every name, as the inspector reads it: name, kind, and each
/// key's owners, key, value, version and expiry.
type Snapshot = Vec<(String, String, Vec<tinystore::Row>)>;

fn snapshot(location: impl AsRef<Path>) -> Snapshot {
    let ins = Inspector::open(location).unwrap();
    ins.names()
        .unwrap()
        .into_iter()
        .map(|n| {
            let (rows, more) = ins.list(&n.name, &[], None, 10_000).unwrap();
            assert!(more.is_none());
            (n.name, n.kind, rows)
        })
        .collect()
}

/// A store of every kind a user keeps, written an hour ago by its own
/// clock: a code that lived ten minutes is expired now, the rest is live.
fn fixture(dir: &Path) {
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let store = Store::open_with(dir, Options::new().test_clock(hour_ago)).unwrap();
    let sessions = store
        .bucket::<serde_json::Value>("sessions")
        .idle(Duration::from_secs(30 * 86_400))
        .open()
        .unwrap();
    sessions
        .under(7)
        .set("d1g3st", &serde_json::json!({"userId": 7, "device": "web"}))
        .unwrap();
    sessions
        .under(8)
        .set("0ther", &serde_json::json!({"userId": 8, "device": "ios"}))
        .unwrap();
    let codes = store
        .bucket::<i64>("sign-in-codes")
        .ttl(Duration::from_secs(600))
        .open()
        .unwrap();
    codes.set("expired", &7).unwrap();
    let notes = store.bucket::<String>("notes").open().unwrap();
    notes.set("small", &"hello".to_string()).unwrap();
    // Over 512 bytes: kept in a row of its own in kv.db.
    notes.set("large", &"x".repeat(5_000)).unwrap();
    let members = store.bucket::<()>("members").open().unwrap();
    members.under("team-1").set("ann", &()).unwrap();
    let attempts = store.counters("attempts").open().unwrap();
    attempts.add("ip-1", 3).unwrap();
    store.bucket::<String>("empty-but-named").open().unwrap();
    store.close().unwrap();
}

fn keys_of(snap: &Snapshot, name: &str) -> Vec<String> {
    snap.iter()
        .find(|(n, _, _)| n == name)
        .unwrap_or_else(|| panic!("no name {name:?} in {snap:?}"))
        .2
        .iter()
        .map(|r| r.key.to_string())
        .collect()
}

#[test]
fn kv_copy_carries_a_store_to_postgres_and_back_with_versions_and_expiries() {
    let src = tempfile::tempdir().unwrap();
    fixture(src.path());
    let before = snapshot(src.path());
    let url = location("copy", "there_and_back");

    let (ok, out, err) = tinystore(&["kv", "copy", src.path().to_str().unwrap(), &url]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with(&format!("copied {} to postgres://", src.path().display())),
        "{out}"
    );
    let line = |name: &str| out.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_owned();
    assert!(
        line("sessions ").contains("values") && line("sessions ").ends_with(" 2"),
        "{out}"
    );
    assert!(
        line("sign-in-codes").ends_with(" 0"),
        "the expired code is not copied: {out}"
    );
    assert!(
        line("attempts").contains("counters") && line("attempts").ends_with(" 1"),
        "{out}"
    );
    assert!(out.contains("6 keys in 6 buckets"), "{out}");

    // On PostgreSQL: the same names, kinds, values, versions and expiries,
    // without the expired code.
    let on_pg = snapshot(&url);
    let expected: Snapshot = before
        .iter()
        .map(|(n, k, rows)| {
            let live = rows
                .iter()
                .filter(|r| r.expires_at.is_none_or(|e| e > SystemTime::now()))
                .cloned()
                .collect();
            (n.clone(), k.clone(), live)
        })
        .collect();
    assert_eq!(on_pg, expected);
    // The expired code is a row of the source still (the sweep has not
    // run), and none of the target's.
    let rows_of = |at: &str| {
        let names = Inspector::open(at).unwrap().names().unwrap();
        names.into_iter().find(|n| n.name == "sign-in-codes").unwrap().rows
    };
    assert_eq!(Inspector::open(src.path()).unwrap().stats().unwrap().expired_waiting, 1);
    assert_eq!((rows_of(src.path().to_str().unwrap()), rows_of(&url)), (1, 0));
    assert!(keys_of(&on_pg, "sign-in-codes").is_empty());
    let large = &on_pg.iter().find(|(n, _, _)| n == "notes").unwrap().2[0];
    assert_eq!(
        (large.key.to_string(), &large.value),
        ("large".into(), &Raw::Bytes("x".repeat(5_000).into_bytes()))
    );

    // And back into a directory: still the same.
    let back = tempfile::tempdir().unwrap();
    let back_dir = back.path().join("restored");
    let (ok, out, err) = tinystore(&["kv", "copy", &url, back_dir.to_str().unwrap(), "--json"]);
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["buckets"].as_array().unwrap().len(), 6, "{out}");
    assert!(!report["from"].as_str().unwrap().contains(":@"), "{out}");
    assert_eq!(snapshot(&back_dir), expected);

    // Versions go on above every version of the source on each target, so
    // none repeats; and the typed handles read what was copied.
    let top = before
        .iter()
        .flat_map(|(_, _, rows)| rows.iter().map(|r| r.version))
        .max()
        .unwrap();
    for target in [url.as_str(), back_dir.to_str().unwrap()] {
        let store = Store::open(target).unwrap();
        let notes = store.bucket::<String>("notes").open().unwrap();
        assert_eq!(notes.get("small").unwrap().as_deref(), Some("hello"));
        let attempts = store.counters("attempts").open().unwrap();
        assert_eq!(attempts.add("ip-1", 1).unwrap(), 4, "{target}");
        let v = notes.set("new", &"after the copy".to_string()).unwrap().get();
        assert!(
            v > top,
            "{target}: a version after the copy, {v}, is above the source's {top}"
        );
        // A name keeps its kind (KV-2) on the target too.
        assert!(store.counters("notes").open().is_err());
        store.close().unwrap();
    }
}

#[test]
fn kv_copy_refuses_a_target_that_is_not_empty_and_writes_nothing() {
    let src = tempfile::tempdir().unwrap();
    fixture(src.path());
    let s = src.path().to_str().unwrap();

    let url = location("copy", "not_empty");
    let store = Store::open(&url).unwrap();
    store
        .bucket::<String>("sessions")
        .open()
        .unwrap()
        .set("kept", &"mine".to_string())
        .unwrap();
    store.close().unwrap();
    let before = snapshot(&url);
    let (ok, out, err) = tinystore(&["kv", "copy", s, &url]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("the target postgres://")
            && err.contains("is not empty")
            && err.contains("\"sessions\"")
            && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(snapshot(&url), before, "the target is unchanged");

    let dst = tempfile::tempdir().unwrap();
    let store = Store::open(dst.path()).unwrap();
    store.counters("visits").open().unwrap().add("home", 1).unwrap();
    store.close().unwrap();
    let before = snapshot(dst.path());
    let kv_db = std::fs::read(dst.path().join("kv.db")).unwrap();
    let (ok, _, err) = tinystore(&["kv", "copy", s, dst.path().to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains(&format!("the target {} is not empty", dst.path().display()))
            && err.contains("1 name (\"visits\")"),
        "{err}"
    );
    assert_eq!(snapshot(dst.path()), before);
    assert_eq!(
        std::fs::read(dst.path().join("kv.db")).unwrap(),
        kv_db,
        "kv.db byte for byte"
    );

    // A source that is not there is refused before anything is made.
    let nowhere = dst.path().join("nowhere");
    let fresh = dst.path().join("fresh");
    let (ok, _, err) = tinystore(&["kv", "copy", nowhere.to_str().unwrap(), fresh.to_str().unwrap()]);
    assert!(!ok && err.contains("there is no store at"), "{err}");
    assert!(!fresh.exists() && !nowhere.exists());
}

/// The count row of the limit store `limit-store`, as the inspector reads it.
fn limit_count(location: impl AsRef<Path>) -> Raw {
    let (rows, _) = Inspector::open(location)
        .unwrap()
        .list("limit-store", &[], None, 100)
        .unwrap();
    rows.into_iter()
        .find(|r| r.key.as_bytes() == b"#entries")
        .unwrap()
        .value
}

/// The entry rows of the limit store `limit-store` (its count row left
/// out, whose version is the only thing a copy does not keep): key, value,
/// version and expiry.
fn limit_entries(location: impl AsRef<Path>) -> Vec<(Vec<u8>, Raw, i64, Option<SystemTime>)> {
    let (rows, _) = Inspector::open(location)
        .unwrap()
        .list("limit-store", &[], None, 100)
        .unwrap();
    rows.into_iter()
        .filter(|r| r.key.as_bytes() != b"#entries")
        .map(|r| (r.key.as_bytes().to_vec(), r.value, r.version, r.expires_at))
        .collect()
}

/// What the limit store `limit-store` at `location` reads of `a`, `b`, `c`,
/// and its count of entries, as a store opened there sees them.
fn limit_store_reads(location: &str) -> (Vec<Option<String>>, usize) {
    let store = Store::open(location).unwrap();
    let limits = tinystore::LimitStore::open(&store).unwrap();
    let read = limits
        .read(&["a", "b", "c"])
        .unwrap()
        .into_iter()
        .map(|e| e.map(|e| e.value))
        .collect();
    let entries = limits.entries().unwrap();
    store.close().unwrap();
    (read, entries)
}

/// Writes entries (key, JSON text, seconds it lives) to the limit store of
/// the store at `location`, by a clock an hour behind.
fn limit_entries_an_hour_ago(location: impl AsRef<Path>, entries: &[(&str, &str, u64)]) {
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let store = Store::open_with(location, Options::new().test_clock(hour_ago)).unwrap();
    let keys: Vec<&str> = entries.iter().map(|e| e.0).collect();
    tinystore::LimitStore::open(&store)
        .unwrap()
        .update(&keys, |_, _| {
            entries
                .iter()
                .map(|&(_, value, lives)| {
                    tinystore::Change::Put(tinystore::LimitEntry {
                        value: value.into(),
                        expires_at: tinystore::to_millis(hour_ago + Duration::from_secs(lives)),
                    })
                })
                .collect()
        })
        .unwrap();
    store.close().unwrap();
}

#[test]
fn kv_copy_carries_a_limit_store_to_postgres_and_back_recounting_it() {
    let src = tempfile::tempdir().unwrap();
    limit_entries_an_hour_ago(
        src.path(),
        // The first is expired by now: counted by the source until its sweep.
        &[("a", "1", 600), ("b", "2", 86_400), ("c", "{\"n\":3}", 86_400)],
    );
    assert_eq!(limit_count(src.path()), Raw::Int(3));
    let src_entries = limit_entries(src.path());
    assert_eq!(src_entries.len(), 2, "the expired entry is not live");

    let dst = tempfile::tempdir().unwrap();
    let (ok, out, err) = tinystore(&["kv", "copy", src.path().to_str().unwrap(), dst.path().to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("limit-store") && l.contains("limit_store")),
        "{out}"
    );
    assert_eq!(
        limit_count(dst.path()),
        Raw::Int(2),
        "the count is of the entries copied"
    );
    let store = Store::open(dst.path()).unwrap();
    assert_eq!(tinystore::LimitStore::open(&store).unwrap().entries().unwrap(), 2);
    store.close().unwrap();

    // Into PostgreSQL: the live entries with their values, versions and
    // expiries, and a count of them.
    let url = location("copy", "limit_store");
    let (ok, out, err) = tinystore(&["kv", "copy", src.path().to_str().unwrap(), &url]);
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("limit-store") && l.contains("limit_store")),
        "{out}"
    );
    assert_eq!(limit_entries(&url), src_entries);
    assert_eq!(limit_count(&url), Raw::Int(2));
    let expected = (vec![None, Some("2".to_owned()), Some("{\"n\":3}".to_owned())], 2);
    assert_eq!(limit_store_reads(&url), expected);

    // `kv list --url` shows the rows kv.db shows for it.
    let listed = |args: &[&str]| {
        let (ok, out, err) = tinystore(args);
        assert!(ok, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        v["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| (k["key"].clone(), k["value"].clone()))
            .collect::<Vec<_>>()
    };
    let on_postgres = listed(&["kv", "list", "limit-store", "--json", "--url", &url]);
    assert_eq!(on_postgres.len(), 3, "{on_postgres:?}");
    assert_eq!(
        on_postgres,
        listed(&[
            "kv",
            "list",
            "limit-store",
            "--json",
            "--dir",
            dst.path().to_str().unwrap()
        ])
    );
    let (ok, out, _) = tinystore(&["kv", "buckets", "--json", "--url", &url]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v[0]["name"].as_str(), v[0]["keys"].as_u64()),
        (Some("limit-store"), Some(3))
    );

    // Back out of PostgreSQL, the same.
    let back = tempfile::tempdir().unwrap();
    let (ok, _, err) = tinystore(&["kv", "copy", &url, back.path().to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(limit_entries(back.path()), src_entries);
    assert_eq!(limit_count(back.path()), Raw::Int(2));
    assert_eq!(limit_store_reads(back.path().to_str().unwrap()), expected);
}

#[test]
fn kv_copy_out_of_postgres_leaves_an_expired_entry_and_counts_the_rest() {
    // Entries written on PostgreSQL, one expired by now on the server's
    // clock, the other live.
    let from = location("copy", "limit_store_out");
    limit_entries_an_hour_ago(&from, &[("old", "1", 60), ("new", "2", 86_400)]);
    assert_eq!(limit_count(&from), Raw::Int(2), "counted until the sweep");

    let back = tempfile::tempdir().unwrap();
    let (ok, out, err) = tinystore(&["kv", "copy", &from, back.path().to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("limit-store"), "{out}");
    assert_eq!(limit_count(back.path()), Raw::Int(1));
    assert_eq!(limit_entries(back.path()), limit_entries(&from));
    let store = Store::open(back.path()).unwrap();
    let limits = tinystore::LimitStore::open(&store).unwrap();
    assert_eq!(limits.entries().unwrap(), 1);
    let read: Vec<Option<String>> = limits
        .read(&["old", "new"])
        .unwrap()
        .into_iter()
        .map(|e| e.map(|e| e.value))
        .collect();
    assert_eq!(read, vec![None, Some("2".to_owned())]);
    store.close().unwrap();
}
