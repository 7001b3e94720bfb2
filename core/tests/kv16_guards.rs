//! The guards against deadlock as a binding drives them (KV-16, KV-11): the
//! caller's context, handed down as a `CallerContext`, decides whether a
//! call would wait for its own caller, whatever thread it arrives on, and
//! the refusal is the core's one error of each guard.

mod common;

use std::sync::mpsc;

use tinystore::{Begun, BindingTx, CallerContext, ErrorKind, Raw, Store};

fn begin(store: &Store) -> (BindingTx, mpsc::Receiver<tinystore::Result<()>>) {
    store.transaction().unwrap()
}

fn begin_run(once: &tinystore::RawOnce, key: &str, caller: &CallerContext) -> tinystore::Result<Begun> {
    let (tx, rx) = mpsc::sync_channel(1);
    once.begin(key, caller, move |r| {
        let _ = tx.send(r);
    })?;
    rx.recv().unwrap()
}

#[test]
fn kv16_a_context_inside_a_tx_is_refused_a_write_outside_it_on_any_thread() {
    let (_d, store) = common::manual();
    let (tx, done) = begin(&store);
    let inside = CallerContext::new().inside_tx(&tx, 0);
    // An event loop's thread holds no mark: the context alone says it is inside.
    let (s2, c2) = (store.clone(), inside.clone());
    let e = std::thread::spawn(move || s2.refuse_write(|| c2))
        .join()
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.message(), tinystore::inside_tx_error().message());
    assert_eq!(
        store.refuse_write(CallerContext::new).map_err(|e| e.kind()),
        Ok(()),
        "a context inside nothing waits its turn"
    );
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(
        store.refuse_write(|| inside.clone()).map_err(|e| e.kind()),
        Ok(()),
        "the transaction ended: its context writes"
    );
}

#[test]
fn kv16_a_tx_inside_a_tx_of_the_same_caller_is_refused_with_the_one_message() {
    let (_d, store) = common::manual();
    let (tx, done) = begin(&store);
    let inside = CallerContext::new().inside_tx(&tx, 7);
    let e = store.refuse_tx(&inside, 7).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.message(), tinystore::nested_tx_error().message());
    // A task started inside, which inherited the context, is another caller.
    assert_eq!(store.refuse_tx(&inside, 8).map_err(|e| e.kind()), Ok(()));
    // This thread holds it too once marked, as Rust's own `tx` does.
    tx.hold_thread();
    let e = store.refuse_tx(&CallerContext::new(), 0).unwrap_err();
    assert_eq!(e.message(), tinystore::nested_tx_error().message());
    let e = store.tx(|_| Ok(())).unwrap_err();
    assert_eq!(
        e.message(),
        tinystore::nested_tx_error().message(),
        "Rust's tx says the same"
    );
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(store.refuse_tx(&inside, 7).map_err(|e| e.kind()), Ok(()));
}

#[test]
fn kv16_a_nested_rust_tx_is_refused_with_the_one_message() {
    let (_d, store) = common::manual();
    let e = store.tx(|_| store.tx(|_| Ok(()))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.message(), tinystore::nested_tx_error().message());
}

#[test]
fn kv11_a_run_of_a_key_inside_its_own_run_is_refused_through_the_context() {
    let (_d, store) = common::manual();
    let once = tinystore::RawOnce::open(&store, "sends", None).unwrap();
    let Begun::Run(claim) = begin_run(&once, "k", &CallerContext::new()).unwrap() else {
        panic!("the first run of a key runs it");
    };
    let inside = CallerContext::new().inside_run(&claim);
    let e = begin_run(&once, "k", &inside).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.message(), tinystore::rerun_error().message());
    assert_eq!(e.bucket(), Some("sends"));
    // Another key, or another branch's key, is another run.
    let Begun::Run(other) = begin_run(&once, "j", &inside).unwrap() else {
        panic!("another key runs");
    };
    other.abandon();
    let (tx, rx) = mpsc::sync_channel(1);
    claim.keep(Raw::text("sent"), move |r| {
        let _ = tx.send(r);
    });
    rx.recv().unwrap().unwrap();
    // Kept: the key's answer, not a wait (the context of a run that ended).
    let Begun::Kept(v) = begin_run(&once, "k", &CallerContext::new()).unwrap() else {
        panic!("the answer is kept");
    };
    assert_eq!(v, Raw::text("sent"));
}

#[test]
fn kv16_a_run_of_once_from_a_context_inside_a_tx_is_refused() {
    let (_d, store) = common::manual();
    let once = tinystore::RawOnce::open(&store, "sends", None).unwrap();
    let (tx, done) = begin(&store);
    let inside = CallerContext::new().inside_tx(&tx, 0);
    let e = begin_run(&once, "k", &inside).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.message(), tinystore::once_run_refused().message());
    tx.commit().unwrap();
    done.recv().unwrap().unwrap();
}

#[test]
fn kv11_a_rust_run_inside_its_own_run_is_refused_with_the_one_message() {
    let (_d, store) = common::manual();
    let once = store.once::<String>("sends").open().unwrap();
    let inner = once.clone();
    let e = once.run("k", || inner.run("k", || Ok("inner".to_owned()))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.message(), tinystore::rerun_error().message());
    assert_eq!(once.run("j", || Ok("j".to_owned())).unwrap(), "j");
}
