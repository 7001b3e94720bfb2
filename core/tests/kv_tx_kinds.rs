//! KV-16 across kinds: durable counters, quotas and the answers of `once`
//! join `tx` with buckets, all or nothing; what keeps its state in memory
//! (`flush_every` counters, rate limits) and `once.run` are `Invalid`
//! inside one, saying why, and the store writes normally after each.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use tinystore::{Error, ErrorKind, Store};

fn handles(
    store: &Store,
) -> (
    tinystore::Bucket<String>,
    tinystore::Counters,
    tinystore::Quota,
    tinystore::Once<String>,
) {
    let codes = store.bucket::<String>("codes").open().unwrap();
    let attempts = store.counters("attempts").open().unwrap();
    let plan = store
        .quota("messages")
        .window("daily", 2, Duration::from_secs(86_400))
        .open()
        .unwrap();
    let sends = store.once::<String>("sends").open().unwrap();
    (codes, attempts, plan, sends)
}

/// The store writes each kind normally after whatever came before.
fn still_writes(store: &Store) {
    let (codes, attempts, plan, sends) = handles(store);
    codes.set("after", &"x".to_string()).unwrap();
    attempts.add("after", 1).unwrap();
    plan.allow("after").unwrap();
    sends.run("after", || Ok("y".to_string())).unwrap();
}

#[test]
fn kv16_tx_commits_a_take_a_count_a_use_and_an_answer_together() {
    let (_d, store) = common::manual();
    let (codes, attempts, plan, sends) = handles(&store);
    codes.set("c-1", &"ada".to_string()).unwrap();
    sends.run("old", || Ok("kept".to_string())).unwrap();
    let (user, n, used) = store
        .tx(|tx| {
            let user = tx.with(&codes).take("c-1")?;
            let n = tx.counters(&attempts)?.add("ada", 1)?;
            assert_eq!(
                tx.counters(&attempts)?.get("ada")?,
                1,
                "the transaction sees its own add"
            );
            let used = tx.quota(&plan).allow("ada")?;
            assert_eq!(tx.quota(&plan).peek("ada")?.left, 1, "the transaction sees its own use");
            assert_eq!(tx.once(&sends).get("old")?.as_deref(), Some("kept"));
            assert!(tx.once(&sends).delete("old")?);
            // Others see nothing of it before the commit.
            assert_eq!(attempts.get("ada")?, 0);
            assert_eq!(plan.peek("ada")?.left, 2);
            Ok((user, n, used))
        })
        .unwrap();
    assert_eq!((user.as_deref(), n, used.ok, used.left), (Some("ada"), 1, true, 1));
    assert_eq!(codes.get("c-1").unwrap(), None);
    assert_eq!(attempts.get("ada").unwrap(), 1);
    assert_eq!(plan.peek("ada").unwrap().left, 1);
    assert_eq!(sends.get("old").unwrap(), None);
    still_writes(&store);
}

#[test]
fn kv16_an_error_rolls_back_every_kind() {
    let (_d, store) = common::manual();
    let (codes, attempts, plan, sends) = handles(&store);
    codes.set("c-1", &"ada".to_string()).unwrap();
    attempts.add("ada", 5).unwrap();
    sends.run("old", || Ok("kept".to_string())).unwrap();
    let e = store
        .tx(|tx| -> tinystore::Result<()> {
            tx.with(&codes).take("c-1")?;
            tx.counters(&attempts)?.add("ada", 1)?;
            tx.counters(&attempts)?.max("bob", 9)?;
            tx.counters(&attempts)?.delete("ada")?;
            tx.quota(&plan).allow_n("ada", 2)?;
            tx.quota(&plan).refund("ada")?;
            tx.once(&sends).delete("old")?;
            Err(Error::new(ErrorKind::Conflict, "the plan is over"))
        })
        .unwrap_err();
    assert_eq!(e.message(), "the plan is over");
    assert_eq!(codes.get("c-1").unwrap().as_deref(), Some("ada"));
    assert_eq!(attempts.get("ada").unwrap(), 5);
    assert_eq!(attempts.get("bob").unwrap(), 0);
    assert_eq!(plan.peek("ada").unwrap().left, 2);
    assert_eq!(sends.get("old").unwrap().as_deref(), Some("kept"));
    still_writes(&store);
}

#[test]
fn kv16_a_panic_rolls_back_every_kind() {
    let (_d, store) = common::manual();
    let (_, attempts, plan, sends) = handles(&store);
    sends.run("old", || Ok("kept".to_string())).unwrap();
    let caught = catch_unwind(AssertUnwindSafe(|| {
        store.tx(|tx| -> tinystore::Result<()> {
            tx.counters(&attempts)?.add("ada", 1)?;
            tx.quota(&plan).allow("ada")?;
            tx.quota(&plan).reset("ada")?;
            tx.once(&sends).delete("old")?;
            panic!("boom")
        })
    }));
    assert!(caught.is_err());
    assert_eq!(attempts.get("ada").unwrap(), 0);
    assert_eq!(plan.peek("ada").unwrap().left, 2);
    assert_eq!(sends.get("old").unwrap().as_deref(), Some("kept"));
    still_writes(&store);
}

#[test]
fn kv16_what_keeps_its_state_in_memory_is_invalid_inside_tx_saying_why() {
    let (_d, store) = common::manual();
    let (codes, ..) = handles(&store);
    let hits = store
        .counters("hits")
        .flush_every(Duration::from_secs(1))
        .open()
        .unwrap();
    let sends = store.once::<String>("sends").open().unwrap();
    let e = store
        .tx(|tx| -> tinystore::Result<()> {
            tx.with(&codes).set("inside", &"x".to_string())?;
            let refused = tx.counters(&hits).err().expect("flush_every counters are refused");
            assert_eq!(refused.kind(), ErrorKind::Invalid);
            assert!(refused.message().contains("flush_every"), "{refused}");
            assert_eq!(refused.bucket(), Some("hits"));
            let refused = sends.run("k", || Ok("x".to_string())).unwrap_err();
            assert_eq!(refused.kind(), ErrorKind::Invalid, "not a wait for itself");
            assert!(
                refused.message().contains("once.run cannot run inside a transaction"),
                "{refused}"
            );
            Err(refused)
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(codes.get("inside").unwrap(), None);
    assert_eq!(sends.get("k").unwrap(), None);
    let rl = tinystore::rate_limit_refused("logins");
    assert_eq!((rl.kind(), rl.bucket()), (ErrorKind::Invalid, Some("logins")));
    assert!(rl.message().contains("in memory"), "{rl}");
    still_writes(&store);
    hits.add("k", 1).unwrap();
}

#[test]
fn kv16_a_write_through_an_outside_handle_inside_tx_is_invalid_at_once() {
    let (_d, store) = common::manual();
    let (codes, attempts, plan, sends) = handles(&store);
    store
        .tx(|tx| {
            for e in [
                codes.set("k", &"v".to_string()).map(|_| ()).unwrap_err(),
                attempts.add("k", 1).map(|_| ()).unwrap_err(),
                plan.allow("k").map(|_| ()).unwrap_err(),
                sends.delete("k").map(|_| ()).unwrap_err(),
            ] {
                assert_eq!(e.kind(), ErrorKind::Invalid);
                assert_eq!(e.message(), tinystore::inside_tx_error().message());
            }
            tx.with(&codes).set("k", &"in".to_string())
        })
        .unwrap();
    assert_eq!(codes.get("k").unwrap().as_deref(), Some("in"));
    still_writes(&store);
}

#[test]
fn kv16_a_handle_of_another_store_is_invalid_inside_tx() {
    let (_d, store) = common::manual();
    let (_d2, other) = common::manual();
    let (_, attempts, plan, sends) = handles(&other);
    store
        .tx(|tx| {
            assert_eq!(tx.counters(&attempts).err().unwrap().kind(), ErrorKind::Invalid);
            assert_eq!(tx.quota(&plan).allow("k").unwrap_err().kind(), ErrorKind::Invalid);
            assert_eq!(tx.once(&sends).get("k").unwrap_err().kind(), ErrorKind::Invalid);
            Ok(())
        })
        .unwrap();
}

#[test]
fn kv16_a_tx_from_a_thread_that_holds_a_binding_transaction_is_invalid_not_a_deadlock() {
    let (_d, store) = common::manual();
    let (codes, ..) = handles(&store);
    let (tx, done) = store.transaction().unwrap();
    tx.hold_thread();
    let e = store.tx(|_| Ok(())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    let e = codes.set("k", &"v".to_string()).unwrap_err();
    assert_eq!(e.message(), tinystore::inside_tx_error().message());
    tinystore::Scope::Tx(&tx)
        .set(codes.raw(), b"k", tinystore::Raw::text("in"), Default::default())
        .unwrap();
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(codes.get("k").unwrap().as_deref(), Some("in"));
    still_writes(&store);
}
