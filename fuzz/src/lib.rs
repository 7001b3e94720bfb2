//! The checks behind TinyStore's fuzz targets, as plain functions of bytes.
//!
//! Each `fuzz_targets/*.rs` calls one of these, and the core's test
//! `core/tests/fuzz_corpus.rs` includes this very file and runs every file
//! of `corpus/<target>/` through it, so `cargo test` replays the corpus on
//! stable Rust without cargo-fuzz. A check fails by panicking: any input
//! that panics, here or inside the core, is a bug.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tinystore::{
    Branch, ErrorKind, MAX_DURATION_MILLIS, MAX_PATH, Raw, decode, duration_from_millis, encode, parse_duration,
    parse_rate, split_path,
};

/// Splits fuzz input into length-prefixed parts: each part is one length
/// byte and that many bytes (cut short at the end of the input).
fn parts(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some((&n, tail)) = rest.split_first() {
        let n = (n as usize).min(tail.len());
        out.push(&tail[..n]);
        rest = &tail[n..];
    }
    out
}

/// Key paths (KV-1, KV-9): a path built from owners and a key splits back
/// into them, lies inside its branch's ranges and sorts as the key's text;
/// any bytes given to `split_path` either fail as `Corrupt` or are the one
/// encoding of what they split into.
pub fn key_paths(data: &[u8]) {
    // Arbitrary bytes as a stored path.
    match split_path(data) {
        Ok((owners, key)) => {
            let branch = owners.iter().fold(Branch::root(), |b, o| b.child(o));
            assert_eq!(
                branch.after(&key.0),
                data,
                "split_path accepted a path it does not write"
            );
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}"),
    }

    // Owners and two keys from the input: the first byte says how many owners.
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let p = parts(rest);
    let n_owners = (head as usize % 4).min(p.len());
    let (owners, keys) = p.split_at(n_owners);
    let branch = owners.iter().fold(Branch::root(), |b, o| b.child(o));
    let key = keys.first().copied().unwrap_or(b"");
    match branch.path("fuzz", key) {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
            assert_eq!(e.bucket(), Some("fuzz"), "{e}");
            let escaped: usize = owners
                .iter()
                .chain([&key])
                .map(|o| o.len() + o.iter().filter(|&&b| b == 0).count())
                .sum();
            let bad =
                key.is_empty() || owners.iter().any(|o| o.is_empty()) || escaped + 2 * owners.len() + 1 > MAX_PATH;
            assert!(bad, "a good path was refused: {e}");
        }
        Ok(path) => {
            assert!(path.len() <= MAX_PATH);
            assert!(!key.is_empty() && owners.iter().all(|o| !o.is_empty()));
            let (o, k) = split_path(&path).expect("a written path splits");
            assert_eq!(o, owners.iter().map(|o| o.to_vec()).collect::<Vec<_>>());
            assert_eq!(k.0, key);
            assert_eq!(branch.key_of(&path).unwrap().0, key);
            let (lo, hi) = branch.own_keys();
            assert!(lo <= path && path < hi, "the path lies in its branch's own keys");
            // Every ancestor's subtree holds it; no ancestor's own keys do.
            let mut anc = Branch::root();
            for o in owners {
                let (lo, hi) = anc.subtree();
                assert!(lo <= path && path < hi);
                let (lo, hi) = anc.own_keys();
                assert!(
                    !(lo <= path && path < hi),
                    "a deeper key is listed as an ancestor's own"
                );
                anc = anc.child(o);
            }
            // Paths in one branch sort as their keys do.
            if let Some(other) = keys.get(1).filter(|k| !k.is_empty())
                && let Ok(p2) = branch.path("fuzz", other)
            {
                assert_eq!(key.cmp(other), path.cmp(&p2), "paths sort as their keys");
            }
        }
    }
}

/// A row from fuzz input: the first byte picks nothing, an integer, or bytes.
fn row(data: &[u8]) -> Raw {
    match data.split_first() {
        None => Raw::Null,
        Some((0, _)) => Raw::Null,
        Some((1, rest)) => {
            let mut b = [0u8; 8];
            let n = rest.len().min(8);
            b[..n].copy_from_slice(&rest[..n]);
            Raw::Int(i64::from_be_bytes(b))
        }
        Some((_, rest)) => Raw::Bytes(rest.to_vec()),
    }
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Session {
    user: i64,
    device: String,
    scopes: Vec<String>,
    expires: Option<u64>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
enum Plan {
    Free,
    Paid { seats: u32 },
    Trial(i64),
}

fn eq<T: PartialEq>(a: &T, b: &T) -> bool {
    a == b
}

/// Decodes `raw` as `T`: a failure is `Corrupt`, and a success encodes back
/// to a row that decodes to the same value.
fn decodes_as<T>(raw: &Raw, same: impl Fn(&T, &T) -> bool) -> Option<T>
where
    T: Serialize + DeserializeOwned + std::fmt::Debug + 'static,
{
    match decode::<T>(raw) {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
            None
        }
        Ok(v) => {
            let again = encode(&v).unwrap_or_else(|e| panic!("{v:?} decoded but does not encode: {e}"));
            let back = decode::<T>(&again).unwrap_or_else(|e| panic!("{v:?} does not decode from its own row: {e}"));
            assert!(same(&v, &back), "{v:?} came back as {back:?}");
            Some(v)
        }
    }
}

/// Value decoding (KV-3): any row, read as any type, by serde (`decode`) or
/// as bindings read it (`Raw::as_*`), is a value or `Corrupt`, never a
/// panic; a value read writes back as the row it came from; and the two
/// ways of reading agree.
pub fn value_decoding(data: &[u8]) {
    let raw = row(data);
    let i = decodes_as::<i64>(&raw, eq);
    let u = decodes_as::<u64>(&raw, eq);
    let f = decodes_as::<f64>(&raw, |a: &f64, b: &f64| a.to_bits() == b.to_bits());
    let f32_ = decodes_as::<f32>(&raw, |a: &f32, b: &f32| a.to_bits() == b.to_bits());
    let b = decodes_as::<bool>(&raw, eq);
    let s = decodes_as::<String>(&raw, eq);
    let unit = decodes_as::<()>(&raw, eq);
    decodes_as::<i32>(&raw, eq);
    decodes_as::<u8>(&raw, eq);
    decodes_as::<char>(&raw, eq);
    decodes_as::<Option<i64>>(&raw, eq);
    decodes_as::<Vec<i64>>(&raw, eq);
    decodes_as::<BTreeMap<String, i64>>(&raw, eq);
    decodes_as::<Session>(&raw, eq);
    decodes_as::<Plan>(&raw, eq);
    // A self-describing type may read a row back as another JSON value
    // (see docs/reliability.md), but never panics or answers another kind.
    if let Err(e) = decode::<serde_json::Value>(&raw) {
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    }

    // The bindings' way: each reading is Corrupt or the row it came from.
    let corrupt = |e: tinystore::Error| assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    let ai = raw.as_int().map_err(corrupt).ok();
    if let Some(v) = ai {
        assert_eq!(Raw::int(v), raw);
    }
    let ab = raw.as_bool().map_err(corrupt).ok();
    if let Some(v) = ab {
        assert_eq!(Raw::bool(v), raw);
    }
    let at = raw.as_text().map_err(corrupt).ok();
    if let Some(v) = at {
        assert_eq!(Raw::text(v), raw);
    }
    let au = raw.as_uint64().map_err(corrupt).ok();
    if let (Some(v), Raw::Bytes(_)) = (au, &raw) {
        assert_eq!(Raw::uint64(v), raw);
    }
    let af = raw.as_float().map_err(corrupt).ok();
    if let (Some(v), Raw::Bytes(x)) = (af, &raw)
        && x.len() == 8
    {
        assert_eq!(Raw::float(v), raw);
    }
    let af32 = raw.as_float32().map_err(corrupt).ok();
    if let (Some(v), Raw::Bytes(x)) = (af32, &raw)
        && x.len() == 4
    {
        assert_eq!(Raw::float32(v), raw);
    }
    let am = raw.as_set_member().map_err(corrupt).ok();
    if am.is_some() {
        assert_eq!(raw, Raw::Null);
    }
    if let Ok(j) = raw.as_json().map_err(corrupt) {
        assert_eq!(Raw::json(j.to_vec()), raw);
    }
    if let Ok(x) = raw.as_bytes().map_err(corrupt) {
        assert_eq!(Raw::Bytes(x.to_vec()), raw);
    }

    // Rust's typed reading and the bindings' reading agree (KV-3: every
    // language reads what every other wrote).
    assert_eq!(i, ai, "i64 and as_int disagree on {raw:?}");
    assert_eq!(u, au, "u64 and as_uint64 disagree on {raw:?}");
    assert_eq!(b, ab, "bool and as_bool disagree on {raw:?}");
    assert_eq!(s.as_deref(), at, "String and as_text disagree on {raw:?}");
    assert_eq!(
        f.map(f64::to_bits),
        af.map(f64::to_bits),
        "f64 and as_float disagree on {raw:?}"
    );
    assert_eq!(
        f32_.map(f32::to_bits),
        af32.map(f32::to_bits),
        "f32 and as_float32 disagree on {raw:?}"
    );
    assert_eq!(unit, am, "() and as_set_member disagree on {raw:?}");
}

/// Writes `ms` the way a person would: units from largest to smallest.
fn spell(mut ms: u64) -> String {
    const UNITS: [(&str, u64); 6] = [
        ("w", 604_800_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ];
    let mut out = String::new();
    for (u, size) in UNITS {
        if ms >= size {
            out += &format!("{}{u}", ms / size);
            ms %= size;
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

/// Durations and rates: any text parses or is `Invalid` with a message
/// that quotes it; what parses is plain ASCII; a duration spelled out
/// canonically parses back to itself.
pub fn durations_and_rates(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let quoted = format!("{text:?}");
    match parse_duration(&text) {
        Ok(d) => {
            assert!(
                !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric()),
                "{quoted}"
            );
            let ms = u64::try_from(d.as_millis()).expect("a parsed duration fits u64 ms");
            assert_eq!(
                parse_duration(&spell(ms)).unwrap(),
                d,
                "{quoted} spelled as {}",
                spell(ms)
            );
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
            assert!(e.message().contains(&quoted), "the error quotes the input: {e}");
        }
    }
    match parse_rate(&text) {
        Ok((n, span)) => {
            assert!(n > 0 && span > Duration::ZERO, "{quoted}");
            assert!(text.is_ascii() && !text.contains(char::is_whitespace), "{quoted}");
            let (count, _) = text.split_once('/').expect("a rate has a '/'");
            assert_eq!(count.parse::<u64>().ok(), Some(n), "{quoted}");
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
            assert!(e.message().contains(&quoted), "the error quotes the input: {e}");
        }
    }
    // Eight bytes as a number of ms: its canonical spelling parses back.
    if data.len() >= 8 {
        let ms = u64::from_le_bytes(data[..8].try_into().unwrap()) >> 4;
        let spelled = spell(ms);
        match parse_duration(&spelled) {
            Ok(d) => assert_eq!(d, Duration::from_millis(ms), "{spelled}"),
            Err(e) => assert!(e.message().contains("too long"), "{spelled}: {e}"),
        }
        // The same eight bytes as a double: a duration in ms as Node gives one
        // is a span exactly when it is a number from 0 to 2^53 - 1, never
        // saturated, and a refusal names the number.
        let ms = f64::from_le_bytes(data[..8].try_into().unwrap());
        match duration_from_millis(ms, "a duration") {
            Ok(d) => {
                assert!((0.0..=MAX_DURATION_MILLIS).contains(&ms), "{ms} ms was accepted");
                assert_eq!(d.as_millis(), ms.trunc() as u128, "{ms} ms");
            }
            Err(e) => {
                assert!(!(0.0..=MAX_DURATION_MILLIS).contains(&ms), "{ms} ms was refused: {e}");
                assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
                assert!(e.message().contains(&ms.to_string()), "the error names {ms}: {e}");
            }
        }
    }
}
