//! KV-16 on a PostgreSQL store: `tx` writes several buckets all or nothing
//! and sees its own writes; transactions that race on the same keys
//! conflict rather than lose an update; a lost COMMIT is `OutcomeUnknown`;
//! `view` reads one snapshot.

mod common;
mod pg;

use std::sync::mpsc;

use tinystore::{Error, ErrorKind, Options, Store, WriteOptions};

fn manual(location: &str) -> Store {
    Store::open_with(location, Options::new().test_clock(common::start())).unwrap()
}

#[test]
fn kv16_on_postgres_tx_writes_several_buckets_all_or_nothing() {
    let store = manual(&pg::fresh("kv16_all_or_nothing"));
    let stock = store.bucket::<i64>("stock").open().unwrap();
    let orders = store.bucket::<String>("orders").open().unwrap();
    stock.set("apples", &3).unwrap();
    store
        .tx(|tx| {
            let left = tx.with(&stock).get("apples")?.unwrap_or(0);
            tx.with(&stock).set("apples", &(left - 1))?;
            tx.with(&orders).set("o-1", &"apples".to_string())?;
            assert_eq!(tx.with(&stock).get("apples")?, Some(2), "a tx sees its own writes");
            assert_eq!(stock.get("apples")?, Some(3), "others see nothing before the commit");
            Ok(())
        })
        .unwrap();
    assert_eq!(stock.get("apples").unwrap(), Some(2));
    assert_eq!(orders.get("o-1").unwrap().as_deref(), Some("apples"));

    let e = store
        .tx(|tx| {
            tx.with(&stock).set("apples", &0)?;
            tx.with(&orders).set("o-2", &"apples".to_string())?;
            Err::<(), _>(Error::new(ErrorKind::Invalid, "out of apples"))
        })
        .unwrap_err();
    assert_eq!(e.message(), "out of apples");
    assert_eq!(stock.get("apples").unwrap(), Some(2), "an error writes nothing");
    assert_eq!(orders.get("o-2").unwrap(), None);

    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.tx(|tx| -> tinystore::Result<()> {
            tx.with(&stock).set("apples", &-1)?;
            panic!("boom")
        })
    }));
    assert!(panicked.is_err());
    assert_eq!(stock.get("apples").unwrap(), Some(2), "a panic writes nothing");
    store.tx(|tx| tx.with(&stock).set("apples", &5).map(|_| ())).unwrap();
    assert_eq!(stock.get("apples").unwrap(), Some(5), "the store goes on after a panic");
}

#[test]
fn kv16_on_postgres_each_call_in_a_tx_keeps_the_rules_of_its_own() {
    let store = manual(&pg::fresh("kv16_rules"));
    let b = store.bucket::<i64>("b").open().unwrap();
    let v = b.set("k", &1).unwrap();
    store
        .tx(|tx| {
            let e = tx
                .with(&b)
                .set_with(
                    "k",
                    &2,
                    WriteOptions {
                        if_version: Some(tinystore::Version::from_raw(v.get() + 1000)),
                        ..Default::default()
                    },
                )
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
            assert!(
                e.message().contains(&format!("the key is at version {}", v.get())),
                "{e}"
            );
            // A refused call writes nothing, and the transaction goes on.
            assert!(!tx.with(&b).create("k", &3)?, "create finds the live key");
            assert!(tx.with(&b).create("new", &4)?);
            assert_eq!(tx.with(&b).take("new")?, Some(4));
            assert_eq!(tx.with(&b).take("new")?, None);
            assert!(tx.with(&b).delete("k")?);
            assert!(!tx.with(&b).has("k")?);
            tx.with(&b).set("x", &9)?;
            assert!(tx.with(&b).expire("x", std::time::Duration::from_secs(60))?);
            Ok(())
        })
        .unwrap();
    assert_eq!(b.get("k").unwrap(), None);
    assert_eq!(b.get("new").unwrap(), None);
    assert_eq!(b.entry("x").unwrap().unwrap().value, 9);
    store.clock().advance(std::time::Duration::from_secs(60)).unwrap();
    assert_eq!(b.get("x").unwrap(), None, "the expiry a tx gave, on the tx's clock");
    let text = store.bucket::<String>("text").open().unwrap();
    store
        .raw_bucket("text")
        .open()
        .unwrap()
        .set("bad", &tinystore::Raw::Int(1))
        .unwrap();
    let e = store.tx(|tx| tx.with(&text).take("bad").map(|_| ())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(
        store.raw_bucket("text").open().unwrap().get("bad").unwrap().is_some(),
        "a take that does not decode keeps the value"
    );
    let e = store.tx(|tx| tx.with(&b).set("", &1).map(|_| ())).unwrap_err();
    assert_eq!((e.kind(), e.bucket()), (ErrorKind::Invalid, Some("b")));
}

/// Two servers read the same count and write it plus one: one commits,
/// the other is `Conflict` and writes nothing, so no update is lost.
#[test]
fn kv16_on_postgres_racing_transactions_conflict_rather_than_lose_an_update() {
    let location = pg::fresh("kv16_race");
    let (a, b) = (Store::open(&location).unwrap(), Store::open(&location).unwrap());
    let (on_a, on_b) = (
        a.bucket::<i64>("n").open().unwrap(),
        b.bucket::<i64>("n").open().unwrap(),
    );
    let (a, on_a_ref) = (&a, &on_a);
    on_a.set("count", &0).unwrap();
    let (read, has_read) = mpsc::channel();
    let (go, wait_go) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let first = s.spawn(move || {
            a.tx(|tx| {
                let n = tx.with(on_a_ref).get("count")?.unwrap();
                read.send(()).unwrap();
                wait_go.recv().unwrap();
                tx.with(on_a_ref).set("count", &(n + 1)).map(|_| ())
            })
        });
        has_read.recv().unwrap();
        b.tx(|tx| {
            let n = tx.with(&on_b).get("count")?.unwrap();
            tx.with(&on_b).set("count", &(n + 1)).map(|_| ())
        })
        .unwrap();
        go.send(()).unwrap();
        let e = first.join().unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        assert!(e.message().contains("run it again"), "{e}");
    });
    assert_eq!(on_a.get("count").unwrap(), Some(1));
    // Run again, it counts.
    a.tx(|tx| {
        let n = tx.with(&on_a).get("count")?.unwrap();
        tx.with(&on_a).set("count", &(n + 1)).map(|_| ())
    })
    .unwrap();
    assert_eq!(on_b.get("count").unwrap(), Some(2));
}

#[test]
fn kv15_on_postgres_a_tx_whose_commit_is_not_answered_is_outcome_unknown() {
    let proxy = pg::Proxy::start();
    let through = manual(&proxy.location("kv15_tx_commit"));
    let direct = manual(&format!("{}?schema=kv15_tx_commit", pg::server()));
    let b = through.bucket::<i64>("b").open().unwrap();
    b.set("warm", &0).unwrap();
    let e = through
        .tx(|tx| {
            tx.with(&b).set("lost", &1)?;
            proxy.set(pg::Mode::CutAnswers);
            Ok(())
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}");
    proxy.set(pg::Mode::Forward);
    assert_eq!(
        direct.bucket::<i64>("b").open().unwrap().get("lost").unwrap(),
        Some(1),
        "the COMMIT had reached the server"
    );
}

#[test]
fn kv16_on_postgres_a_view_reads_one_snapshot() {
    let location = pg::fresh("kv16_view");
    let (store, other) = (manual(&location), manual(&location));
    let b = store.bucket::<i64>("b").open().unwrap();
    let theirs = other.bucket::<i64>("b").open().unwrap();
    b.set("a", &1).unwrap();
    b.set("b", &2).unwrap();
    store
        .view(|v| {
            assert_eq!(v.with(&b).get("a")?, Some(1));
            theirs.set("a", &10)?;
            theirs.set("c", &3)?;
            assert_eq!(v.with(&b).get("a")?, Some(1), "the snapshot, not the write after it");
            let keys: Vec<String> = v
                .with(&b)
                .all()
                .map(|e| e.map(|e| e.key.to_string()))
                .collect::<tinystore::Result<_>>()?;
            assert_eq!(keys, ["a", "b"]);
            Ok(())
        })
        .unwrap();
    assert_eq!(b.get("a").unwrap(), Some(10));
}

/// A binding's transaction and snapshot (what Python, Node, Bun and Go
/// call through) on PostgreSQL, through the scope their calls take.
#[test]
fn kv16_on_postgres_a_bindings_transaction_and_snapshot_go_through_their_scope() {
    use tinystore::{Raw, Scope};
    let store = manual(&pg::fresh("kv16_sessions"));
    let typed = store.raw_bucket("b").open().unwrap();
    let b = typed.raw();
    let (s, done) = store.transaction().unwrap();
    Scope::Tx(&s)
        .set(b, b"k", Raw::Int(1), WriteOptions::default())
        .unwrap();
    assert_eq!(Scope::Tx(&s).entry(b, b"k").unwrap().unwrap().value, Raw::Int(1));
    assert_eq!(typed.get("k").unwrap(), None, "nothing is seen before the commit");
    let e = b.set(b"other", Raw::Int(2), WriteOptions::default());
    assert!(e.is_ok(), "this thread is not marked as inside the transaction: {e:?}");
    s.hold_thread();
    let e = b.set(b"other", Raw::Int(3), WriteOptions::default()).unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::Invalid,
        "a write beside the transaction, from inside it: {e}"
    );
    s.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(typed.get("k").unwrap(), Some(Raw::Int(1)));
    assert_eq!(Scope::Tx(&s).entry(b, b"k").unwrap_err().kind(), ErrorKind::Closed);

    let (s, done) = store.transaction().unwrap();
    assert!(Scope::Tx(&s).delete(b, b"k", None).unwrap());
    s.rollback().unwrap();
    assert_eq!(done.recv().unwrap().unwrap_err().kind(), ErrorKind::Cancelled);
    assert_eq!(typed.get("k").unwrap(), Some(Raw::Int(1)), "a rollback writes nothing");

    let snap = store.snapshot().unwrap();
    assert_eq!(Scope::View(&snap).entry(b, b"k").unwrap().unwrap().value, Raw::Int(1));
    b.set(b"k", Raw::Int(5), WriteOptions::default()).unwrap();
    assert_eq!(Scope::View(&snap).entry(b, b"k").unwrap().unwrap().value, Raw::Int(1));
    assert_eq!(
        Scope::View(&snap)
            .set(b, b"k", Raw::Int(6), WriteOptions::default())
            .unwrap_err()
            .kind(),
        ErrorKind::Invalid,
        "a view only reads"
    );
    snap.close();
    assert_eq!(Scope::View(&snap).entry(b, b"k").unwrap_err().kind(), ErrorKind::Closed);
}

/// A binding's transaction held past TX_LIMIT on the store's clock is
/// rolled back, and answers as on kv.db: `done` and every call after it
/// get `Limit`, nothing of it is written, and the store writes after.
#[test]
fn kv16_on_postgres_a_bindings_transaction_held_past_the_limit_is_rolled_back() {
    use tinystore::{Raw, Scope, TX_LIMIT};
    let store = manual(&pg::fresh("kv16_tx_limit"));
    let typed = store.raw_bucket("b").open().unwrap();
    let b = typed.raw();
    let attempts = store.counters("attempts").open().unwrap();
    let (s, done) = store.transaction().unwrap();
    Scope::Tx(&s)
        .set(b, b"k", Raw::Int(1), WriteOptions::default())
        .unwrap();
    assert_eq!(Scope::Tx(&s).counter_add(&attempts, b"ada", 1).unwrap(), 1);
    store.clock().advance(TX_LIMIT).unwrap();
    assert!(
        Scope::Tx(&s).entry(b, b"k").unwrap().is_some(),
        "at the limit it is still open"
    );
    store.clock().advance(std::time::Duration::from_millis(1)).unwrap();
    let e = Scope::Tx(&s).entry(b, b"k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(e.message().contains("open longer than 10s and was rolled back"), "{e}");
    let e = done.try_recv().expect("done answered at the rollback").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert_eq!(s.commit().unwrap_err().kind(), ErrorKind::Limit, "a commit after it");
    assert_eq!(
        Scope::Tx(&s).counter_add(&attempts, b"ada", 1).unwrap_err().kind(),
        ErrorKind::Limit
    );
    assert_eq!(typed.get("k").unwrap(), None, "nothing of it was written");
    assert_eq!(attempts.get("ada").unwrap(), 0);
    typed.set("k", &Raw::Int(2)).unwrap();
    let (s, done) = store.transaction().unwrap();
    assert_eq!(Scope::Tx(&s).counter_add(&attempts, b"ada", 1).unwrap(), 1);
    s.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(attempts.get("ada").unwrap(), 1, "the store writes after");
}

/// A transaction left idle past the limit is rolled back at the store's
/// next maintenance, without a call of its own, so the locks it held no
/// longer stop another server's writes of its keys.
#[test]
fn kv16_on_postgres_an_idle_transaction_past_the_limit_lets_go_at_maintenance() {
    use tinystore::{Raw, Scope, TX_LIMIT};
    let location = pg::fresh("kv16_tx_limit_idle");
    let (store, other) = (manual(&location), manual(&location));
    let typed = store.raw_bucket("b").open().unwrap();
    let b = typed.raw();
    typed.set("k", &Raw::Int(1)).unwrap();
    let (s, done) = store.transaction().unwrap();
    Scope::Tx(&s)
        .set(b, b"k", Raw::Int(2), WriteOptions::default())
        .unwrap();
    store.clock().advance(TX_LIMIT).unwrap();
    store.maintain().unwrap();
    assert!(done.try_recv().is_err(), "not past the limit yet");
    store.clock().advance(std::time::Duration::from_millis(1)).unwrap();
    store.maintain().unwrap();
    let e = done.try_recv().expect("maintenance rolled it back").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    // The row's lock went with it: this write would wait for it otherwise.
    let theirs = other.raw_bucket("b").open().unwrap();
    theirs.set("k", &Raw::Int(3)).unwrap();
    assert_eq!(typed.get("k").unwrap(), Some(Raw::Int(3)));
    assert_eq!(Scope::Tx(&s).entry(b, b"k").unwrap_err().kind(), ErrorKind::Limit);
}

#[test]
fn kv16_on_postgres_an_async_tx_writes_all_or_nothing() {
    let store = manual(&pg::fresh("kv16_async_tx"));
    let stock = store.bucket::<i64>("stock").open().unwrap();
    stock.set("apples", &3).unwrap();
    pollster::block_on(store.aio().tx(|tx| {
        let left = tx.with(&stock).get("apples")?.unwrap_or(0);
        tx.with(&stock).set("apples", &(left - 1)).map(|_| ())
    }))
    .unwrap();
    assert_eq!(stock.get("apples").unwrap(), Some(2));
    let e = pollster::block_on(store.aio().tx(|tx| {
        tx.with(&stock).set("apples", &0)?;
        Err::<(), _>(Error::new(ErrorKind::Invalid, "out of apples"))
    }))
    .unwrap_err();
    assert!(e.to_string().contains("out of apples"), "{e}");
    assert_eq!(stock.get("apples").unwrap(), Some(2), "a failed async tx wrote nothing");
}

/// A binding's snapshot left idle past VIEW_LIMIT ends at the store's next
/// maintenance, read or not, so it holds no connection in a transaction
/// (nor the database's oldest snapshot); its next read is `Limit`.
#[test]
fn kv16_on_postgres_an_idle_view_past_its_bound_lets_go_at_maintenance() {
    use tinystore::{Raw, Scope, VIEW_LIMIT};
    let app = "kv16_view_idle";
    let store = manual(&format!("{}&application_name={app}", pg::fresh(app)));
    let typed = store.raw_bucket("b").open().unwrap();
    let b = typed.raw();
    typed.set("k", &Raw::Int(1)).unwrap();
    let in_a_transaction = || {
        pg::query(
            "public",
            &format!(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{app}' \
                 AND state LIKE 'idle in transaction%'"
            ),
        )
    };
    let snap = store.snapshot().unwrap();
    assert!(Scope::View(&snap).entry(b, b"k").unwrap().is_some());
    assert_eq!(in_a_transaction().as_deref(), Some("1"));
    store.clock().advance(VIEW_LIMIT).unwrap();
    store.maintain().unwrap();
    assert_eq!(in_a_transaction().as_deref(), Some("1"), "not past its bound yet");
    store.clock().advance(std::time::Duration::from_millis(1)).unwrap();
    store.maintain().unwrap();
    assert_eq!(in_a_transaction().as_deref(), Some("0"), "maintenance ended it");
    let e = Scope::View(&snap).entry(b, b"k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(e.message().contains("open longer than 5s"), "{e}");
}
