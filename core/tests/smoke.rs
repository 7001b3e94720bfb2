use std::time::{Duration, SystemTime};
use tinystore::{Options, Store};

#[test]
fn kv04_set_get_has_delete() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(
        dir.path(),
        Options::new().test_clock(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
    )
    .unwrap();
    let b = store.bucket::<String>("notes").open().unwrap();
    assert_eq!(b.get("a").unwrap(), None);
    b.set("a", &"x".to_string()).unwrap();
    assert_eq!(b.get("a").unwrap().as_deref(), Some("x"));
    assert!(b.has("a").unwrap());
    assert!(b.delete("a").unwrap());
    assert!(!b.delete("a").unwrap());
    store.close().unwrap();
}
