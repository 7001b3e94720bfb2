//! The async forms of the calls that wait for the writer (`aio()`): the
//! same answers as the blocking calls, writes in flight sharing groups, and
//! a dropped future giving up on a write that has not started.

use std::sync::mpsc;
use std::time::Duration;

use pollster::block_on;
use tinystore::{Created, ErrorKind, Store};

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

#[test]
fn kv04_async_writes_answer_as_the_blocking_ones() {
    let (_d, store) = store();
    let b = store.bucket::<String>("sessions").open().unwrap();
    block_on(async {
        let v1 = b.aio().set("s1", &"ada".to_owned()).await.unwrap();
        assert_eq!(b.get("s1").unwrap().as_deref(), Some("ada"));
        let v2 = b.aio().key("s1").if_version(v1).set(&"grace".to_owned()).await.unwrap();
        assert_ne!(v2, v1);
        let stale = b.aio().key("s1").if_version(v1).set(&"x".to_owned()).await.unwrap_err();
        assert_eq!(stale.kind(), ErrorKind::Conflict);
        assert!(!b.aio().create("s1", &"other".to_owned()).await.unwrap());
        match b.aio().key("s1").create_entry(&"other".to_owned()).await.unwrap() {
            Created::Found(e) => assert_eq!((e.value.as_str(), e.version), ("grace", v2)),
            Created::Written { .. } => panic!("create_entry wrote over a live key"),
        }
        assert!(b.aio().create("s2", &"linus".to_owned()).await.unwrap());
        assert!(b.aio().expire("s2", Duration::from_secs(60)).await.unwrap());
        assert!(b.entry("s2").unwrap().unwrap().expires_at.is_some());
        assert_eq!(b.aio().take("s1").await.unwrap().as_deref(), Some("grace"));
        assert_eq!(b.aio().take("s1").await.unwrap(), None);
        assert!(b.aio().delete("s2").await.unwrap());
        b.aio().set("s3", &"x".to_owned()).await.unwrap();
        b.aio().clear().await.unwrap();
        assert!(!b.has("s3").unwrap());
    });
}

#[test]
fn kv05_an_async_take_of_a_value_that_does_not_decode_keeps_it() {
    let (_d, store) = store();
    store
        .bucket::<String>("codes")
        .open()
        .unwrap()
        .set("abc", &"text".into())
        .unwrap();
    let as_int = store.bucket::<i64>("codes").open().unwrap();
    let e = block_on(as_int.aio().take("abc")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    let as_text = store.bucket::<String>("codes").open().unwrap();
    assert_eq!(as_text.get("abc").unwrap().as_deref(), Some("text"));
}

#[test]
fn kv15_async_writes_in_flight_share_groups() {
    let (_d, store) = store();
    let b = store.bucket::<i64>("counts").open().unwrap();
    let (groups_before, writes_before) = store.group_stats();
    let futures: Vec<_> = (0..64).map(|i| b.aio().set(i, &i)).collect();
    let versions: Vec<_> = block_on(async {
        let mut out = Vec::new();
        for f in futures {
            out.push(f.await.unwrap());
        }
        out
    });
    let unique: std::collections::HashSet<_> = versions.iter().collect();
    assert_eq!(unique.len(), 64, "each write answers its own version");
    let (groups, writes) = store.group_stats();
    assert_eq!(writes - writes_before, 64);
    assert!(
        groups - groups_before < 64,
        "64 writes in flight committed in {} groups",
        groups - groups_before
    );
    for i in 0..64 {
        assert_eq!(b.get(i).unwrap(), Some(i));
    }
}

#[test]
fn kv15_a_dropped_future_gives_up_on_a_write_not_started() {
    let (_d, store) = store();
    let b = store.bucket::<i64>("queued").open().unwrap();
    let store = &store;
    let (holding, held) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let holder = s.spawn(move || {
            store.tx(|_| {
                holding.send(()).unwrap();
                released.recv().unwrap();
                Ok(())
            })
        });
        held.recv().unwrap();
        // The transaction holds the writer: this write waits in its queue.
        let queued = b.aio().set("k", &1);
        drop(queued);
        release.send(()).unwrap();
        holder.join().unwrap().unwrap();
    });
    assert_eq!(b.get("k").unwrap(), None, "a write given up before its group wrote");
    block_on(b.aio().set("after", &2)).unwrap();
    assert_eq!(b.get("after").unwrap(), Some(2), "the writer goes on");
}

#[test]
fn kv18_an_async_call_with_bad_input_is_answered_at_once_and_writes_nothing() {
    let (dir, store) = store();
    let b = store.bucket::<i64>("b").open().unwrap();
    let text = store.bucket::<String>("t").open().unwrap();
    // kv.db and its log: a write that happened would change one of them.
    let files = || ["kv.db", "kv.db-wal"].map(|f| std::fs::read(dir.path().join(f)).unwrap_or_default());
    let before = files();
    let e = block_on(b.aio().set("", &1)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.to_string().contains("empty"), "{e}");
    let e = block_on(text.aio().set("k", &"x".repeat(tinystore::MAX_VALUE + 1))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(files() == before, "a refused call wrote");
    assert_eq!(text.get("k").unwrap(), None);
}

#[test]
fn kv13_kv14_async_counters_quotas_and_once() {
    let (_d, store) = store();
    let counters = store.counters("attempts").open().unwrap();
    let quota = store
        .quota("ai")
        .window("session", 2, Duration::from_secs(3600))
        .open()
        .unwrap();
    let once = store.once::<i64>("charges").open().unwrap();
    block_on(async {
        assert_eq!(counters.aio().add("ip", 2).await.unwrap(), 2);
        assert_eq!(counters.aio().max("ip", 5).await.unwrap(), 5);
        assert!(counters.aio().delete("ip").await.unwrap());
        counters.aio().add("ip", 1).await.unwrap();
        counters.aio().clear().await.unwrap();
        assert_eq!(counters.get("ip").unwrap(), 0);
        assert!(quota.aio().allow("ada").await.unwrap().ok);
        assert!(quota.aio().allow("ada").await.unwrap().ok);
        assert!(!quota.aio().allow("ada").await.unwrap().ok, "all-or-none at the limit");
        assert!(quota.aio().refund("ada").await.unwrap().ok);
        quota.aio().reset("ada").await.unwrap();
        assert!(quota.aio().allow_n("ada", 2).await.unwrap().ok);
        assert_eq!(once.run("r1", || Ok(7)).unwrap(), 7);
        assert!(once.aio().delete("r1").await.unwrap());
        assert_eq!(once.get("r1").unwrap(), None);
    });
}
