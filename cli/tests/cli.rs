//! The `tinystore` command against a store written through the Rust API.

mod common;

use std::time::Duration;

use common::tinystore;
use serde_json::Value;

fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let store = tinystore::Store::open(dir.path()).unwrap();
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
        .ttl(Duration::from_secs(900))
        .open()
        .unwrap();
    codes.set("c0de", &7).unwrap();
    store.close().unwrap();
    dir
}

#[test]
fn list_prints_a_table_with_kind_preview_version_and_expiry() {
    let dir = fixture();
    let d = dir.path().to_str().unwrap();
    let (ok, out, err) = tinystore(&["kv", "list", "sessions", "--dir", d]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("KEY") && lines[0].contains("EXPIRES"), "{out}");
    assert!(
        lines[1].starts_with("7/d1g3st") && lines[1].contains("json") && lines[1].contains("\"device\":\"web\""),
        "{out}"
    );
    assert!(lines[1].contains("(in 29d)") || lines[1].contains("(in 30d)"), "{out}");
    assert!(lines[2].starts_with("8/0ther"), "{out}");
    assert_eq!(lines[3], "2 keys");
    let (_, out, _) = tinystore(&["kv", "list", "sessions", "--under", "8", "--dir", d]);
    assert!(out.contains("8/0ther") && !out.contains("7/d1g3st"), "{out}");
}

#[test]
fn list_json_parses_back() {
    let dir = fixture();
    let (ok, out, _) = tinystore(&[
        "kv",
        "list",
        "sign-in-codes",
        "--json",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["keys"][0]["key"], "c0de");
    assert_eq!(v["keys"][0]["kind"], "integer");
    assert_eq!(v["keys"][0]["value"], 7);
    assert_eq!(v["more"], false);
    assert!(v["keys"][0]["expiresAt"].as_i64().unwrap() > 0);
}

#[test]
fn buckets_get_and_stats() {
    let dir = fixture();
    let d = dir.path().to_str().unwrap();
    let (ok, out, _) = tinystore(&["kv", "buckets", "--json", "--dir", d]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["name"], "sessions");
    assert_eq!(v[0]["keys"], 2);
    assert_eq!(v[1]["name"], "sign-in-codes");
    let (ok, out, _) = tinystore(&["kv", "get", "sessions", "d1g3st", "--under", "7", "--dir", d]);
    assert!(ok);
    assert!(
        out.contains("key:     7/d1g3st") && out.contains("\"userId\":7"),
        "{out}"
    );
    let (ok, out, _) = tinystore(&["kv", "stats", "--json", "--dir", d]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["rows"].as_u64(), v["names"].as_u64()), (Some(3), Some(2)));
}

#[test]
fn missing_store_or_bucket_is_a_clear_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let (ok, _, err) = tinystore(&["kv", "list", "sessions", "--dir", missing.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("there is no store at"), "{err}");
    assert!(!missing.exists(), "nothing was created");
    let store = fixture();
    let (ok, _, err) = tinystore(&["kv", "list", "nope", "--dir", store.path().to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("no bucket named \"nope\""), "{err}");
}

#[test]
fn reads_a_store_an_application_has_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = tinystore::Store::open(dir.path()).unwrap();
    let b = store.bucket::<String>("live").open().unwrap();
    b.set("a", &"1".into()).unwrap();
    let (ok, out, err) = tinystore(&["kv", "list", "live", "--dir", dir.path().to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("a ") && out.contains("text"), "{out}");
    b.set("b", &"2".into()).unwrap(); // the app keeps writing after the command
    assert_eq!(b.get("b").unwrap().as_deref(), Some("2"));
}

#[test]
fn every_command_has_help() {
    for args in [
        &["--help"][..],
        &["kv", "--help"],
        &["kv", "list", "--help"],
        &["kv", "get", "--help"],
        &["kv", "buckets", "--help"],
        &["kv", "stats", "--help"],
        &["kv", "copy", "--help"],
    ] {
        let (ok, out, _) = tinystore(args);
        assert!(ok && out.contains("Usage"), "{args:?}: {out}");
    }
}
