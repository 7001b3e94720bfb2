//! Raw buckets (KV-3: a row read as it is keeps, whatever type wrote it) and
//! a bucket's own codec (a value it cannot decode is `Corrupt` and a take
//! keeps it, KV-5).

mod common;

use serde::{Deserialize, Serialize};
use tinystore::{CodecError, ErrorKind, Raw};

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Session {
    user_id: i64,
    device: String,
}

fn bytes(b: &[u8]) -> Raw {
    Raw::Bytes(b.to_vec())
}

#[test]
fn kv03_raw_reads_what_every_type_wrote() {
    let (_d, store) = common::manual();
    store
        .bucket::<String>("text")
        .open()
        .unwrap()
        .set("a", &"héllo".into())
        .unwrap();
    store
        .bucket::<String>("text")
        .open()
        .unwrap()
        .set("empty", &String::new())
        .unwrap();
    store.bucket::<i64>("ints").open().unwrap().set("a", &-7).unwrap();
    store.bucket::<bool>("flags").open().unwrap().set("a", &true).unwrap();
    store.bucket::<u64>("big").open().unwrap().set("a", &u64::MAX).unwrap();
    store.bucket::<f64>("floats").open().unwrap().set("a", &-0.0).unwrap();
    store.bucket::<()>("set").open().unwrap().set("a", &()).unwrap();
    let s = Session {
        user_id: 7,
        device: "web".into(),
    };
    store
        .bucket::<Session>("sessions")
        .open()
        .unwrap()
        .under(7)
        .set("t", &s)
        .unwrap();

    let raw = |name: &str| store.raw_bucket(name).open().unwrap();
    assert_eq!(raw("text").get("a").unwrap(), Some(bytes("héllo".as_bytes())));
    // An empty string is empty bytes, not nothing.
    assert_eq!(raw("text").get("empty").unwrap(), Some(bytes(b"")));
    assert_eq!(raw("ints").get("a").unwrap(), Some(Raw::Int(-7)));
    assert_eq!(raw("flags").get("a").unwrap(), Some(Raw::Int(1)));
    assert_eq!(raw("big").get("a").unwrap(), Some(bytes(&[0xFF; 8])));
    assert_eq!(
        raw("floats").get("a").unwrap(),
        Some(bytes(&(-0.0f64).to_bits().to_be_bytes()))
    );
    assert_eq!(raw("set").get("a").unwrap(), Some(Raw::Null));
    assert_eq!(raw("set").get("missing").unwrap(), None);
    assert_eq!(
        raw("sessions").under(7).get("t").unwrap(),
        Some(bytes(br#"{"userId":7,"device":"web"}"#))
    );
    // The untyped RawBucket underneath reads the same rows.
    let e = raw("text").raw().entry(b"empty").unwrap().unwrap();
    assert_eq!(e.value, bytes(b""));
}

#[test]
fn kv03_raw_rows_read_back_by_the_typed_bucket() {
    let (_d, store) = common::manual();
    let raw = |name: &str| store.raw_bucket(name).open().unwrap();
    raw("ints").set("a", &Raw::Int(42)).unwrap();
    raw("text").set("a", &bytes(b"hi")).unwrap();
    raw("text").set("empty", &Raw::text("")).unwrap();
    raw("flags").set("a", &Raw::bool(false)).unwrap();
    raw("floats").set("a", &Raw::float(f64::INFINITY)).unwrap();
    raw("big").set("a", &Raw::uint64(u64::MAX - 1)).unwrap();
    raw("set").set("a", &Raw::Null).unwrap();
    raw("sessions")
        .set("s", &bytes(br#"{"user_id":1,"device":"cli"}"#))
        .unwrap();

    assert_eq!(store.bucket::<i64>("ints").open().unwrap().get("a").unwrap(), Some(42));
    let text = store.bucket::<String>("text").open().unwrap();
    assert_eq!(text.get("a").unwrap().as_deref(), Some("hi"));
    assert_eq!(text.get("empty").unwrap().as_deref(), Some(""));
    assert_eq!(
        store.bucket::<bool>("flags").open().unwrap().get("a").unwrap(),
        Some(false)
    );
    assert_eq!(
        store.bucket::<f64>("floats").open().unwrap().get("a").unwrap(),
        Some(f64::INFINITY)
    );
    assert_eq!(
        store.bucket::<u64>("big").open().unwrap().get("a").unwrap(),
        Some(u64::MAX - 1)
    );
    let set = store.bucket::<()>("set").open().unwrap();
    assert!(set.has("a").unwrap());
    assert_eq!(set.get("a").unwrap(), Some(()));
    assert_eq!(
        store.bucket::<Session>("sessions").open().unwrap().get("s").unwrap(),
        Some(Session {
            user_id: 1,
            device: "cli".into()
        })
    );
    // A raw row of another kind than the type's is Corrupt, naming the key.
    let e = store.bucket::<i64>("text").open().unwrap().get("a").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert_eq!((e.bucket(), e.path()), (Some("text"), Some("a")));
}

#[test]
fn kv03_raw_bucket_takes_and_lists_any_row() {
    let (_d, store) = common::manual();
    store
        .bucket::<String>("mixed")
        .open()
        .unwrap()
        .set("a", &"x".into())
        .unwrap();
    let raw = store.raw_bucket("mixed").open().unwrap();
    raw.set("b", &Raw::Int(2)).unwrap();
    raw.set("c", &Raw::Null).unwrap();
    let page = raw.list(&Default::default()).unwrap();
    let rows: Vec<_> = page.entries.into_iter().map(|e| e.value).collect();
    assert_eq!(rows, vec![bytes(b"x"), Raw::Int(2), Raw::Null]);
    assert_eq!(raw.take("a").unwrap(), Some(bytes(b"x")));
    assert_eq!(raw.take("a").unwrap(), None);
}

/// Points kept as the text "x,y".
struct PointText;

impl tinystore::Codec<(i32, i32)> for PointText {
    fn encode(&self, p: &(i32, i32)) -> Result<Vec<u8>, CodecError> {
        if p.0 == i32::MIN {
            return Err("x is out of range".into());
        }
        Ok(format!("{},{}", p.0, p.1).into_bytes())
    }
    fn decode(&self, b: &[u8]) -> Result<(i32, i32), CodecError> {
        let (x, y) = std::str::from_utf8(b)?.split_once(',').ok_or("no comma")?;
        Ok((x.parse()?, y.parse()?))
    }
}

#[test]
fn codec_replaces_the_choice_by_type() {
    let (_d, store) = common::manual();
    let points = store.bucket::<(i32, i32)>("points").codec(PointText).open().unwrap();
    points.under("map").set("home", &(3, -4)).unwrap();
    assert_eq!(points.under("map").get("home").unwrap(), Some((3, -4)));
    // The codec's bytes are the row.
    let raw = store.raw_bucket("points").open().unwrap();
    assert_eq!(raw.under("map").get("home").unwrap(), Some(bytes(b"3,-4")));
    // What the codec cannot encode is Invalid, naming the key, and nothing is written.
    let e = points.set("far", &(i32::MIN, 0)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!((e.bucket(), e.path()), (Some("points"), Some("far")));
    assert!(e.message().contains("out of range"), "{e}");
    assert!(!points.has("far").unwrap());
    // In a transaction the codec is used too.
    store
        .tx(|tx| {
            let p = tx.with(&points.under("map")).take("home")?;
            assert_eq!(p, Some((3, -4)));
            tx.with(&points).set("work", &(1, 2))?;
            Ok(())
        })
        .unwrap();
    assert_eq!(raw.get("work").unwrap(), Some(bytes(b"1,2")));
}

#[test]
fn kv05_codec_that_cannot_decode_is_corrupt_and_take_keeps_the_value() {
    let (_d, store) = common::manual();
    let points = store.bucket::<(i32, i32)>("points").codec(PointText).open().unwrap();
    let raw = store.raw_bucket("points").open().unwrap();
    raw.under("u").set("bad", &bytes(b"not a point")).unwrap();
    raw.set("int", &Raw::Int(5)).unwrap();

    let e = points.under("u").get("bad").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert_eq!((e.bucket(), e.path()), (Some("points"), Some("u/bad")));
    let e = points.under("u").take("bad").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert_eq!((e.bucket(), e.path()), (Some("points"), Some("u/bad")));
    assert_eq!(raw.under("u").get("bad").unwrap(), Some(bytes(b"not a point")));
    // An integer row does not reach the codec, which reads bytes.
    assert_eq!(points.take("int").unwrap_err().kind(), ErrorKind::Corrupt);
    assert_eq!(raw.get("int").unwrap(), Some(Raw::Int(5)));
    // Inside a transaction as well, and the transaction still commits.
    store
        .tx(|tx| {
            let e = tx.with(&points.under("u")).take("bad").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt);
            tx.with(&points).set("ok", &(0, 0))?;
            Ok(())
        })
        .unwrap();
    assert_eq!(raw.under("u").get("bad").unwrap(), Some(bytes(b"not a point")));
    assert_eq!(points.get("ok").unwrap(), Some((0, 0)));
}

#[test]
fn kv05_codec_that_panics_is_corrupt_and_the_store_goes_on() {
    let (_d, store) = common::manual();
    let encode = |v: &String| -> Result<Vec<u8>, CodecError> { Ok(v.as_bytes().to_vec()) };
    let decode = |b: &[u8]| -> Result<String, CodecError> {
        if b == b"boom" {
            panic!("the codec broke");
        }
        Ok(String::from_utf8(b.to_vec())?)
    };
    let notes = store.bucket::<String>("notes").codec((encode, decode)).open().unwrap();
    notes.set("a", &"boom".to_string()).unwrap();
    let e = notes.take("a").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("the codec broke"), "{e}");
    assert_eq!(
        store.raw_bucket("notes").open().unwrap().get("a").unwrap(),
        Some(bytes(b"boom"))
    );
    // The writer survived the panic: later writes and takes work.
    notes.set("b", &"fine".to_string()).unwrap();
    assert_eq!(notes.take("b").unwrap().as_deref(), Some("fine"));
}
