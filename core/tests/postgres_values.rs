//! The promises of value buckets on a PostgreSQL store (KV-4 to KV-10),
//! against the server CI starts. Each test works in a schema of its own.

mod common;
mod pg;

use std::collections::HashSet;
use std::time::Duration;

use tinystore::{ErrorKind, Expiry, ListOptions, Options, Raw, Store, Version, WriteOptions};

fn manual(schema: &str) -> Store {
    Store::open_with(pg::fresh(schema), Options::new().test_clock(common::start())).unwrap()
}

#[test]
fn kv04_a_bucket_on_postgres_reads_what_it_wrote() {
    let store = manual("kv04_basics");
    assert!(store.is_postgres());
    let b = store.bucket::<String>("sessions").open().unwrap();
    assert_eq!(b.get("a").unwrap(), None);
    b.set("a", &"web".to_string()).unwrap();
    assert_eq!(b.get("a").unwrap().as_deref(), Some("web"));
    assert!(b.has("a").unwrap());
    assert!(!b.create("a", &"other".to_string()).unwrap());
    assert!(b.create("b", &"new".to_string()).unwrap());
    assert!(b.delete("a").unwrap());
    assert!(!b.delete("a").unwrap());
    assert_eq!(b.get("a").unwrap(), None);
    let raw = store.raw_bucket("raw").open().unwrap();
    raw.set("i", &Raw::Int(-7)).unwrap();
    raw.set("n", &Raw::Null).unwrap();
    raw.set("e", &Raw::Bytes(Vec::new())).unwrap();
    assert_eq!(raw.get("i").unwrap(), Some(Raw::Int(-7)));
    assert_eq!(raw.get("n").unwrap(), Some(Raw::Null));
    assert_eq!(raw.get("e").unwrap(), Some(Raw::Bytes(Vec::new())));
    assert_eq!(
        store.names().unwrap(),
        vec![
            ("raw".to_string(), "values".to_string()),
            ("sessions".to_string(), "values".to_string())
        ]
    );
}

#[test]
fn kv02_a_name_keeps_its_kind_across_stores() {
    let location = pg::fresh("kv02_kinds");
    let a = Store::open(&location).unwrap();
    a.bucket::<i64>("codes").open().unwrap();
    let b = Store::open(&location).unwrap();
    let e = b.counters("codes").open().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message().contains("the name \"codes\" holds"), "{e}");
    assert!(e.message().contains("so it cannot open as counters"), "{e}");
    b.counters("attempts").open().unwrap();
    let e = a
        .quota("attempts")
        .window("day", 5, Duration::from_secs(86400))
        .open()
        .err()
        .unwrap();
    assert!(e.message().contains("so it cannot open as a quota"), "{e}");
}

#[test]
fn kv05_take_raced_by_threads_of_two_stores_has_one_winner() {
    let location = pg::fresh("kv05_take_threads");
    let stores = [Store::open(&location).unwrap(), Store::open(&location).unwrap()];
    let rounds = 50;
    let seed = stores[0].bucket::<i64>("codes").open().unwrap();
    for r in 0..rounds {
        seed.set(format!("c{r}"), &r).unwrap();
    }
    let wins = std::sync::Mutex::new(vec![0; rounds as usize]);
    std::thread::scope(|s| {
        for i in 0..8 {
            let store = stores[i % 2].clone();
            let wins = &wins;
            s.spawn(move || {
                let codes = store.bucket::<i64>("codes").open().unwrap();
                for r in 0..rounds {
                    if let Some(v) = codes.take(format!("c{r}")).unwrap() {
                        assert_eq!(v, r);
                        wins.lock().unwrap()[r as usize] += 1;
                    }
                }
            });
        }
    });
    assert_eq!(*wins.lock().unwrap(), vec![1; rounds as usize]);
}

#[test]
fn kv10_versions_never_repeat_and_if_version_conflicts() {
    let store = manual("kv10_versions");
    let b = store.raw_bucket("v").open().unwrap().raw().clone();
    let seen = std::sync::Mutex::new(HashSet::new());
    std::thread::scope(|s| {
        for t in 0..4 {
            let (b, seen) = (&b, &seen);
            s.spawn(move || {
                for i in 0..50 {
                    let key = format!("k{}", (t * 50 + i) % 7);
                    let v = b.set(key.as_bytes(), Raw::Int(i), WriteOptions::default()).unwrap();
                    assert!(seen.lock().unwrap().insert(v), "version {v} came twice");
                }
            });
        }
    });
    let v1 = b.set(b"x", Raw::Int(1), WriteOptions::default()).unwrap();
    assert!(b.delete(b"x", None).unwrap());
    let v2 = b.set(b"x", Raw::Int(2), WriteOptions::default()).unwrap();
    assert_ne!(v1, v2, "a key deleted and written again has a new version");
    let stale = WriteOptions {
        if_version: Some(v1),
        ..WriteOptions::default()
    };
    let e = b.set(b"x", Raw::Int(3), stale).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.message().contains(&format!("at version {v2}, not {v1}")), "{e}");
    assert_eq!(e.bucket(), Some("v"));
    let fresh = WriteOptions {
        if_version: Some(v2),
        ..WriteOptions::default()
    };
    let v3 = b.set(b"x", Raw::Int(3), fresh).unwrap();
    assert_ne!(v3, v2);
    assert_eq!(b.delete(b"x", Some(v2)).err().unwrap().kind(), ErrorKind::Conflict);
    assert_eq!(
        b.take(b"x", Some(v2), |_| Ok(())).err().unwrap().kind(),
        ErrorKind::Conflict
    );
    assert_eq!(
        b.take(b"x", Some(v3), |_| Ok(())).unwrap().map(|e| e.value),
        Some(Raw::Int(3))
    );
    let e = b.delete(b"x", Some(v3)).err().unwrap();
    assert!(e.message().contains("absent"), "{e}");
}

#[test]
fn kv06_expiry_on_the_test_clock_is_exact() {
    let store = manual("kv06_test_clock");
    let codes = store
        .bucket::<i64>("codes")
        .ttl(Duration::from_secs(900))
        .open()
        .unwrap();
    codes.set("c", &1).unwrap();
    let e = codes.entry("c").unwrap().unwrap();
    assert_eq!(e.expires_at, Some(common::start() + Duration::from_secs(900)));
    store.clock().advance(Duration::from_secs(899)).unwrap();
    assert!(codes.has("c").unwrap());
    store.clock().advance(Duration::from_secs(1)).unwrap();
    assert!(!codes.has("c").unwrap());
    assert_eq!(codes.take("c").unwrap(), None);
    // A set over an expired row starts from the bucket's ttl again.
    codes.set("c", &2).unwrap();
    assert!(codes.has("c").unwrap());
    assert!(codes.expire("c", Expiry::In(Duration::from_secs(1))).unwrap());
    store.clock().advance(Duration::from_secs(1)).unwrap();
    assert!(!codes.expire("c", Expiry::In(Duration::from_secs(1))).unwrap());
    assert_eq!(store.maintain().unwrap().expired, 1);
}

#[test]
fn kv06_expiry_is_judged_on_the_database_servers_clock() {
    let location = pg::fresh("kv06_db_clock");
    let store = Store::open(&location).unwrap();
    let b = store
        .bucket::<i64>("codes")
        .ttl(Duration::from_secs(1800))
        .open()
        .unwrap();
    b.set("c", &1).unwrap();
    let db_now: i64 = pg::query("kv06_db_clock", "SELECT tinystore_now(NULL)")
        .unwrap()
        .parse()
        .unwrap();
    let at = tinystore::to_millis(b.entry("c").unwrap().unwrap().expires_at.unwrap());
    assert!(
        (at - (db_now + 1_800_000)).abs() < 5_000,
        "expiry {at} is not the database's now {db_now} + 30 min"
    );
    // The database's clock jumps an hour ahead; the app's does not move.
    pg::sql(
        "kv06_db_clock",
        "CREATE OR REPLACE FUNCTION tinystore_now(given bigint) RETURNS bigint LANGUAGE sql VOLATILE AS
         $$ SELECT coalesce(given, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3600000) $$",
    );
    assert!(
        !b.has("c").unwrap(),
        "a key past its expiry on the database's clock is absent"
    );
    assert_eq!(b.get("c").unwrap(), None);
    assert_eq!(b.take("c").unwrap(), None);
    assert!(b.create("c", &2).unwrap(), "an expired key is absent to create too");
}

#[test]
fn kv07_an_idle_key_is_renewed_by_reads() {
    let store = manual("kv07_idle");
    let s = store
        .bucket::<i64>("sessions")
        .idle(Duration::from_secs(3000))
        .open()
        .unwrap();
    s.set("a", &1).unwrap();
    for _ in 0..5 {
        store.clock().advance(Duration::from_secs(2000)).unwrap();
        assert_eq!(s.get("a").unwrap(), Some(1), "read within its idle span");
        // The renewal the read asked for is written by maintenance.
        assert_eq!(store.maintain().unwrap().renewed, 1);
    }
    // In its last minute a read renews before it returns.
    store.clock().advance(Duration::from_secs(2950)).unwrap();
    let e = s.entry("a").unwrap().unwrap();
    assert_eq!(e.expires_at, Some(store.clock().now() + Duration::from_secs(3000)));
    store.clock().advance(Duration::from_secs(3000)).unwrap();
    assert_eq!(s.get("a").unwrap(), None);
}

#[test]
fn kv08_clear_hides_a_branch_and_keeps_its_siblings() {
    let store = manual("kv08_clear");
    let s = store.bucket::<i64>("sessions").open().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for round in 0..4 {
        for i in round * 500..(round + 1) * 500 {
            let tx = tx.clone();
            s.raw()
                .under(7)
                .set_then(
                    format!("t{i}").as_bytes(),
                    Raw::Int(i),
                    WriteOptions::default(),
                    move |r| tx.send(r.map(|_| ())).unwrap(),
                )
                .unwrap();
        }
        for _ in 0..500 {
            rx.recv().unwrap().unwrap();
        }
    }
    assert_eq!(s.under(7).all().count(), 2_000);
    s.under(7).under("device").set("d", &1).unwrap();
    s.under(8).set("t0", &1).unwrap();
    s.under(7).clear().unwrap();
    assert!(!s.under(7).has("t0").unwrap());
    assert!(!s.under(7).under("device").has("d").unwrap());
    assert_eq!(s.under(7).all().count(), 0);
    assert!(s.under(8).has("t0").unwrap());
}

#[test]
fn kv09_list_pages_in_key_order() {
    let store = manual("kv09_list");
    let b = store.bucket::<i64>("b").open().unwrap();
    for k in ["b", "a", "c", "aa", "d"] {
        b.set(k, &1).unwrap();
    }
    b.under("x").set("hidden", &1).unwrap();
    let p = b
        .list(&ListOptions {
            after: None,
            limit: Some(2),
        })
        .unwrap();
    let keys: Vec<_> = p.entries.iter().map(|e| e.key.to_string()).collect();
    assert_eq!(keys, ["a", "aa"]);
    let p = b
        .list(&ListOptions {
            after: p.next,
            limit: Some(10),
        })
        .unwrap();
    let keys: Vec<_> = p.entries.iter().map(|e| e.key.to_string()).collect();
    assert_eq!(keys, ["b", "c", "d"]);
    assert_eq!(p.next, None);
    let e = b
        .list(&ListOptions {
            after: None,
            limit: Some(0),
        })
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::Invalid);
}

#[test]
fn kv18_what_postgres_does_not_carry_is_refused_by_name() {
    let e = Store::open_with(pg::server(), Options::new().mmap_size(0))
        .err()
        .unwrap();
    assert!(
        e.message().contains("mmap_size only configure a store in a directory"),
        "{e}"
    );
}

#[test]
fn kv19_a_database_at_a_newer_schema_is_refused_untouched() {
    let location = pg::fresh("kv19_newer");
    let store = Store::open(&location).unwrap();
    store.bucket::<i64>("b").open().unwrap().set("k", &1).unwrap();
    store.close().unwrap();
    pg::sql("kv19_newer", "UPDATE tinystore_schema SET version = 6");
    let e = Store::open(&location).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(
        e.message()
            .contains("schema version 6, newer than this build reads (5)"),
        "{e}"
    );
    // Nor does `tinystore kv` (the inspector) or a copy read it.
    let e = tinystore::Inspector::open(&location).err().unwrap();
    assert!(e.message().contains("newer than this build reads"), "{e}");
    let e = tinystore::moving::export(&location).err().unwrap();
    assert!(e.message().contains("newer than this build reads"), "{e}");
    assert_eq!(
        pg::query("kv19_newer", "SELECT version FROM tinystore_schema").as_deref(),
        Some("6")
    );
    assert_eq!(
        pg::query("kv19_newer", "SELECT count(*) FROM tinystore_cells").as_deref(),
        Some("1")
    );
}

#[test]
fn kv19_a_schema_of_another_applications_tables_is_refused_untouched() {
    let location = pg::fresh("kv19_foreign");
    pg::sql(
        "kv19_foreign",
        "CREATE SCHEMA kv19_foreign; CREATE TABLE tinystore_cells (id serial PRIMARY KEY, note text);
         INSERT INTO tinystore_cells (note) VALUES ('theirs');",
    );
    let e = Store::open(&location).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(
        e.message().contains("holds tinystore_cells")
            && e.message().contains("with no tinystore_schema version table")
            && e.message().contains("belong to another application"),
        "{e}"
    );
    let e = tinystore::Inspector::open(&location).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert_eq!(
        pg::query("kv19_foreign", "SELECT to_regclass('tinystore_schema') IS NULL").as_deref(),
        Some("t")
    );
    assert_eq!(
        pg::query("kv19_foreign", "SELECT string_agg(note, ',') FROM tinystore_cells").as_deref(),
        Some("theirs")
    );
}

#[test]
fn kv19_a_version_table_of_another_shape_is_refused_untouched() {
    let location = pg::fresh("kv19_shape");
    pg::sql(
        "kv19_shape",
        "CREATE SCHEMA kv19_shape; CREATE TABLE tinystore_schema (name text); INSERT INTO tinystore_schema VALUES ('x');",
    );
    let e = Store::open(&location).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(
        e.message()
            .contains("whose tinystore_schema is not a TinyStore version table"),
        "{e}"
    );
    let e = tinystore::Inspector::open(&location).err().unwrap();
    assert!(e.message().contains("belong to another application"), "{e}");
    assert_eq!(
        pg::query("kv19_shape", "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'kv19_shape'").as_deref(),
        Some("1")
    );
}

#[test]
fn kv19_a_call_after_close_is_closed() {
    let store = manual("kv19_closed");
    let b = store.bucket::<i64>("b").open().unwrap();
    store.close().unwrap();
    assert_eq!(b.get("k").err().unwrap().kind(), ErrorKind::Closed);
    assert_eq!(b.set("k", &1).err().unwrap().kind(), ErrorKind::Closed);
}

#[test]
fn kv05_the_async_forms_write_on_postgres() {
    let store = manual("kv05_async");
    let b = store.bucket::<String>("s").open().unwrap();
    pollster::block_on(async {
        let v1 = b.aio().set("s1", &"ada".to_owned()).await.unwrap();
        let stale = b
            .aio()
            .key("s1")
            .if_version(Version::from_raw(v1.get() + 1_000_000))
            .set(&"x".to_owned());
        assert_eq!(stale.await.unwrap_err().kind(), ErrorKind::Conflict);
        assert!(!b.aio().create("s1", &"other".to_owned()).await.unwrap());
        assert_eq!(b.aio().key("s1").take().await.unwrap().as_deref(), Some("ada"));
        assert_eq!(b.aio().key("s1").take().await.unwrap(), None);
        assert!(b.aio().create("s2", &"grace".to_owned()).await.unwrap());
        b.aio().clear().await.unwrap();
    });
    assert!(!b.has("s2").unwrap());
}

#[test]
fn kv04_a_blocking_call_from_inside_a_tokio_runtime_answers() {
    let store = manual("kv04_in_runtime");
    let b = store.bucket::<i64>("b").open().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        b.set("k", &1).unwrap();
        assert_eq!(b.get("k").unwrap(), Some(1));
    });
}

#[test]
fn kv07_a_renewal_a_read_asked_for_is_written_at_close() {
    let location = pg::fresh("kv07_close");
    let store = Store::open_with(&location, Options::new().test_clock(common::start())).unwrap();
    let s = store
        .bucket::<i64>("sessions")
        .idle(Duration::from_secs(3000))
        .open()
        .unwrap();
    s.set("a", &1).unwrap();
    store.clock().advance(Duration::from_secs(2000)).unwrap();
    assert_eq!(s.get("a").unwrap(), Some(1));
    store.close().unwrap();
    let later = common::start() + Duration::from_secs(2000);
    let again = Store::open_with(&location, Options::new().test_clock(later)).unwrap();
    let s = again
        .bucket::<i64>("sessions")
        .idle(Duration::from_secs(3000))
        .open()
        .unwrap();
    assert_eq!(
        s.entry("a").unwrap().unwrap().expires_at,
        Some(later + Duration::from_secs(3000))
    );
}

#[test]
fn kv19_stores_creating_one_new_schema_at_once_all_open_it() {
    // Several app servers open a store whose tables do not exist yet, at
    // the same moment: each finds them either missing or made, never half
    // made, and all of them open it.
    for round in 0..5 {
        let schema = format!("kv19_at_once_{round}");
        let location = pg::fresh(&schema);
        let start = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for i in 0..8i64 {
                let (start, location) = (&start, &location);
                s.spawn(move || {
                    start.wait();
                    let store = Store::open(location).unwrap();
                    store
                        .bucket::<i64>("b")
                        .open()
                        .unwrap()
                        .set(i.to_string().as_str(), &i)
                        .unwrap();
                    store.close().unwrap();
                });
            }
        });
        assert_eq!(
            pg::query(&schema, "SELECT count(*) FROM tinystore_cells").as_deref(),
            Some("8")
        );
        assert_eq!(
            pg::query(&schema, "SELECT version FROM tinystore_schema").as_deref(),
            Some("5")
        );
    }
}
