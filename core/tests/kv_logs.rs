//! The engine's log records reach a language's logging through a queue
//! that never blocks the engine's threads.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tinystore::{Config, LOG_QUEUE, Store, forward_logs, next_logs};

#[derive(Serialize, Deserialize, Clone)]
struct Before {
    port: i64,
    rps: i64,
}

#[derive(Serialize, Deserialize, Clone)]
struct After {
    port: i64,
}

#[test]
fn engine_warnings_are_queued_for_the_language_and_none_is_lost_in_silence() {
    assert!(forward_logs(), "no other logger was set in this test");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let before = Config::builder(&store, "app", Before { port: 8080, rps: 100 })
        .open()
        .unwrap();
    before.update(|s| s.rps = 200).unwrap();
    // The program no longer has the field kept for it: the engine warns.
    let after = Config::builder(&store, "app", After { port: 8080 }).open().unwrap();
    assert_eq!(after.get().unwrap().port, 8080);
    let got = next_logs(16, Duration::from_secs(10));
    let warning = got
        .iter()
        .find(|r| r.message.contains("\"rps\" is no longer in the program"))
        .unwrap_or_else(|| panic!("no warning of the field left out in {got:?}"));
    assert_eq!(warning.level, log::Level::Warn);
    assert_eq!(warning.target, "tinystore::config");
    assert!(!warning.message.starts_with("tinystore:"), "{warning:?}");
    assert_eq!(warning.store, Some(store.log_id()), "the record names its store");
    // A panic of a completion on the writer thread is about its store too.
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set_then("k", &1, |_| panic!("completion boom")).unwrap();
    b.set("after", &2).unwrap();
    let got = next_logs(16, Duration::from_secs(10));
    let panicked = got
        .iter()
        .find(|r| r.message.contains("completion panicked"))
        .unwrap_or_else(|| panic!("no record of the panic in {got:?}"));
    assert_eq!(panicked.level, log::Level::Error);
    assert_eq!(
        panicked.store,
        Some(store.log_id()),
        "the writer's record names its store"
    );
    let other_dir = tempfile::tempdir().unwrap();
    let other = Store::open(other_dir.path()).unwrap();
    assert_ne!(other.log_id(), store.log_id(), "each open has its own log id");

    for i in 0..LOG_QUEUE + 10 {
        log::warn!(target: "tinystore", "record {i}");
    }
    let got = next_logs(LOG_QUEUE + 10, Duration::from_secs(1));
    assert_eq!(got[0].message, "10 log records were lost: nothing took them in time");
    assert_eq!(got[1].message, "record 10");
    assert_eq!(got[1].store, None, "a record about no one store names none");
    assert_eq!(got.len(), LOG_QUEUE + 1);
    assert!(next_logs(1, Duration::ZERO).is_empty());
}
