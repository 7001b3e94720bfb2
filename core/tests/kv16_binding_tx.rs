//! KV-16 for the bindings: transactions and snapshots driven call by call.

mod common;

use std::sync::mpsc;

use tinystore::{BindingTx, ErrorKind, Joining, ListOptions, Raw, Scope, Store, WriteOptions};

fn begin(store: &Store) -> (BindingTx, mpsc::Receiver<tinystore::Result<()>>) {
    store.transaction().unwrap()
}

#[test]
fn kv16_session_commits_all_writes_together() {
    let (_d, store) = common::manual();
    let stock = store.bucket::<i64>("stock").open().unwrap();
    let orders = store.bucket::<String>("orders").open().unwrap();
    stock.set("apples", &3).unwrap();
    let (tx, done) = begin(&store);
    let left = Scope::Tx(&tx)
        .take(stock.raw(), b"apples", None, |_| Ok(()))
        .unwrap()
        .unwrap();
    assert_eq!(left.value, Raw::Int(3));
    assert_eq!(
        Scope::Tx(&tx).entry(stock.raw(), b"apples").unwrap(),
        None,
        "the session sees its own take"
    );
    Scope::Tx(&tx)
        .set(orders.raw(), b"o-1", Raw::text("apples"), WriteOptions::default())
        .unwrap();
    assert_eq!(
        stock.get("apples").unwrap(),
        Some(3),
        "others see nothing before the commit"
    );
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(stock.get("apples").unwrap(), None);
    assert_eq!(orders.get("o-1").unwrap().as_deref(), Some("apples"));
    assert_eq!(
        Scope::Tx(&tx).entry(stock.raw(), b"apples").unwrap_err().kind(),
        ErrorKind::Closed,
        "used after its end"
    );
}

#[test]
fn kv16_session_rollback_and_drop_write_nothing() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let (tx, done) = begin(&store);
    Scope::Tx(&tx)
        .set(b.raw(), b"k", Raw::Int(1), WriteOptions::default())
        .unwrap();
    tx.rollback().unwrap();
    assert_eq!(done.recv().unwrap().unwrap_err().kind(), ErrorKind::Cancelled);
    assert_eq!(b.get("k").unwrap(), None);
    let (tx, done) = begin(&store);
    Scope::Tx(&tx)
        .set(b.raw(), b"k", Raw::Int(1), WriteOptions::default())
        .unwrap();
    drop(tx);
    assert!(done.recv().unwrap().is_err());
    assert_eq!(b.get("k").unwrap(), None);
    b.set("k", &2).unwrap();
    assert_eq!(
        b.get("k").unwrap(),
        Some(2),
        "the writer works after a dropped transaction"
    );
}

#[test]
fn kv16_session_call_error_leaves_the_transaction_usable() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let v = b.set("k", &1).unwrap();
    b.set("k", &2).unwrap();
    let (tx, done) = begin(&store);
    let e = Scope::Tx(&tx).delete(b.raw(), b"k", Some(v)).unwrap_err();
    assert_eq!((e.kind(), e.path()), (ErrorKind::Conflict, Some("k")));
    Scope::Tx(&tx)
        .set(b.raw(), b"j", Raw::Int(5), WriteOptions::default())
        .unwrap();
    assert_eq!(
        Scope::Tx(&tx)
            .list(b.raw(), &ListOptions::default())
            .unwrap()
            .entries
            .len(),
        2
    );
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!((b.get("k").unwrap(), b.get("j").unwrap()), (Some(2), Some(5)));
}

#[test]
fn kv16_snapshot_reads_one_point_in_time() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("a", &1).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(
        Scope::View(&snap).entry(b.raw(), b"a").unwrap().unwrap().value,
        Raw::Int(1)
    );
    b.set("a", &2).unwrap();
    b.set("c", &3).unwrap();
    assert_eq!(
        Scope::View(&snap).entry(b.raw(), b"a").unwrap().unwrap().value,
        Raw::Int(1)
    );
    assert_eq!(
        Scope::View(&snap)
            .list(b.raw(), &ListOptions::default())
            .unwrap()
            .entries
            .len(),
        1
    );
    snap.close();
    assert_eq!(
        Scope::View(&snap).entry(b.raw(), b"a").unwrap_err().kind(),
        ErrorKind::Closed
    );
}

#[test]
fn kv05_session_take_checked_keeps_a_value_its_check_refuses() {
    let (_d, store) = common::manual();
    let b = store.bucket::<String>("b").open().unwrap();
    b.set("bad", &"not a number".into()).unwrap();
    b.set("good", &"42".into()).unwrap();
    let as_number = |e: &tinystore::Entry<Raw>| match e.value.as_text()?.parse::<i64>() {
        Ok(_) => Ok(()),
        Err(_) => Err(tinystore::Error::new(ErrorKind::Corrupt, "not a number")),
    };
    let (tx, done) = begin(&store);
    let e = Scope::Tx(&tx)
        .take_checked(b.raw(), b"bad", None, as_number)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("not a number"), "the check's own error: {e}");
    assert_eq!((e.bucket(), e.path()), (Some("b"), Some("bad")), "{e}");
    assert!(
        Scope::Tx(&tx).entry(b.raw(), b"bad").unwrap().is_some(),
        "a value the check refuses stays"
    );
    let taken = Scope::Tx(&tx)
        .take_checked(b.raw(), b"good", None, as_number)
        .unwrap()
        .unwrap();
    assert_eq!(taken.value, Raw::text("42"));
    assert_eq!(
        Scope::Tx(&tx).entry(b.raw(), b"good").unwrap(),
        None,
        "a value that passes is taken"
    );
    assert_eq!(
        Scope::Tx(&tx).take_checked(b.raw(), b"gone", None, as_number).unwrap(),
        None
    );
    // A version that does not match is a conflict before the check runs.
    let at = Scope::Tx(&tx).entry(b.raw(), b"bad").unwrap().unwrap().version;
    let other = tinystore::Version::from_raw(at.get() + 1);
    let e = Scope::Tx(&tx)
        .take_checked(b.raw(), b"bad", Some(other), |_| {
            panic!("checked a value at another version")
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(b.get("bad").unwrap().as_deref(), Some("not a number"));
    assert_eq!(b.get("good").unwrap(), None);
}

#[test]
fn kv05_direct_take_checked_takes_only_the_row_it_checked() {
    let (_d, store) = common::manual();
    let b = store.bucket::<String>("b").open().unwrap();
    b.set("k", &"1".into()).unwrap();
    // Checked, then written again before the take: a conflict, and it stays.
    let checked = b.raw().check_before_take(b"k", None, |_| Ok(())).unwrap().unwrap();
    b.set("k", &"2".into()).unwrap();
    let e = b.raw().take(b"k", None, checked.still_read()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!((e.bucket(), e.path()), (Some("b"), Some("k")), "{e}");
    assert_eq!(b.get("k").unwrap().as_deref(), Some("2"));
    // Checked, then taken by another: absent, so the take answers None.
    let checked = b.raw().check_before_take(b"k", None, |_| Ok(())).unwrap().unwrap();
    assert_eq!(b.take("k").unwrap().as_deref(), Some("2"));
    assert_eq!(b.raw().take(b"k", None, checked.still_read()).unwrap(), None);
    // Absent and no version asked for: nothing to take, nothing checked.
    let none = b
        .raw()
        .check_before_take(b"k", None, |_| panic!("checked an absent key"))
        .unwrap();
    assert!(none.is_none());
    // The whole rule in one call.
    b.set("k", &"3".into()).unwrap();
    let taken = Scope::Direct
        .take_checked(b.raw(), b"k", None, |_| Ok(()))
        .unwrap()
        .unwrap();
    assert_eq!(taken.value, Raw::text("3"));
}

#[test]
fn kv16_session_joins_counters_quotas_and_once_answers_all_or_nothing() {
    let (_d, store) = common::manual();
    let attempts = store.counters("attempts").open().unwrap();
    let hits = store
        .counters("hits")
        .flush_every(std::time::Duration::from_secs(1))
        .open()
        .unwrap();
    let plan = store
        .quota("messages")
        .window("daily", 2, std::time::Duration::from_secs(86_400))
        .open()
        .unwrap();
    let sends = store.once::<String>("sends").open().unwrap();
    sends.run("old", || Ok("kept".to_string())).unwrap();
    for commit in [false, true] {
        let (tx, done) = begin(&store);
        assert_eq!(Scope::Tx(&tx).counter_add(&attempts, b"ada", 2).unwrap(), 2);
        assert_eq!(Scope::Tx(&tx).counter_max(&attempts, b"ada", 5).unwrap(), 5);
        assert_eq!(Scope::Tx(&tx).counter_get(&attempts, b"ada").unwrap(), 5);
        assert!(Scope::Tx(&tx).quota_allow(&plan, b"ada", 1).unwrap().ok);
        assert_eq!(Scope::Tx(&tx).quota_peek(&plan, b"ada").unwrap().left, 1);
        assert!(Scope::Tx(&tx).once_get(sends.raw(), b"old").unwrap().is_some());
        assert!(Scope::Tx(&tx).once_delete(sends.raw(), b"old").unwrap());
        let refused = Scope::Tx(&tx).counter_add(&hits, b"ada", 1).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Invalid);
        assert!(refused.message().contains("flush_every"), "{refused}");
        assert_eq!(attempts.get("ada").unwrap(), 0, "others see nothing before the commit");
        if commit {
            tx.commit().unwrap();
            done.recv().unwrap().unwrap();
        } else {
            tx.rollback().unwrap();
            assert!(done.recv().unwrap().is_err());
            assert_eq!(attempts.get("ada").unwrap(), 0);
            assert_eq!(plan.peek("ada").unwrap().left, 2);
            assert!(sends.get("old").unwrap().is_some());
        }
    }
    assert_eq!(attempts.get("ada").unwrap(), 5);
    assert_eq!(plan.peek("ada").unwrap().left, 1);
    assert_eq!(sends.get("old").unwrap(), None);
    attempts.add("ada", 1).unwrap();
}

#[test]
fn kv16_session_a_thread_that_holds_it_is_refused_a_write_outside_it_at_once() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let (tx, done) = begin(&store);
    tx.hold_thread();
    let inside = tinystore::CallerContext::new().inside_tx(&tx, 0);
    let started = std::time::Instant::now();
    let e = b.set("k", &1).unwrap_err();
    assert_eq!(e.message(), tinystore::inside_tx_error().message());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "at once, not at the limit"
    );
    // Another thread's write waits its turn instead.
    let b2 = b.clone();
    let other = std::thread::spawn(move || b2.set("k", &2));
    Scope::Tx(&tx)
        .set(b.raw(), b"k", Raw::Int(1), WriteOptions::default())
        .unwrap();
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    other.join().unwrap().unwrap();
    assert_eq!(b.get("k").unwrap(), Some(2));
    b.set("k", &3).unwrap();
    assert_eq!(
        store.refuse_write(|| inside.clone()).map_err(|e| e.kind()),
        Ok(()),
        "with the transaction ended, a context that was inside it is refused nothing"
    );
}

#[test]
fn kv16_session_a_thread_that_ended_it_writes_at_once_after() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    for commit in [false, true] {
        let (tx, done) = begin(&store);
        tx.hold_thread();
        Scope::Tx(&tx)
            .set(b.raw(), b"in", Raw::Int(1), WriteOptions::default())
            .unwrap();
        if commit {
            tx.commit().unwrap();
        } else {
            tx.rollback().unwrap();
        }
        // Before the writer thread has finished with the session, the
        // thread that ended it is no longer inside it.
        b.set("after", &2).unwrap();
        let _ = done.recv().unwrap();
    }
    assert_eq!(b.get("after").unwrap(), Some(2));
}

#[test]
fn kv16_session_calls_run_on_the_callers_thread() {
    // A call crosses no thread: its work (here a take's check) runs on the
    // thread that made it, as a Rust `tx` runs its closure.
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("k", &1).unwrap();
    let (tx, done) = begin(&store);
    let (seen, on) = mpsc::channel();
    Scope::Tx(&tx)
        .take(b.raw(), b"k", None, move |_| {
            let _ = seen.send(std::thread::current().id());
            Ok(())
        })
        .unwrap();
    assert_eq!(on.recv().unwrap(), std::thread::current().id());
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(b.get("k").unwrap(), None);
}

#[test]
fn kv16_session_a_panic_in_a_call_rolls_back_and_the_store_keeps_writing() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("kept", &1).unwrap();
    let (tx, done) = begin(&store);
    let s = Scope::Tx(&tx);
    s.set(b.raw(), b"inside", Raw::Int(2), WriteOptions::default()).unwrap();
    let e = s
        .take(b.raw(), b"kept", None, |_| panic!("a check that panics"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert!(e.message().contains("a check that panics"), "{e}");
    let later = s.entry(b.raw(), b"inside").unwrap_err();
    assert_eq!(
        (later.kind(), later.message()),
        (ErrorKind::Invalid, e.message()),
        "the transaction ended with the panic, and later calls say so"
    );
    assert!(done.recv().unwrap().is_err(), "nothing was committed");
    assert_eq!(b.get("inside").unwrap(), None);
    assert_eq!(b.get("kept").unwrap(), Some(1));
    assert_eq!(tx.commit().unwrap_err().kind(), ErrorKind::Invalid, "nothing to commit");
    b.set("after", &3).unwrap();
    let (tx, done) = begin(&store);
    Scope::Tx(&tx)
        .set(b.raw(), b"next", Raw::Int(4), WriteOptions::default())
        .unwrap();
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!((b.get("after").unwrap(), b.get("next").unwrap()), (Some(3), Some(4)));
}

#[test]
fn kv16_session_calls_from_several_threads_take_turns_inside_it() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let (tx, done) = begin(&store);
    std::thread::scope(|sc| {
        for t in 0..4u8 {
            let (tx, b) = (&tx, &b);
            sc.spawn(move || {
                for i in 0..50u8 {
                    Scope::Tx(tx)
                        .set(b.raw(), &[b'a' + t, i], Raw::Int(i.into()), WriteOptions::default())
                        .unwrap();
                }
            });
        }
    });
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(
        Scope::Direct
            .list(
                b.raw(),
                &ListOptions {
                    after: None,
                    limit: Some(1000)
                }
            )
            .unwrap()
            .entries
            .len(),
        200
    );
}

#[test]
fn kv16_scope_runs_one_operation_directly_in_a_transaction_and_in_a_view() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    Scope::Direct
        .set(b.raw(), b"d", Raw::Int(1), WriteOptions::default())
        .unwrap();
    let (tx, done) = begin(&store);
    Scope::Tx(&tx)
        .set(b.raw(), b"t", Raw::Int(2), WriteOptions::default())
        .unwrap();
    assert!(Scope::Tx(&tx).has(b.raw(), b"d").unwrap());
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    let snap = store.snapshot().unwrap();
    let view = Scope::View(&snap);
    assert!(view.has(b.raw(), b"d").unwrap() && view.has(b.raw(), b"t").unwrap());
    let e = view
        .set(b.raw(), b"v", Raw::Int(3), WriteOptions::default())
        .unwrap_err();
    assert_eq!((e.kind(), e.bucket()), (ErrorKind::Invalid, Some("b")), "{e}");
    assert!(!Scope::Direct.has(b.raw(), b"v").unwrap(), "a view writes nothing");
}

#[test]
fn kv16_session_a_call_from_inside_its_own_call_is_invalid_not_a_deadlock() {
    // A take's check runs inside the call (a binding's codec, which may call
    // back into the transaction): the inner call is refused at once.
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("k", &1).unwrap();
    let (tx, done) = begin(&store);
    let s = Scope::Tx(&tx);
    let e = s
        .take_checked(b.raw(), b"k", None, |_| {
            let inner = s.entry(b.raw(), b"k").unwrap_err();
            assert_eq!(inner.kind(), ErrorKind::Invalid, "{inner}");
            Err(inner)
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert!(
        s.entry(b.raw(), b"k").unwrap().is_some(),
        "the transaction goes on; the value stays"
    );
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(b.get("k").unwrap(), Some(1));
}

#[test]
fn kv16_a_rate_limit_in_a_session_is_invalid_saying_why_and_counts_nothing() {
    let (_d, store) = common::manual();
    let logins = store
        .rate_limit("logins")
        .rate(2, std::time::Duration::from_secs(60))
        .open()
        .unwrap();
    let (tx, done) = begin(&store);
    let refusals = [
        Scope::Tx(&tx).rate_limit_allow(&logins, b"k", 1).unwrap_err(),
        Scope::Tx(&tx).rate_limit_peek(&logins, b"k").unwrap_err(),
        Scope::Tx(&tx).rate_limit_reset(&logins, b"k").unwrap_err(),
    ];
    for e in refusals {
        assert_eq!(e.kind(), ErrorKind::Invalid);
        assert_eq!(e.message(), tinystore::rate_limit_refused("logins").message());
        assert_eq!(e.bucket(), Some("logins"));
    }
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert!(
        Scope::Direct.rate_limit_allow(&logins, b"k", 2).unwrap().ok,
        "the refused calls counted nothing"
    );
    assert!(!Scope::Direct.rate_limit_peek(&logins, b"k").unwrap().ok);
}

#[test]
fn kv16_a_handle_of_another_store_is_refused_in_a_transaction_and_a_view() {
    let (_d, store) = common::manual();
    let (_d2, other) = common::manual();
    let mine = store.bucket::<i64>("b").open().unwrap();
    let theirs = other.bucket::<i64>("b").open().unwrap();
    let counters = other.counters("hits").open().unwrap();
    let (tx, done) = begin(&store);
    let view = store.snapshot().unwrap();
    let refused = tinystore::other_store_refused("b");
    for scope in [Scope::Tx(&tx), Scope::View(&view)] {
        assert!(scope.admit(mine.raw().store(), "b").is_ok(), "its own store's handle");
        let at_with = scope.admit(theirs.raw().store(), "b").unwrap_err();
        let at_call = scope.entry(theirs.raw(), b"k").unwrap_err();
        for e in [at_with, at_call] {
            assert_eq!(e.kind(), ErrorKind::Invalid);
            assert_eq!(e.message(), refused.message(), "one text for with and for a call");
            assert_eq!(e.bucket(), Some("b"));
        }
    }
    let e = Scope::Tx(&tx).counter_add(&counters, b"k", 1).unwrap_err();
    assert_eq!(e.message(), refused.message());
    Scope::Tx(&tx)
        .set(theirs.raw(), b"k", Raw::Int(1), WriteOptions::default())
        .unwrap_err();
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(theirs.get("k").unwrap(), None, "nothing was written to the other store");
    assert!(
        Scope::Direct.admit(theirs.raw().store(), "b").is_ok(),
        "on a store, any handle"
    );
}

#[test]
fn kv16_with_refuses_what_cannot_join_a_scope_in_the_cores_texts() {
    let (_d, store) = common::manual();
    let (_d2, other) = common::manual();
    let minute = std::time::Duration::from_secs(60);
    let logins = store.rate_limit("logins").rate(2, minute).open().unwrap();
    let hits = store.counters("hits").open().unwrap();
    let buffered = store.counters("views").flush_every(minute).open().unwrap();
    let theirs = other.counters("hits").open().unwrap();
    let (tx, done) = begin(&store);
    let view = store.snapshot().unwrap();
    let refused = |scope: Scope<'_>, handle| scope.join(handle).unwrap_err();
    let cases = [
        (
            refused(Scope::Tx(&tx), Joining::RateLimit(&logins)),
            tinystore::rate_limit_refused("logins"),
        ),
        (
            refused(Scope::Tx(&tx), Joining::Counters(&buffered)),
            tinystore::flush_every_refused("views"),
        ),
        (
            refused(Scope::Tx(&tx), Joining::Counters(&theirs)),
            tinystore::other_store_refused("hits"),
        ),
        (
            refused(Scope::View(&view), Joining::Counters(&theirs)),
            tinystore::other_store_refused("hits"),
        ),
    ];
    for (e, want) in cases {
        assert_eq!(e.kind(), ErrorKind::Invalid);
        assert_eq!(e.message(), want.message());
        assert_eq!(e.bucket(), want.bucket());
    }
    let e = refused(Scope::View(&view), Joining::RateLimit(&logins));
    assert_eq!((e.kind(), e.bucket()), (ErrorKind::Invalid, Some("logins")));
    assert!(
        Scope::Tx(&tx).join(Joining::Counters(&hits)).is_ok(),
        "durable counters of its store"
    );
    assert!(Scope::View(&view).join(Joining::Counters(&hits)).is_ok());
    assert!(
        Scope::Direct.join(Joining::RateLimit(&logins)).is_ok(),
        "on a store, any handle"
    );
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
}
