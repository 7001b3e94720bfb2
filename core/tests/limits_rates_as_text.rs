//! KV-12 and KV-13: a rate limit and a quota opened from rates as text, as
//! the bindings open them; a bad rate names its window and creates nothing.

mod limits_common;

use limits_common::open;
use tinystore::ErrorKind;

#[test]
fn kv13_a_quota_at_text_rates_counts_each_window() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let q = store
        .quota_at("messages", [("session", "2/5h"), ("weekly", "3/7d")])
        .unwrap();
    assert!(q.allow(7).unwrap().ok);
    let a = q.allow(7).unwrap();
    assert!(a.ok);
    assert_eq!(a.window("session").unwrap().limit, 2);
    assert_eq!(a.window("weekly").unwrap().limit, 3);
    assert!(!q.allow(7).unwrap().ok, "the session window is full");
}

#[test]
fn kv13_a_bad_rate_names_its_window_and_the_quota_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let Err(e) = store.quota_at("messages", [("session", "2/5h"), ("weekly", "3 a week")]) else {
        panic!("a rate without '/' is refused");
    };
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(
        e.message()
            .starts_with("window \"weekly\": rate \"3 a week\" has no '/'"),
        "{e}"
    );
    assert_eq!(e.bucket(), Some("messages"));
    assert!(store.names().unwrap().is_empty(), "nothing is created");
}

#[test]
fn kv12_a_rate_limit_at_a_text_rate_lets_its_burst_through() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let by_rate = store.rate_limit_at("guesses", Some("3/m"), None).unwrap();
    assert_eq!(by_rate.burst(), 3, "the burst is the rate's count when not given");
    let bursty = store.rate_limit_at("bursty", Some("3/m"), Some(5)).unwrap();
    assert_eq!(bursty.burst(), 5);
    let Err(e) = store.rate_limit_at("bad", Some("0/m"), None) else {
        panic!("a rate of 0 is refused");
    };
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.bucket(), Some("bad"));
    assert!(e.message().starts_with("rate \"0/m\""), "{e}");
    let Err(e) = store.rate_limit_at("none", None, Some(5)) else {
        panic!("a rate limit without a rate is refused");
    };
    assert_eq!((e.kind(), e.bucket()), (ErrorKind::Invalid, Some("none")));
    assert_eq!(e.message(), "a rate limit needs a rate: how many requests per span");
    assert!(
        store.names().unwrap().iter().all(|(n, _)| n != "none"),
        "nothing is opened"
    );
}
