//! KV-16: a panic in the user's code inside `tx`, `once.run`, a codec or a
//! completion rolls back what it was part of, gives the writer back, goes on
//! to the caller (or, on the writer thread, is logged), and leaves the store
//! writing. A web framework catches a handler's panic and serves the next
//! request on the same store; these tests do what it does.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::Duration;

use tinystore::{CodecError, ErrorKind, Store};

/// The store writes, in a plain write and in a transaction, after whatever
/// came before.
fn still_writes(store: &Store) {
    let b = store.bucket::<i64>("after").open().unwrap();
    b.set("plain", &3).unwrap();
    store.tx(|tx| tx.with(&b).set("in-tx", &4)).unwrap();
    assert_eq!(b.get("plain").unwrap(), Some(3));
    assert_eq!(b.get("in-tx").unwrap(), Some(4));
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[test]
fn kv16_a_panic_in_tx_rolls_back_goes_on_and_the_store_keeps_writing() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("kept", &1).unwrap();
    let caught = catch_unwind(AssertUnwindSafe(|| {
        store.tx(|tx| -> tinystore::Result<()> {
            tx.with(&b).set("inside", &2)?;
            tx.with(&b).delete("kept")?;
            panic!("boom")
        })
    }));
    let p = caught.expect_err("the panic goes on to the caller");
    assert_eq!(panic_text(p.as_ref()), "boom", "the caller's own panic, not another");
    assert_eq!(b.get("inside").unwrap(), None, "rolled back");
    assert_eq!(b.get("kept").unwrap(), Some(1), "rolled back");
    b.set("after", &3).unwrap();
    assert_eq!(b.get("after").unwrap(), Some(3));
    still_writes(&store);
    // A write from outside the transaction is not refused as if it were in one.
    std::thread::scope(|s| {
        s.spawn(|| b.set("other-thread", &5).unwrap());
    });
}

#[test]
fn kv16_a_panic_in_once_run_keeps_nothing_and_the_store_keeps_writing() {
    let (_d, store) = common::manual();
    let once = store.once::<String>("sends").open().unwrap();
    let caught = catch_unwind(AssertUnwindSafe(|| {
        once.run("m-1", || -> tinystore::Result<String> { panic!("boom") })
    }));
    assert!(caught.is_err(), "the panic goes on");
    assert_eq!(once.get("m-1").unwrap(), None, "a panic keeps nothing");
    let again = once.run("m-1", || Ok("sent".to_string())).unwrap();
    assert_eq!(again, "sent", "the key runs again");
    still_writes(&store);
}

#[test]
fn kv16_a_panicking_codec_inside_tx_rolls_back_and_the_store_keeps_writing() {
    let (_d, store) = common::manual();
    let plain = store.bucket::<i64>("plain").open().unwrap();
    let coded = store
        .bucket::<String>("coded")
        .codec((
            |_: &String| -> Result<Vec<u8>, CodecError> { panic!("codec boom") },
            |b: &[u8]| -> Result<String, CodecError> { Ok(String::from_utf8_lossy(b).into_owned()) },
        ))
        .open()
        .unwrap();
    let e = store
        .tx(|tx| {
            tx.with(&plain).set("inside", &1)?;
            tx.with(&coded).set("k", &"v".to_string())
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.to_string().contains("codec boom"), "{e}");
    assert_eq!(plain.get("inside").unwrap(), None, "rolled back");
    still_writes(&store);
}

#[test]
fn kv16_a_panicking_completion_on_the_writer_thread_leaves_the_store_writing() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    // Hold the writer so that the write is queued and answered on the writer thread.
    let (go, h) = common::hold_writer(&store);
    let (ran, has_run) = mpsc::channel::<()>();
    b.set_then("k", &1, move |_| {
        ran.send(()).unwrap();
        panic!("completion boom")
    })
    .unwrap();
    go.send(()).unwrap();
    h.join().unwrap();
    has_run.recv_timeout(Duration::from_secs(10)).unwrap();
    // The writer thread is alive: a write queued to it is answered.
    let (tx, rx) = mpsc::channel();
    b.set_then("queued", &2, move |r| tx.send(r).unwrap()).unwrap();
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the writer thread answers after a completion panicked")
        .unwrap();
    assert_eq!(
        b.get("k").unwrap(),
        Some(1),
        "the write committed before its completion ran"
    );
    still_writes(&store);
}

#[test]
fn kv16_a_panicking_completion_on_the_callers_thread_goes_on_and_gives_the_writer_back() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    // Waited for by its caller with nothing queued: the write commits on the
    // caller's own thread, and so does its completion.
    let caught = catch_unwind(AssertUnwindSafe(|| {
        tinystore::submit_waited(|| b.set_then("k", &1, |_| panic!("completion boom")))
    }));
    if let Err(p) = caught {
        assert_eq!(panic_text(p.as_ref()), "completion boom");
    }
    assert_eq!(b.get("k").unwrap(), Some(1));
    still_writes(&store);
}
