//! KV-1 keys, KV-2 names, KV-3 values.

mod common;

use serde::{Deserialize, Serialize};
use tinystore::{ErrorKind, Raw};

#[test]
fn kv01_integer_and_text_are_one_key() {
    let (_d, store) = common::manual();
    let b = store.bucket::<String>("k").open().unwrap();
    b.set(42, &"x".into()).unwrap();
    assert_eq!(b.get("42").unwrap().as_deref(), Some("x"));
    assert_eq!(b.get(b"42".as_slice()).unwrap().as_deref(), Some("x"));
    b.under(7).set("a", &"o".into()).unwrap();
    assert_eq!(b.under("7").get("a").unwrap().as_deref(), Some("o"));
}

#[test]
fn kv01_empty_key_and_owner_are_invalid() {
    let (_d, store) = common::manual();
    let b = store.bucket::<String>("k").open().unwrap();
    let e = b.set("", &"x".into()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.bucket(), Some("k"));
    assert_eq!(b.under("").get("a").unwrap_err().kind(), ErrorKind::Invalid);
}

#[test]
fn kv01_path_over_1kib_is_invalid_and_names_the_bucket() {
    let (dir, store) = common::manual();
    let b = store.bucket::<String>("long").open().unwrap();
    b.set("a".repeat(1000), &"fits".into()).unwrap();
    store.close().unwrap();
    let before = common::digest(&dir.path().join("kv.db"));
    let store = common::reopen(dir.path());
    let b = store.bucket::<String>("long").open().unwrap();
    let e = b.under("o".repeat(600)).set("k".repeat(600), &"x".into()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.bucket(), Some("long"));
    assert!(e.to_string().contains("1024"), "{e}");
    store.close().unwrap();
    assert_eq!(common::digest(&dir.path().join("kv.db")), before);
}

#[test]
fn kv01_splits_of_owners_and_key_never_collide() {
    let (_d, store) = common::manual();
    let b = store.bucket::<String>("split").open().unwrap();
    b.under("a").under("b").set("c", &"1".into()).unwrap();
    b.under("a/b").set("c", &"2".into()).unwrap();
    b.under("a\0b").set("c", &"3".into()).unwrap();
    b.under("a").set("b\0c", &"4".into()).unwrap();
    assert_eq!(b.under("a").under("b").get("c").unwrap().as_deref(), Some("1"));
    assert_eq!(b.under("a/b").get("c").unwrap().as_deref(), Some("2"));
    assert_eq!(b.under("a\0b").get("c").unwrap().as_deref(), Some("3"));
    let keys: Vec<_> = b.under("a").all().map(|e| e.unwrap().key).collect();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].as_bytes(), b"b\0c");
}

#[test]
fn kv02_names_are_checked() {
    let (_d, store) = common::manual();
    for bad in ["", "Sessions", "a!", "-a", "_a", &"a".repeat(65), "a b", "é"] {
        let e = store.bucket::<String>(bad).open().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "{bad:?}");
        assert!(e.message().contains(&format!("{bad:?}")), "{e}");
    }
    store.bucket::<String>(&"a".repeat(64)).open().unwrap();
    store.bucket::<String>("9-lives_ok").open().unwrap();
}

#[test]
fn kv03_values_round_trip_by_type() {
    let (_d, store) = common::manual();
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Session {
        user_id: i64,
        device: String,
    }
    let s = store.bucket::<String>("s").open().unwrap();
    s.set("u", &"héllo 😀".into()).unwrap();
    s.set("e", &String::new()).unwrap();
    assert_eq!(s.get("u").unwrap().as_deref(), Some("héllo 😀"));
    assert_eq!(s.get("e").unwrap().as_deref(), Some(""), "an empty string is a value");
    let i = store.bucket::<i64>("i").open().unwrap();
    i.set("min", &i64::MIN).unwrap();
    assert_eq!(i.get("min").unwrap(), Some(i64::MIN));
    let u = store.bucket::<u64>("u").open().unwrap();
    u.set("max", &u64::MAX).unwrap();
    assert_eq!(u.get("max").unwrap(), Some(u64::MAX));
    let f = store.bucket::<f64>("f").open().unwrap();
    for bits in [
        (-0.0f64).to_bits(),
        0x7FF8_0000_0000_0001,
        0x7FF0_0000_0000_0001,
        f64::NEG_INFINITY.to_bits(),
    ] {
        f.set("x", &f64::from_bits(bits)).unwrap();
        assert_eq!(f.get("x").unwrap().unwrap().to_bits(), bits);
    }
    let set = store.bucket::<()>("seen").open().unwrap();
    set.set("evt_1", &()).unwrap();
    assert!(set.has("evt_1").unwrap());
    assert_eq!(set.raw().entry(b"evt_1").unwrap().unwrap().value, Raw::Null);
    let j = store.bucket::<Session>("sessions").open().unwrap();
    let v = Session {
        user_id: 7,
        device: "web".into(),
    };
    j.set("t", &v).unwrap();
    assert_eq!(j.get("t").unwrap(), Some(v));
    let b = store.bucket::<bool>("b").open().unwrap();
    b.set("on", &true).unwrap();
    assert_eq!(b.raw().entry(b"on").unwrap().unwrap().value, Raw::Int(1));
}

#[test]
fn kv03_json_unwritable_is_invalid_and_nothing_is_written() {
    let (_d, store) = common::manual();
    let b = store.bucket::<Vec<f64>>("nums").open().unwrap();
    let e = b.set("k", &vec![1.0, f64::NAN]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.path(), Some("k"));
    assert!(!b.has("k").unwrap());
}

#[test]
fn kv03_value_over_1mib_is_limit_and_1mib_fits() {
    let (_d, store) = common::manual();
    let b = store.bucket::<Vec<u8>>("blobs").open().unwrap();
    let raw = b.raw();
    raw.set(b"max", Raw::Bytes(vec![7; 1 << 20]), Default::default())
        .unwrap();
    assert_eq!(raw.entry(b"max").unwrap().unwrap().value, Raw::Bytes(vec![7; 1 << 20]));
    let e = raw
        .set(b"over", Raw::Bytes(vec![7; (1 << 20) + 1]), Default::default())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert_eq!(e.path(), Some("over"));
    assert!(!raw.has(b"over").unwrap());
}

#[test]
fn kv03_spilled_values_read_back_and_are_freed() {
    let (_d, store) = common::manual();
    let b = store.bucket::<String>("big").open().unwrap();
    let big = "x".repeat(5000);
    b.set("k", &big).unwrap();
    assert_eq!(b.get("k").unwrap().as_deref(), Some(big.as_str()));
    b.set("k", &"small".into()).unwrap();
    b.set("k2", &big).unwrap();
    assert_eq!(b.take("k2").unwrap().as_deref(), Some(big.as_str()));
    let spilled: i64 = rusqlite::Connection::open(store.file())
        .unwrap()
        .query_row("SELECT count(*) FROM spilled", [], |r| r.get(0))
        .unwrap();
    assert_eq!(spilled, 0, "replaced and taken values leave no spilled rows");
}

#[test]
fn kv03_row_read_as_another_type_is_corrupt() {
    let (_d, store) = common::manual();
    store
        .bucket::<String>("mixed")
        .open()
        .unwrap()
        .set("k", &"7".into())
        .unwrap();
    let as_int = store.bucket::<i64>("mixed").open().unwrap();
    let e = as_int.get("k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert_eq!((e.bucket(), e.path()), (Some("mixed"), Some("k")));
}

#[test]
fn kv03_vec_u8_is_bytes_kept_as_a_bytes_row() {
    let (_d, store) = common::manual();
    let b = store.bucket::<Vec<u8>>("blobs").open().unwrap();
    b.set("k", &vec![0, 7, 255]).unwrap();
    assert_eq!(
        b.raw().entry(b"k").unwrap().unwrap().value,
        Raw::Bytes(vec![0, 7, 255]),
        "the row holds the bytes themselves, not JSON [0,7,255]"
    );
    assert_eq!(b.get("k").unwrap(), Some(vec![0, 7, 255]));
    b.raw()
        .set(b"from-raw", Raw::Bytes(b"hi".to_vec()), Default::default())
        .unwrap();
    assert_eq!(
        b.get("from-raw").unwrap(),
        Some(b"hi".to_vec()),
        "a bytes row reads as Vec<u8>"
    );
    b.raw().set(b"int", Raw::Int(7), Default::default()).unwrap();
    let e = b.get("int").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("Vec<u8>"), "{e}");
    let e = b.take("int").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(
        b.raw().has(b"int").unwrap(),
        "a take that cannot decode leaves the value"
    );
}
