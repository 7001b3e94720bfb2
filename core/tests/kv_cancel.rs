//! Giving up on a call with a `Cancel` (what every binding's cancellation
//! rests on): a queued write is answered `Cancelled` at once, writing
//! nothing, even while a transaction holds the writer; a write of a
//! started group finishes; a transaction waiting for its turn, and a run
//! of once waiting for another, stop waiting; a transaction whose caller
//! gave up before the commit writes nothing.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use tinystore::{Begun, CallerContext, Cancel, ErrorKind, Raw, Scope, WriteOptions, cancellable};

/// Long enough that an answer that does not come is a failure, not a race.
const ANSWER: Duration = Duration::from_secs(10);

#[test]
fn kv15_a_queued_write_given_up_is_answered_at_once_and_writes_nothing() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let (go, h) = common::hold_writer(&store);
    let cancel = Cancel::new();
    let (tx, rx) = mpsc::channel();
    let (kept_tx, kept_rx) = mpsc::channel();
    cancellable(&cancel, || b.set_then("given-up", &1, move |r| tx.send(r).unwrap())).unwrap();
    b.set_then("kept", &2, move |r| kept_tx.send(r).unwrap()).unwrap();
    cancel.fire();
    // Answered while the transaction still holds the writer.
    let e = rx.recv_timeout(ANSWER).unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    assert_eq!((e.bucket(), e.path()), (Some("b"), Some("given-up")), "{e}");
    go.send(()).unwrap();
    h.join().unwrap();
    kept_rx.recv_timeout(ANSWER).unwrap().unwrap();
    assert_eq!(b.get("given-up").unwrap(), None);
    assert_eq!(b.get("kept").unwrap(), Some(2));
}

#[test]
fn kv15_a_cancel_fired_before_the_call_submits_nothing() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let cancel = Cancel::new();
    cancel.fire();
    let mut submitted = false;
    let e = cancellable(&cancel, || {
        submitted = true;
        b.set_then("k", &1, |_| {})
    })
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert!(!submitted);
    assert_eq!(b.get("k").unwrap(), None);
}

#[test]
fn kv15_a_write_of_a_group_that_started_finishes_with_it() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let cancel = Cancel::new();
    let (tx, rx) = mpsc::channel();
    cancellable(&cancel, || b.set_then("k", &1, move |r| tx.send(r).unwrap())).unwrap();
    rx.recv_timeout(ANSWER).unwrap().unwrap();
    cancel.fire(); // after its group: nothing to give up
    assert_eq!(b.get("k").unwrap(), Some(1));
}

#[test]
fn kv16_a_transaction_waiting_for_its_turn_stops_waiting() {
    let (_d, store) = common::manual();
    let (go, h) = common::hold_writer(&store);
    let cancel = Cancel::new();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    cancellable(&cancel, || {
        store.transaction_then(
            move |r| ready_tx.send(r.map(drop)).unwrap(),
            move |r| done_tx.send(r).unwrap(),
        )
    })
    .unwrap();
    cancel.fire();
    let e = ready_rx.recv_timeout(ANSWER).unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    assert_eq!(
        done_rx.recv_timeout(ANSWER).unwrap().unwrap_err().kind(),
        ErrorKind::Cancelled
    );
    go.send(()).unwrap();
    h.join().unwrap();
}

#[test]
fn kv16_a_transaction_given_up_before_its_commit_writes_nothing() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    store
        .transaction_then(move |r| ready_tx.send(r).unwrap(), move |r| done_tx.send(r).unwrap())
        .unwrap();
    let session = ready_rx.recv_timeout(ANSWER).unwrap().unwrap();
    Scope::Tx(&session)
        .set(b.raw(), b"k", Raw::int(1), WriteOptions::default())
        .unwrap();
    let cancel = Cancel::new();
    cancel.fire();
    session.commit_unless(Some(&cancel)).unwrap();
    let e = done_rx.recv_timeout(ANSWER).unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    assert!(e.message().contains("nothing was written"), "{e}");
    drop(session);
    assert_eq!(b.get("k").unwrap(), None);
}

#[test]
fn kv11_a_run_waiting_for_another_run_of_its_key_stops_waiting_and_runs_nothing() {
    let (_d, store) = common::manual();
    let once = store.once::<i64>("sends").open().unwrap();
    let (gate, hold) = common::held_run();
    let once = &once;
    std::thread::scope(|s| {
        let first = s.spawn(move || {
            once.run("k", || {
                hold.hold();
                Ok(41)
            })
        });
        gate.wait_started();
        let cancel = Cancel::new();
        let (ready, answer) = mpsc::channel();
        cancellable(&cancel, || {
            once.raw()
                .begin("k", &CallerContext::new(), move |r| ready.send(r).unwrap())
        })
        .unwrap();
        cancel.fire();
        // Answered while the first run still holds the key.
        match answer.recv_timeout(ANSWER).unwrap() {
            Err(e) => assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}"),
            Ok(Begun::Kept(_) | Begun::Run(_)) => panic!("the waiter was answered though it gave up"),
        }
        gate.release();
        assert_eq!(first.join().unwrap().unwrap(), 41);
    });
    assert_eq!(once.get("k").unwrap(), Some(41));
    assert_eq!(once.run("k", || Ok(9)).unwrap(), 41);
}
