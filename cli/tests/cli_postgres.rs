//! The `tinystore kv` commands against a store on PostgreSQL (`--url`), on
//! the server CI starts (`make pg-start`; make exports TINYSTORE_TEST_PG).

mod common;

use std::time::Duration;

use common::{location, tinystore};
use serde_json::Value;

fn fixture(url: &str) {
    let store = tinystore::Store::open(url).unwrap();
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
}

#[test]
fn kv_list_get_buckets_and_stats_read_a_store_on_postgres() {
    let url = location("cli", "reads");
    fixture(&url);
    let (ok, out, err) = tinystore(&["kv", "list", "sessions", "--url", &url]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("KEY") && lines[0].contains("EXPIRES"), "{out}");
    assert!(
        lines[1].starts_with("7/d1g3st") && lines[1].contains("\"device\":\"web\""),
        "{out}"
    );
    assert!(lines[1].contains("(in 29d)") || lines[1].contains("(in 30d)"), "{out}");
    assert!(lines[2].starts_with("8/0ther"), "{out}");
    assert_eq!(lines[3], "2 keys");
    let (_, out, _) = tinystore(&["kv", "list", "sessions", "--under", "8", "--url", &url]);
    assert!(out.contains("8/0ther") && !out.contains("7/d1g3st"), "{out}");

    let (ok, out, _) = tinystore(&["kv", "list", "sign-in-codes", "--json", "--url", &url]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["keys"][0]["key"].as_str(), v["keys"][0]["value"].as_i64()),
        (Some("c0de"), Some(7))
    );

    let (ok, out, _) = tinystore(&["kv", "get", "sessions", "d1g3st", "--under", "7", "--url", &url]);
    assert!(ok);
    assert!(
        out.contains("key:     7/d1g3st") && out.contains("\"userId\":7"),
        "{out}"
    );

    let (ok, out, _) = tinystore(&["kv", "buckets", "--json", "--url", &url]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v[0]["name"].as_str(), v[0]["keys"].as_u64()),
        (Some("sessions"), Some(2))
    );
    assert_eq!(v[1]["name"], "sign-in-codes");

    let (ok, out, _) = tinystore(&["kv", "stats", "--json", "--url", &url]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["rows"].as_u64(), v["names"].as_u64()), (Some(3), Some(2)));
    let (ok, out, _) = tinystore(&["kv", "stats", "--url", &url]);
    assert!(ok && out.contains("store:            postgres://"), "{out}");
}

#[test]
fn kv_on_a_missing_store_or_a_bad_url_is_a_clear_error_and_creates_nothing() {
    let url = location("cli", "missing");
    let (ok, _, err) = tinystore(&["kv", "list", "sessions", "--url", &url]);
    assert!(!ok);
    assert!(err.contains("there is no TinyStore store at"), "{err}");
    let (ok, _, err) = tinystore(&["kv", "buckets", "--url", &url]);
    assert!(!ok && err.contains("nothing was created"), "{err}");
    // Still nothing there: opening it as a store now finds no names.
    let store = tinystore::Store::open(&url).unwrap();
    assert!(store.names().unwrap().is_empty());
    store.close().unwrap();
    let (ok, _, err) = tinystore(&["kv", "list", "nope", "--url", &url]);
    assert!(!ok && err.contains("no bucket named \"nope\""), "{err}");
    let (ok, _, err) = tinystore(&["kv", "buckets", "--url", "data/"]);
    assert!(!ok && err.contains("--url takes a postgres://"), "{err}");
    let (ok, _, err) = tinystore(&["kv", "buckets", "--url", &url, "--dir", "data"]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}
