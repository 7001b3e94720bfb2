//! KV-4 basics, KV-5 take, KV-6 ttl, KV-7 idle.

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::mins;
use tinystore::ErrorKind;

#[test]
fn kv04_missing_key_is_absent_and_delete_of_missing_succeeds() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    assert_eq!(b.get("nope").unwrap(), None);
    assert!(!b.has("nope").unwrap());
    assert_eq!(b.entry("nope").unwrap(), None);
    assert!(!b.delete("nope").unwrap());
}

#[test]
fn kv04_write_is_durable_across_reopen() {
    let (dir, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("k", &5).unwrap();
    drop(b);
    drop(store); // no close: the write returned, so it is in the file
    let store = common::reopen(dir.path());
    assert_eq!(store.bucket::<i64>("b").open().unwrap().get("k").unwrap(), Some(5));
}

#[test]
fn kv05_take_reads_and_deletes_once() {
    let (_d, store) = common::manual();
    let codes = store.bucket::<i64>("codes").open().unwrap();
    codes.set("c", &42).unwrap();
    assert_eq!(codes.take("c").unwrap(), Some(42));
    assert_eq!(codes.take("c").unwrap(), None);
}

#[test]
fn kv05_take_racing_threads_exactly_one_wins() {
    let (_d, store) = common::manual();
    let codes = store.bucket::<i64>("codes").open().unwrap();
    for round in 0..5 {
        codes.set("c", &round).unwrap();
        let barrier = Arc::new(Barrier::new(64));
        let handles: Vec<_> = (0..64)
            .map(|_| {
                let (codes, barrier) = (codes.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    codes.take("c").unwrap()
                })
            })
            .collect();
        let wins: Vec<i64> = handles.into_iter().filter_map(|h| h.join().unwrap()).collect();
        assert_eq!(wins, vec![round], "round {round}");
    }
}

#[test]
fn kv05_take_of_undecodable_value_is_corrupt_and_stays() {
    let (_d, store) = common::manual();
    store
        .bucket::<String>("codes")
        .open()
        .unwrap()
        .set("c", &"not a number".into())
        .unwrap();
    let codes = store.bucket::<i64>("codes").open().unwrap();
    let e = codes.take("c").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert_eq!(e.path(), Some("c"));
    assert!(codes.has("c").unwrap(), "the value stays in place");
    // a spilled value too
    store
        .bucket::<String>("codes")
        .open()
        .unwrap()
        .set("big", &"z".repeat(2000))
        .unwrap();
    assert_eq!(codes.take("big").unwrap_err().kind(), ErrorKind::Corrupt);
    assert!(codes.has("big").unwrap());
}

#[test]
fn kv06_ttl_given_at_creation_and_kept_by_set() {
    let (_d, store) = common::manual();
    let codes = store.bucket::<i64>("codes").ttl(mins(15)).open().unwrap();
    codes.set("c", &1).unwrap();
    let first = codes.entry("c").unwrap().unwrap().expires_at.unwrap();
    assert_eq!(first, common::start() + mins(15));
    store.clock().advance(mins(10)).unwrap();
    codes.set("c", &2).unwrap();
    assert_eq!(
        codes.entry("c").unwrap().unwrap().expires_at,
        Some(first),
        "a later set keeps the expiry"
    );
    codes.key("c").ttl(mins(60)).set(&3).unwrap();
    assert_eq!(
        codes.entry("c").unwrap().unwrap().expires_at,
        Some(common::start() + mins(70)),
        "a call's ttl replaces it"
    );
    store.clock().advance(mins(61)).unwrap();
    assert_eq!(codes.get("c").unwrap(), None);
}

#[test]
fn kv06_expired_key_is_absent_to_every_call() {
    let (_d, store) = common::manual();
    let codes = store.bucket::<i64>("codes").ttl(mins(15)).open().unwrap();
    codes.set("c", &1).unwrap();
    let v = codes.entry("c").unwrap().unwrap().version;
    store.clock().advance(mins(16)).unwrap();
    assert_eq!(codes.get("c").unwrap(), None);
    assert!(!codes.has("c").unwrap());
    assert!(codes.list(&Default::default()).unwrap().entries.is_empty());
    assert_eq!(codes.take("c").unwrap(), None);
    assert!(!codes.expire("c", mins(5)).unwrap());
    assert_eq!(
        codes.key("c").if_version(v).set(&2).unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert_eq!(
        codes.key("c").if_version(v).delete().unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert!(codes.create("c", &3).unwrap(), "create claims an expired key");
    assert_eq!(codes.get("c").unwrap(), Some(3));
    assert_eq!(
        codes.entry("c").unwrap().unwrap().expires_at,
        Some(store.clock().now() + mins(15))
    );
}

#[test]
fn kv06_expires_at_in_the_past_makes_the_key_absent() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.key("k")
        .expires_at(common::start() - Duration::from_secs(1))
        .set(&1)
        .unwrap();
    assert_eq!(b.get("k").unwrap(), None);
}

#[test]
fn kv06_ttl_and_idle_together_are_invalid() {
    let (_d, store) = common::manual();
    let e = store.bucket::<i64>("b").ttl(mins(1)).idle(mins(1)).open().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(store.names().unwrap().is_empty(), "nothing written");
}

#[test]
fn kv06_expire_renews_and_keeps_value_and_version() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").ttl(mins(15)).open().unwrap();
    b.set("k", &9).unwrap();
    let before = b.entry("k").unwrap().unwrap();
    assert!(b.expire("k", mins(60)).unwrap());
    let after = b.entry("k").unwrap().unwrap();
    assert_eq!((after.value, after.version), (9, before.version));
    assert_eq!(after.expires_at, Some(common::start() + mins(60)));
}

const DAY: Duration = Duration::from_secs(86_400);

#[test]
fn kv07_idle_read_renews_once_a_thirtieth_has_passed_and_writes_nothing() {
    let (_d, store) = common::manual();
    let sessions = store.bucket::<String>("sessions").idle(30 * DAY).open().unwrap();
    sessions.under(7).set("t", &"web".into()).unwrap();
    let created = common::start() + 30 * DAY;
    store.clock().advance(DAY / 2).unwrap();
    sessions.under(7).get("t").unwrap();
    assert_eq!(store.maintain().unwrap().renewed, 0, "half a day is under a thirtieth");
    store.clock().advance(DAY).unwrap();
    for _ in 0..5 {
        assert!(sessions.under(7).has("t").unwrap());
    }
    let e = sessions.under(7).entry("t").unwrap().unwrap();
    assert_eq!(e.expires_at, Some(created), "the read itself writes nothing");
    assert_eq!(store.maintain().unwrap().renewed, 1, "one renewal however many reads");
    let renewed = sessions.under(7).entry("t").unwrap().unwrap();
    assert_eq!(renewed.expires_at, Some(common::start() + DAY * 3 / 2 + 30 * DAY));
    assert_eq!(renewed.version, e.version);
}

#[test]
fn kv07_renewal_never_extends_a_key_written_since() {
    let (_d, store) = common::manual();
    let s = store.bucket::<String>("sessions").idle(30 * DAY).open().unwrap();
    s.set("t", &"a".into()).unwrap();
    store.clock().advance(2 * DAY).unwrap();
    s.get("t").unwrap(); // asks for a renewal bound to this version
    s.delete("t").unwrap();
    s.key("t").ttl(DAY).set(&"b".into()).unwrap();
    assert_eq!(store.maintain().unwrap().renewed, 0);
    assert_eq!(
        s.entry("t").unwrap().unwrap().expires_at,
        Some(store.clock().now() + DAY)
    );
}

#[test]
fn kv07_key_in_its_last_minute_is_renewed_before_the_read_returns() {
    let (_d, store) = common::manual();
    let s = store.bucket::<String>("sessions").idle(30 * DAY).open().unwrap();
    s.set("t", &"a".into()).unwrap();
    store.clock().advance(30 * DAY - Duration::from_secs(30)).unwrap();
    assert_eq!(s.get("t").unwrap().as_deref(), Some("a"));
    let now = store.clock().now();
    assert_eq!(s.entry("t").unwrap().unwrap().expires_at, Some(now + 30 * DAY));
    store.clock().advance(DAY).unwrap();
    assert!(s.has("t").unwrap());
}

#[test]
fn kv07_list_and_all_renew_nothing() {
    let (_d, store) = common::manual();
    let s = store.bucket::<String>("sessions").idle(30 * DAY).open().unwrap();
    s.set("t", &"a".into()).unwrap();
    store.clock().advance(30 * DAY - Duration::from_secs(30)).unwrap();
    assert_eq!(s.list(&Default::default()).unwrap().entries.len(), 1);
    assert_eq!(s.all().count(), 1);
    assert_eq!(store.maintain().unwrap().renewed, 0);
    store.clock().advance(Duration::from_secs(31)).unwrap();
    assert!(!s.has("t").unwrap());
}

#[test]
fn kv06_maintain_deletes_expired_rows_and_their_spills() {
    let (_d, store) = common::manual();
    let b = store.bucket::<String>("b").ttl(mins(1)).open().unwrap();
    let keep = store.bucket::<String>("keep").open().unwrap();
    b.set("small", &"x".into()).unwrap();
    b.set("big", &"y".repeat(4000)).unwrap();
    keep.set("k", &"stays".into()).unwrap();
    store.clock().advance(mins(2)).unwrap();
    let m = store.maintain().unwrap();
    assert_eq!(m.expired, 2);
    let conn = rusqlite::Connection::open(store.file()).unwrap();
    let (cells, spilled): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM cells), (SELECT count(*) FROM spilled)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((cells, spilled), (1, 0));
    assert_eq!(keep.get("k").unwrap().as_deref(), Some("stays"));
}
