//! KV-8 branches, KV-9 list, KV-10 versions.

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use tinystore::{Created, ErrorKind, Key, ListOptions, Raw};

#[test]
fn kv08_clear_removes_branch_and_subbranches_and_nothing_beside() {
    let (_d, store) = common::manual();
    let s = store.bucket::<String>("sessions").open().unwrap();
    s.under(42).set("a", &"1".into()).unwrap();
    s.under(42).under("dev").set("b", &"2".into()).unwrap();
    s.under("42\0").set("c", &"3".into()).unwrap(); // an owner whose bytes start the same
    s.under(420).set("d", &"4".into()).unwrap();
    s.set("42", &"5".into()).unwrap(); // a key named like the owner
    s.under(42).clear().unwrap();
    assert!(!s.under(42).has("a").unwrap());
    assert!(!s.under(42).under("dev").has("b").unwrap());
    assert!(s.under("42\0").has("c").unwrap());
    assert!(s.under(420).has("d").unwrap());
    assert!(s.has("42").unwrap());
    s.under(42).set("a", &"new".into()).unwrap();
    assert_eq!(s.under(42).get("a").unwrap().as_deref(), Some("new"));
}

#[test]
fn kv08_clear_of_25000_keys_hides_them_at_once_and_maintenance_deletes_them() {
    let (dir, store) = common::manual();
    let s = store.bucket::<()>("seen").open().unwrap();
    let other = store.bucket::<()>("seen").open().unwrap().under("other");
    other.set("stays", &()).unwrap();
    store
        .tx(|tx| {
            let big = s.under("big");
            let t = tx.with(&big);
            for i in 0..25_000 {
                t.set(i, &())?;
            }
            Ok(())
        })
        .unwrap();
    let big = s.under("big");
    let v_before = big.entry(7).unwrap().unwrap().version;
    big.clear().unwrap();
    // A second store on the file sees the clear at once, before any sweep.
    let second = common::reopen(dir.path());
    let seen2 = second.bucket::<()>("seen").open().unwrap().under("big");
    for i in [0, 7, 12_345, 24_999] {
        assert!(!big.has(i).unwrap(), "{i}");
        assert!(!seen2.has(i).unwrap(), "{i}");
    }
    assert!(big.list(&ListOptions::default()).unwrap().entries.is_empty());
    assert_eq!(big.take(7).unwrap(), None);
    assert_eq!(
        big.key(7).if_version(v_before).set(&()).unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert!(big.create(9, &()).unwrap(), "create claims a cleared key");
    assert!(big.has(9).unwrap(), "a key written after the clear is a new key");
    let m = store.maintain().unwrap();
    assert_eq!(m.cleared, 24_999);
    assert!(big.has(9).unwrap());
    assert!(other.has("stays").unwrap());
    let conn = rusqlite::Connection::open(store.file()).unwrap();
    let (cells, marks): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM cells), (SELECT count(*) FROM branches)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((cells, marks), (2, 0));
}

/// Writes keys 0 to `CLEAR_BOUND` (one more than the bound) into `b`, in one
/// transaction, so that clearing `b` leaves a mark instead of deleting.
fn fill_past_the_clear_bound(store: &tinystore::Store, b: &tinystore::Bucket<i64>) {
    let n = tinystore::CLEAR_BOUND as i64 + 1;
    store
        .tx(|tx| {
            let t = tx.with(b);
            for i in 0..n {
                t.set(i, &i)?;
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn kv08_a_clear_by_another_store_hides_keys_from_readers_that_saw_no_mark() {
    // A point read skips the clear-mark check while its reader knows the
    // file holds no mark; a mark made by another store must end that.
    let (dir, store) = common::manual();
    let s = store.bucket::<i64>("seen").open().unwrap().under("big");
    fill_past_the_clear_bound(&store, &s);
    // Enough gets that every reader (one per core) has read, twice.
    for i in 0..64 {
        assert_eq!(s.get(i).unwrap(), Some(i));
    }
    let second = common::reopen(dir.path());
    second
        .bucket::<i64>("seen")
        .open()
        .unwrap()
        .under("big")
        .clear()
        .unwrap();
    let marks: i64 = rusqlite::Connection::open(store.file())
        .unwrap()
        .query_row("SELECT count(*) FROM branches", [], |r| r.get(0))
        .unwrap();
    assert_eq!(marks, 1, "the clear hid the keys with a mark, not by deleting them");
    for i in 0..64 {
        assert_eq!(s.get(i).unwrap(), None, "key {i} after the other store's clear");
    }
    // A key written after the clear is there, on every reader.
    second
        .bucket::<i64>("seen")
        .open()
        .unwrap()
        .under("big")
        .set(7, &70)
        .unwrap();
    for _ in 0..64 {
        assert_eq!(s.get(7).unwrap(), Some(70));
    }
    // Once maintenance has deleted the rows and the mark, reads go on right.
    second.maintain().unwrap();
    for i in 0..64 {
        assert_eq!(s.get(i).unwrap(), (i == 7).then_some(70), "key {i} after maintenance");
    }
}

#[test]
fn kv09_list_pages_in_byte_order_without_loss_or_doubling() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("n").open().unwrap();
    for k in ["b", "10", "a", "9", "1"] {
        b.set(k, &1).unwrap();
    }
    b.under("a").set("sub", &1).unwrap(); // a branch's keys are not the parent's
    let keys: Vec<String> = b.all().map(|e| e.unwrap().key.to_string()).collect();
    assert_eq!(keys, ["1", "10", "9", "a", "b"]);
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = b.list(&ListOptions { after, limit: Some(2) }).unwrap();
        assert!(page.entries.len() <= 2);
        seen.extend(page.entries.iter().map(|e| e.key.to_string()));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    assert_eq!(seen, keys);
}

#[test]
fn kv09_page_of_25_by_10_gives_cursor_of_last_key() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("n").open().unwrap();
    for i in 0..25 {
        b.set(format!("k{i:02}"), &i).unwrap();
    }
    let page = b
        .list(&ListOptions {
            after: None,
            limit: Some(10),
        })
        .unwrap();
    assert_eq!(page.entries.len(), 10);
    assert_eq!(page.next, Some(Key(b"k09".to_vec())));
    assert_eq!(b.all().count(), 25);
}

#[test]
fn kv09_limit_over_1000_is_invalid() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("n").open().unwrap();
    for limit in [0, 1001] {
        let e = b
            .list(&ListOptions {
                after: None,
                limit: Some(limit),
            })
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid);
        assert_eq!(e.bucket(), Some("n"));
    }
    assert!(
        b.list(&ListOptions {
            after: None,
            limit: Some(1000)
        })
        .is_ok()
    );
}

#[test]
fn kv09_page_stops_before_4mib_of_values() {
    let (_d, store) = common::manual();
    let b = store.bucket::<Vec<u8>>("blobs").open().unwrap();
    for i in 0..6 {
        b.raw()
            .set(
                format!("k{i}").as_bytes(),
                Raw::Bytes(vec![i; 1 << 20]),
                Default::default(),
            )
            .unwrap();
    }
    let p1 = b.raw().list(&ListOptions::default()).unwrap();
    assert_eq!(p1.entries.len(), 4, "four values of 1 MiB make 4 MiB");
    let p2 = b
        .raw()
        .list(&ListOptions {
            after: p1.next.clone(),
            limit: None,
        })
        .unwrap();
    assert_eq!(p2.entries.len(), 2);
    assert_eq!(p2.entries[0].key, Key(b"k4".to_vec()));
    assert_eq!(p2.next, None);
}

#[test]
fn kv09_all_walks_over_1000_keys_and_sees_a_key_written_mid_walk() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("n").open().unwrap();
    store
        .tx(|tx| {
            for i in 0..2500 {
                tx.with(&b).set(format!("k{i:04}"), &i)?;
            }
            Ok(())
        })
        .unwrap();
    let mut n = 0;
    for (i, e) in b.all().enumerate() {
        e.unwrap();
        if i == 10 {
            b.set("k9999", &1).unwrap();
        }
        n += 1;
    }
    assert_eq!(n, 2501);
}

#[test]
fn kv10_versions_never_repeat_across_delete_expiry_and_reopen() {
    let (dir, store) = common::manual();
    let b = store.bucket::<i64>("v").ttl(common::mins(1)).open().unwrap();
    let mut seen = std::collections::HashSet::new();
    let v1 = b.set("k", &1).unwrap();
    assert!(seen.insert(v1));
    b.delete("k").unwrap();
    let v2 = b.set("k", &1).unwrap();
    assert!(seen.insert(v2));
    store.clock().advance(common::mins(2)).unwrap();
    store.maintain().unwrap();
    let v3 = b.set("k", &1).unwrap();
    assert!(seen.insert(v3));
    store.close().unwrap();
    let store = common::reopen(dir.path());
    let b = store.bucket::<i64>("v").open().unwrap();
    let v4 = b.set("k", &1).unwrap();
    assert!(seen.insert(v4), "{seen:?}");
    assert_eq!(b.entry("k").unwrap().unwrap().version, v4);
    assert_eq!(v4.to_string().parse::<tinystore::Version>().unwrap(), v4);
}

#[test]
fn kv10_a_version_is_the_text_a_version_wrote_and_no_other_number() {
    for text in ["0", "-5", "x", ""] {
        let e = text.parse::<tinystore::Version>().unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::Invalid, format!("{text:?} is not a version").as_str())
        );
    }
    assert_eq!("1".parse::<tinystore::Version>().unwrap().get(), 1);
}

#[test]
fn kv10_a_store_writing_after_another_stores_clear_writes_above_the_mark() {
    // Each writer gives versions from a block it reserved in the file. A
    // store whose block another store has since passed must not give a
    // version from it: a key it writes after the other's clear would be at
    // or below the clear's mark, and hidden.
    let (dir, store) = common::manual();
    let second = common::reopen(dir.path());
    let mine = second.bucket::<i64>("seen").open().unwrap().under("big");
    let early = mine.set("early", &0).unwrap(); // the second store reserves its block
    let big = store.bucket::<i64>("seen").open().unwrap().under("big");
    fill_past_the_clear_bound(&store, &big);
    big.clear().unwrap();
    assert!(!mine.has("early").unwrap(), "the clear hid the second store's key");
    let after = mine.set("after", &1).unwrap();
    assert_ne!(after, early);
    assert_eq!(
        mine.get("after").unwrap(),
        Some(1),
        "a key written after the clear is live"
    );
    assert_eq!(big.get("after").unwrap(), Some(1), "and the first store sees it");
    let again = big.set("again", &2).unwrap();
    assert_eq!(mine.get("again").unwrap(), Some(2));
    assert!(![early, after].contains(&again));
}

#[test]
fn kv10_if_version_applies_only_at_that_version() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("v").open().unwrap();
    let v1 = b.set("k", &1).unwrap();
    let v2 = b.key("k").if_version(v1).set(&2).unwrap();
    let e = b.key("k").if_version(v1).set(&3).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!((e.bucket(), e.path()), (Some("v"), Some("k")));
    assert_eq!(b.get("k").unwrap(), Some(2), "unchanged");
    assert_eq!(
        b.under(7).key(1).if_version(v1).delete().unwrap_err().path(),
        Some("7/1")
    );
    assert_eq!(
        b.key("k").if_version(v1).take().unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert_eq!(
        b.key("k").if_version(v1).expire(common::mins(1)).unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert_eq!(b.key("k").if_version(v2).take().unwrap(), Some(2));
}

#[test]
fn kv10_two_writers_holding_one_version_exactly_one_wins() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("v").open().unwrap();
    for round in 0..10 {
        let v = b.set("k", &0).unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let hs: Vec<_> = (0..2)
            .map(|i| {
                let (b, barrier) = (b.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    b.key("k").if_version(v).set(&(i + 1))
                })
            })
            .collect();
        let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let wins = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "round {round}: {results:?}");
        let loser = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert_eq!(loser.kind(), ErrorKind::Conflict);
    }
}

#[test]
fn kv10_create_writes_only_if_absent_and_gives_the_entry_found() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("claims").open().unwrap();
    assert!(b.create("evt", &1).unwrap());
    assert!(!b.create("evt", &2).unwrap());
    match b.key("evt").create_entry(&3).unwrap() {
        Created::Found(e) => assert_eq!(e.value, 1),
        other => panic!("{other:?}"),
    }
}

/// The claim of a key: `create_entry` answers the version and expiry it
/// wrote, or the live entry it found, and that version is the one a `set`
/// bound to the claim with `if_version` takes.
#[test]
fn kv10_create_entry_answers_the_claim_a_set_binds_to() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("claims").open().unwrap();
    let claim = b.key("evt").ttl(Duration::from_secs(600)).create_entry(&1).unwrap();
    let expires = store.clock().now() + Duration::from_secs(600);
    assert!(
        matches!(claim, Created::Written { expires_at: Some(t), .. } if t == expires),
        "{claim:?}"
    );
    let again = b.key("evt").create_entry(&2).unwrap();
    assert!(!again.written());
    assert_eq!((again.version(), again.expires_at()), (claim.version(), Some(expires)));
    let kept = b.key("evt").if_version(claim.version()).set(&3).unwrap();
    assert_eq!(b.entry("evt").unwrap().unwrap().version, kept);
    let stale = b.key("evt").if_version(claim.version()).set(&4).unwrap_err();
    assert_eq!(stale.kind(), ErrorKind::Conflict);
    store
        .tx(|tx| {
            let found = tx.with(&b).create_entry("evt", &5)?;
            assert!(matches!(&found, Created::Found(e) if e.value == 3 && e.version == kept));
            let written = tx.with(&b).create_entry("evt2", &6)?;
            assert!(written.written() && written.expires_at().is_none());
            Ok(())
        })
        .unwrap();
}
