//! The bad-input catalogue (KV-18) for the Rust API: every bad
//! name, key, value, duration, rate, window, option and call is refused with
//! the right kind and a message naming what was wrong, and the file is left
//! exactly as it was: kv.db and kv.db-wal hash the same before and after.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use tinystore::{Error, ErrorKind, ListOptions, Raw, Store, WriteOptions, parse_duration, parse_rate};

/// The hashes of kv.db and kv.db-wal. (Some refusals happen inside the
/// writer, in a group that then commits nothing; the hashes show that.)
fn state(store: &Store) -> (String, Option<String>) {
    let wal = store.dir().join("kv.db-wal");
    (
        common::digest(&store.file()),
        wal.exists().then(|| common::digest(&wal)),
    )
}

/// One refusal: what was given, the error it got, the kind it must have and
/// words its message must hold (the input itself, where it can be quoted).
struct Case {
    input: String,
    error: Error,
    kind: ErrorKind,
    names: Vec<String>,
}

fn case(input: impl Into<String>, r: Result<impl std::fmt::Debug, Error>, kind: ErrorKind, names: &[&str]) -> Case {
    let input = input.into();
    let error = match r {
        Ok(v) => panic!("{input} was accepted: {v:?}"),
        Err(e) => e,
    };
    Case {
        input,
        error,
        kind,
        names: names.iter().map(|s| s.to_string()).collect(),
    }
}

fn check(cases: Vec<Case>) {
    for c in &cases {
        assert_eq!(c.error.kind(), c.kind, "{}: {}", c.input, c.error);
        let shown = c.error.to_string();
        for n in &c.names {
            assert!(
                shown.contains(n.as_str()),
                "{}: the error should name {n:?}: {shown}",
                c.input
            );
        }
    }
    eprintln!("{} bad inputs refused", cases.len());
}

/// A store with a handle of every kind already opened, so that the cases
/// below register nothing.
struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
}

fn fixture() -> Fixture {
    let (dir, store) = common::manual();
    store.bucket::<String>("texts").open().unwrap();
    store.bucket::<Vec<f64>>("numbers").open().unwrap();
    store.counters("attempts").open().unwrap();
    store
        .rate_limit("guesses")
        .rate(5, Duration::from_secs(60))
        .open()
        .unwrap();
    store
        .quota("messages")
        .window("daily", 100, Duration::from_secs(86_400))
        .open()
        .unwrap();
    store.once::<String>("sends").open().unwrap();
    store
        .bucket::<String>("texts")
        .open()
        .unwrap()
        .set("kept", &"v".into())
        .unwrap();
    Fixture { _dir: dir, store }
}

fn run(f: &Fixture, cases: impl FnOnce(&Store) -> Vec<Case>) {
    // A blocking write queues behind every write still in flight (a `once`
    // run lets go of its key after it returns), so the file has settled.
    let texts = f.store.bucket::<String>("texts").open().unwrap();
    texts.set("settled", &"v".into()).unwrap();
    let before = state(&f.store);
    let cases = cases(&f.store);
    assert_eq!(state(&f.store), before, "a refused input changed the file");
    check(cases);
}

#[test]
fn kv18_bad_names_are_invalid_and_write_nothing() {
    let f = fixture();
    run(&f, |s| {
        let mut cases = Vec::new();
        let long = "a".repeat(65);
        for name in [
            "",
            "Sessions",
            "a b",
            "tab\there",
            "ünï",
            "a\0b",
            "-lead",
            "_lead",
            "a/b",
            "a.b",
            &long,
        ] {
            let q = format!("{name:?}");
            cases.push(case(
                format!("bucket {q}"),
                s.bucket::<i64>(name).open(),
                ErrorKind::Invalid,
                &[&q],
            ));
            cases.push(case(
                format!("counters {q}"),
                s.counters(name).open(),
                ErrorKind::Invalid,
                &[&q],
            ));
        }
        // A name keeps its kind (KV-2).
        cases.push(case(
            "texts as counters",
            s.counters("texts").open(),
            ErrorKind::Invalid,
            &["texts"],
        ));
        cases.push(case(
            "attempts as a bucket",
            s.bucket::<i64>("attempts").open(),
            ErrorKind::Invalid,
            &["attempts"],
        ));
        cases.push(case(
            "sends as a rate limit",
            s.rate_limit("sends").rate(1, Duration::from_secs(1)).open(),
            ErrorKind::Invalid,
            &["sends"],
        ));
        cases
    });
}

#[test]
fn kv18_bad_keys_are_invalid_naming_bucket_and_path_and_write_nothing() {
    let f = fixture();
    let b = f.store.bucket::<String>("texts").open().unwrap();
    let raw = b.raw().clone();
    run(&f, |_| {
        let nuls = vec![0u8; 600]; // 600 bytes, 1200 once each NUL is escaped
        let owner = "o".repeat(1020);
        vec![
            case(
                "600 NULs",
                raw.set(&nuls, Raw::text("v"), WriteOptions::default()),
                ErrorKind::Invalid,
                &["1024"],
            ),
            case(
                "1020-byte owner, list",
                b.under(&owner).under("x").list(&ListOptions::default()),
                ErrorKind::Invalid,
                &["1024"],
            ),
            case(
                "1020-byte owner, clear",
                b.under(&owner).under("x").clear(),
                ErrorKind::Invalid,
                &["1024"],
            ),
        ]
    });
}

#[test]
fn kv18_bad_values_are_refused_before_anything_is_written() {
    let f = fixture();
    let texts = f.store.bucket::<String>("texts").open().unwrap();
    let numbers = f.store.bucket::<Vec<f64>>("numbers").open().unwrap();
    let wide = f.store.bucket::<i128>("texts").open().unwrap();
    let huge = f.store.bucket::<u128>("texts").open().unwrap();
    let pairs = f.store.bucket::<HashMap<(i32, i32), i32>>("texts").open().unwrap();
    let raw = texts.raw().clone();
    run(&f, |_| {
        let big = "x".repeat((1 << 20) + 1);
        vec![
            case(
                "a value over 1 MiB",
                texts.set("k", &big),
                ErrorKind::Limit,
                &["1048577", "1 MiB", "texts", "k"],
            ),
            case(
                "a value over 1 MiB, create",
                texts.create("k", &big),
                ErrorKind::Limit,
                &["1 MiB"],
            ),
            case(
                "a value over 1 MiB, kept",
                texts.set("kept", &big),
                ErrorKind::Limit,
                &["1 MiB", "texts", "kept"],
            ),
            case(
                "a raw value over 1 MiB",
                raw.set(b"k", Raw::Bytes(vec![0; (1 << 20) + 1]), WriteOptions::default()),
                ErrorKind::Limit,
                &["1 MiB"],
            ),
            case(
                "NaN inside JSON",
                numbers.set("k", &vec![1.0, f64::NAN]),
                ErrorKind::Invalid,
                &["NaN", "numbers"],
            ),
            case(
                "infinity inside JSON",
                numbers.set("k", &vec![f64::INFINITY]),
                ErrorKind::Invalid,
                &["inf"],
            ),
            case(
                "i128 past int64",
                wide.set("k", &(i128::from(i64::MAX) + 1)),
                ErrorKind::Invalid,
                &["int64"],
            ),
            case(
                "u128 past uint64",
                huge.set("k", &(u128::from(u64::MAX) + 1)),
                ErrorKind::Invalid,
                &["uint64"],
            ),
            case(
                "a map JSON cannot key",
                pairs.set("k", &HashMap::from([((1, 2), 3)])),
                ErrorKind::Invalid,
                &["JSON", "texts"],
            ),
        ]
    });
}

#[test]
fn kv18_bad_durations_and_rates_are_invalid_quoting_them() {
    let f = fixture();
    run(&f, |_| {
        let mut cases = Vec::new();
        for d in [
            "",
            "10",
            "-1s",
            "1.5h",
            "1 h",
            " 1h",
            "1hr",
            "90mins",
            "30m1h",
            "1h1h",
            "NaN",
            "1e3s",
            "١٠s",
            "99999999999999999999w",
            "30600000000w",
        ] {
            let q = format!("{d:?}");
            cases.push(case(
                format!("duration {q}"),
                parse_duration(d),
                ErrorKind::Invalid,
                &[&q],
            ));
        }
        for r in [
            "",
            "10",
            "/s",
            "0/s",
            "-1/s",
            "+10/s",
            "1.5/s",
            "NaN/s",
            "1e309/s",
            "10/fortnight",
            "10 / s",
            "10/s;x",
            "١٠/s",
            "5/0s",
            "99999999999999999999/s",
        ] {
            let q = format!("{r:?}");
            cases.push(case(format!("rate {q}"), parse_rate(r), ErrorKind::Invalid, &[&q]));
        }
        cases
    });
}

#[test]
fn kv18_bad_limits_and_windows_are_invalid_naming_them() {
    let f = fixture();
    let minute = Duration::from_secs(60);
    let attempts = f.store.counters("attempts").open().unwrap();
    attempts.add("k", i64::MAX - 1).unwrap();
    attempts.add("low", i64::MIN).unwrap();
    run(&f, |s| {
        vec![
            case(
                "a rate limit without a rate",
                s.rate_limit("r0").open(),
                ErrorKind::Invalid,
                &["rate", "r0"],
            ),
            case(
                "rate 0",
                s.rate_limit("r0").rate(0, minute).open(),
                ErrorKind::Invalid,
                &["0", "r0"],
            ),
            case(
                "burst 0",
                s.rate_limit("r0").rate(5, minute).burst(0).open(),
                ErrorKind::Invalid,
                &["burst"],
            ),
            case(
                "a zero span",
                s.rate_limit("r0").rate(5, Duration::ZERO).open(),
                ErrorKind::Invalid,
                &["span"],
            ),
            case(
                "a quota without windows",
                s.quota("q0").open(),
                ErrorKind::Invalid,
                &["1 to 8", "q0"],
            ),
            case(
                "window \"\"",
                s.quota("q0").window("", 1, minute).open(),
                ErrorKind::Invalid,
                &["\"\""],
            ),
            case(
                "a window twice",
                s.quota("q0").window("day", 1, minute).window("day", 2, minute).open(),
                ErrorKind::Invalid,
                &["\"day\"", "twice"],
            ),
            case(
                "a window limit of 0",
                s.quota("q0").window("day", 0, minute).open(),
                ErrorKind::Invalid,
                &["\"day\"", "0"],
            ),
            case(
                "a window limit past int64",
                s.quota("q0").window("day", u64::MAX, minute).open(),
                ErrorKind::Invalid,
                &["\"day\"", "int64"],
            ),
            case(
                "a window under 1ms",
                s.quota("q0").window("day", 1, Duration::from_micros(10)).open(),
                ErrorKind::Invalid,
                &["\"day\"", "1ms"],
            ),
            case(
                "a counter past int64",
                attempts.add("k", 2),
                ErrorKind::Limit,
                &["attempts", "k"],
            ),
            case(
                "a counter below int64",
                attempts.add("low", -1),
                ErrorKind::Limit,
                &["attempts", "low"],
            ),
        ]
    });
    assert_eq!(
        attempts.get("k").unwrap(),
        i64::MAX - 1,
        "a refused add changes nothing"
    );
}

#[test]
fn kv18_bad_calls_are_invalid_and_write_nothing() {
    let f = fixture();
    let texts = f.store.bucket::<String>("texts").open().unwrap();
    let sends = f.store.once::<String>("sends").open().unwrap();
    let system = Store::open(tempfile::tempdir().unwrap().path()).unwrap();
    // The outer run claims the key, a write of its own; the inner run is
    // the bad call, and writes nothing.
    let inner = sends.run("k", || {
        let before = state(&f.store);
        let inner = sends.run("k", || Ok("inner".to_string()));
        assert_eq!(state(&f.store), before, "a run inside its own run wrote");
        Err(inner.expect_err("a run inside its own run was accepted"))
    });
    check(vec![case(
        "a once run inside its own run",
        inner,
        ErrorKind::Invalid,
        &["sends", "k"],
    )]);
    run(&f, |s| {
        let page = |n| ListOptions {
            after: None,
            limit: Some(n),
        };
        vec![
            case(
                "a page of 0",
                texts.list(&page(0)),
                ErrorKind::Invalid,
                &["not 0", "texts"],
            ),
            case(
                "a page of 1001",
                texts.list(&page(1001)),
                ErrorKind::Invalid,
                &["not 1001", "texts"],
            ),
            case(
                "the clock set back",
                s.clock().set(common::start() - Duration::from_secs(1)),
                ErrorKind::Invalid,
                &["never moves back"],
            ),
            case(
                "the system clock moved",
                system.clock().advance(Duration::from_secs(1)),
                ErrorKind::Invalid,
                &["test clock"],
            ),
            case(
                "a write around a transaction from inside it",
                s.tx(|_| texts.set("k", &"v".into())),
                ErrorKind::Invalid,
                &["transaction"],
            ),
            case(
                "a transaction inside a transaction",
                s.tx(|_| s.tx(|_| Ok(()))),
                ErrorKind::Invalid,
                &["transaction"],
            ),
        ]
    });
}

#[test]
fn kv18_bad_store_paths_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, b"mine").unwrap();
    let cwd = std::env::current_dir().unwrap();
    let cases = vec![
        case(
            "an empty path",
            Store::open("").map(|_| ()),
            ErrorKind::Invalid,
            &["empty"],
        ),
        case(
            "a path with a NUL",
            Store::open("a\0b").map(|_| ()),
            ErrorKind::Invalid,
            &["NUL"],
        ),
        case(
            "a path that is a file",
            Store::open(&file).map(|_| ()),
            ErrorKind::Invalid,
            &["notes.txt"],
        ),
        case(
            "a path inside a file",
            Store::open(file.join("store")).map(|_| ()),
            ErrorKind::Invalid,
            &["notes.txt"],
        ),
    ];
    check(cases);
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");
    assert!(
        !cwd.join("kv.db").exists(),
        "an empty path opened kv.db in the working directory"
    );
}
