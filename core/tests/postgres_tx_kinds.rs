//! KV-16 across kinds on a PostgreSQL store: durable counters, quotas and
//! the answers of `once` join `tx` with buckets, all or nothing, and other
//! servers see none of it before the commit; a refusal of a kind's rules
//! inside the transaction sends nothing and the transaction goes on; racing
//! transactions on two servers pass a quota's limit exactly.

mod common;
mod pg;

use std::time::Duration;

use tinystore::{Error, ErrorKind, Options, Store};

fn manual(location: &str) -> Store {
    Store::open_with(location, Options::new().test_clock(common::start())).unwrap()
}

struct Handles {
    codes: tinystore::Bucket<String>,
    attempts: tinystore::Counters,
    plan: tinystore::Quota,
    sends: tinystore::Once<String>,
}

fn handles(store: &Store) -> Handles {
    Handles {
        codes: store.bucket::<String>("codes").open().unwrap(),
        attempts: store.counters("attempts").open().unwrap(),
        plan: store
            .quota("messages")
            .window("daily", 2, Duration::from_secs(86_400))
            .open()
            .unwrap(),
        sends: store.once::<String>("sends").open().unwrap(),
    }
}

#[test]
fn kv16_on_postgres_tx_commits_a_count_a_use_and_an_answer_with_a_take() {
    let location = pg::fresh("kv16_kinds_commit");
    let (store, other) = (manual(&location), manual(&location));
    let (h, theirs) = (handles(&store), handles(&other));
    h.codes.set("c-1", &"ada".to_string()).unwrap();
    h.sends.run("old", || Ok("kept".to_string())).unwrap();
    store
        .tx(|tx| {
            assert_eq!(tx.with(&h.codes).take("c-1")?.as_deref(), Some("ada"));
            assert_eq!(tx.counters(&h.attempts)?.add("ada", 1)?, 1);
            assert_eq!(tx.counters(&h.attempts)?.max("ada", 4)?, 4);
            assert_eq!(tx.counters(&h.attempts)?.get("ada")?, 4, "the tx sees its own count");
            let used = tx.quota(&h.plan).allow("ada")?;
            assert!(used.ok && used.left == 1, "{used:?}");
            assert_eq!(tx.quota(&h.plan).peek("ada")?.left, 1, "the tx sees its own use");
            assert_eq!(tx.once(&h.sends).get("old")?.as_deref(), Some("kept"));
            assert!(tx.once(&h.sends).delete("old")?);
            assert_eq!(tx.once(&h.sends).get("old")?, None, "the tx sees its own delete");
            // Another server sees nothing of it before the commit.
            assert_eq!(theirs.attempts.get("ada")?, 0);
            assert_eq!(theirs.plan.peek("ada")?.left, 2);
            assert_eq!(theirs.sends.get("old")?.as_deref(), Some("kept"));
            Ok(())
        })
        .unwrap();
    assert_eq!(theirs.codes.get("c-1").unwrap(), None);
    assert_eq!(theirs.attempts.get("ada").unwrap(), 4);
    assert_eq!(theirs.plan.peek("ada").unwrap().left, 1);
    assert_eq!(theirs.sends.get("old").unwrap(), None);
}

#[test]
fn kv16_on_postgres_an_error_in_tx_rolls_back_every_kind() {
    let store = manual(&pg::fresh("kv16_kinds_rollback"));
    let h = handles(&store);
    h.attempts.add("ada", 5).unwrap();
    h.plan.allow("ada").unwrap();
    h.sends.run("old", || Ok("kept".to_string())).unwrap();
    let e = store
        .tx(|tx| {
            assert_eq!(tx.counters(&h.attempts)?.add("ada", 1)?, 6);
            // The rules refuse a sum past int64: nothing is sent, the tx goes on.
            let past = tx.counters(&h.attempts)?.add("ada", i64::MAX).unwrap_err();
            assert_eq!(past.kind(), ErrorKind::Limit, "{past}");
            assert_eq!(past.bucket(), Some("attempts"), "{past}");
            assert_eq!(tx.counters(&h.attempts)?.get("ada")?, 6);
            let refused = tx.quota(&h.plan).allow_n("ada", 2)?;
            assert!(!refused.ok, "one use is left of two: {refused:?}");
            assert!(tx.quota(&h.plan).allow("ada")?.ok);
            assert_eq!(tx.quota(&h.plan).refund("ada")?.left, 1);
            tx.quota(&h.plan).reset("ada")?;
            assert_eq!(tx.quota(&h.plan).peek("ada")?.left, 2, "the tx sees its own reset");
            assert!(tx.counters(&h.attempts)?.delete("ada")?);
            assert!(tx.once(&h.sends).delete("old")?);
            Err::<(), _>(Error::new(ErrorKind::Invalid, "the caller gave up"))
        })
        .unwrap_err();
    assert_eq!(e.message(), "the caller gave up");
    assert_eq!(h.attempts.get("ada").unwrap(), 5, "nothing of the tx was written");
    assert_eq!(h.plan.peek("ada").unwrap().left, 1);
    assert_eq!(h.sends.get("old").unwrap().as_deref(), Some("kept"));
    assert_eq!(h.attempts.add("ada", 1).unwrap(), 6, "the store writes after");
}

#[test]
fn kv16_on_postgres_racing_transactions_on_two_servers_pass_a_quota_exactly() {
    const LIMIT: u64 = 5;
    let location = pg::fresh("kv16_kinds_race");
    let servers = [manual(&location), manual(&location)];
    let passed = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for store in &servers {
            for _ in 0..2 {
                let passed = &passed;
                s.spawn(move || {
                    let plan = store
                        .quota("messages")
                        .window("daily", LIMIT, Duration::from_secs(86_400))
                        .open()
                        .unwrap();
                    let sent = store.counters("sent").open().unwrap();
                    for _ in 0..6 {
                        // A transaction that conflicts wrote nothing: run it again.
                        loop {
                            let r = store.tx(|tx| {
                                let a = tx.quota(&plan).allow("ada")?;
                                if a.ok {
                                    tx.counters(&sent)?.add("ada", 1)?;
                                }
                                Ok(a.ok)
                            });
                            match r {
                                Ok(ok) => {
                                    if ok {
                                        passed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    }
                                    break;
                                }
                                Err(e) if e.kind() == ErrorKind::Conflict => continue,
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                });
            }
        }
    });
    assert_eq!(
        passed.into_inner(),
        LIMIT,
        "24 tries on two servers pass the limit exactly"
    );
    let sent = servers[1].counters("sent").open().unwrap();
    assert_eq!(
        sent.get("ada").unwrap(),
        LIMIT as i64,
        "each use was counted with its count"
    );
}

/// A binding's transaction (what Python, Node, Bun and Go call through)
/// carries the kinds through its scope, and a rollback writes none of them.
#[test]
fn kv16_on_postgres_a_bindings_transaction_carries_every_kind() {
    use tinystore::Scope;
    let store = manual(&pg::fresh("kv16_kinds_session"));
    let h = handles(&store);
    let once = h.sends.raw();
    h.sends.run("old", || Ok("kept".to_string())).unwrap();
    let (s, done) = store.transaction().unwrap();
    let tx = Scope::Tx(&s);
    assert_eq!(tx.counter_add(&h.attempts, b"ada", 2).unwrap(), 2);
    assert_eq!(tx.counter_get(&h.attempts, b"ada").unwrap(), 2);
    assert!(tx.quota_allow(&h.plan, b"ada", 1).unwrap().ok);
    assert_eq!(tx.quota_peek(&h.plan, b"ada").unwrap().left, 1);
    assert!(tx.once_get(once, b"old").unwrap().is_some());
    assert!(tx.once_delete(once, b"old").unwrap());
    s.rollback().unwrap();
    assert_eq!(done.recv().unwrap().unwrap_err().kind(), ErrorKind::Cancelled);
    assert_eq!(h.attempts.get("ada").unwrap(), 0);
    assert_eq!(h.plan.peek("ada").unwrap().left, 2);
    assert!(h.sends.get("old").unwrap().is_some());

    let (s, done) = store.transaction().unwrap();
    let tx = Scope::Tx(&s);
    assert_eq!(tx.counter_max(&h.attempts, b"ada", 7).unwrap(), 7);
    tx.quota_reset(&h.plan, b"ada").unwrap();
    assert_eq!(tx.quota_refund(&h.plan, b"ada", 1).unwrap().left, 2);
    assert!(tx.counter_delete(&h.attempts, b"ada").unwrap());
    assert_eq!(tx.counter_add(&h.attempts, b"ada", 3).unwrap(), 3);
    s.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(h.attempts.get("ada").unwrap(), 3);
}
