//! KV-16 for the bindings: transactions and snapshots driven call by call.

mod common;

use std::sync::mpsc;

use tinystore::{ErrorKind, ListOptions, Raw, Store, TxSession, WriteOptions};

fn begin(store: &Store) -> (TxSession, mpsc::Receiver<tinystore::Result<()>>) {
    store.transaction().unwrap()
}

#[test]
fn kv16_session_commits_all_writes_together() {
    let (_d, store) = common::manual();
    let stock = store.bucket::<i64>("stock").open().unwrap();
    let orders = store.bucket::<String>("orders").open().unwrap();
    stock.set("apples", &3).unwrap();
    let (tx, done) = begin(&store);
    let left = tx.take(stock.raw(), b"apples", None).unwrap().unwrap();
    assert_eq!(left.value, Raw::Int(3));
    assert_eq!(
        tx.entry(stock.raw(), b"apples").unwrap(),
        None,
        "the session sees its own take"
    );
    tx.set(orders.raw(), b"o-1", Raw::text("apples"), WriteOptions::default())
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
        tx.entry(stock.raw(), b"apples").unwrap_err().kind(),
        ErrorKind::Closed,
        "used after its end"
    );
}

#[test]
fn kv16_session_rollback_and_drop_write_nothing() {
    let (_d, store) = common::manual();
    let b = store.bucket::<i64>("b").open().unwrap();
    let (tx, done) = begin(&store);
    tx.set(b.raw(), b"k", Raw::Int(1), WriteOptions::default()).unwrap();
    tx.rollback().unwrap();
    assert_eq!(done.recv().unwrap().unwrap_err().kind(), ErrorKind::Cancelled);
    assert_eq!(b.get("k").unwrap(), None);
    let (tx, done) = begin(&store);
    tx.set(b.raw(), b"k", Raw::Int(1), WriteOptions::default()).unwrap();
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
    let e = tx.delete(b.raw(), b"k", Some(v)).unwrap_err();
    assert_eq!((e.kind(), e.path()), (ErrorKind::Conflict, Some("k")));
    tx.set(b.raw(), b"j", Raw::Int(5), WriteOptions::default()).unwrap();
    assert_eq!(tx.list(b.raw(), &ListOptions::default()).unwrap().entries.len(), 2);
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
    assert_eq!(snap.entry(b.raw(), b"a").unwrap().unwrap().value, Raw::Int(1));
    b.set("a", &2).unwrap();
    b.set("c", &3).unwrap();
    assert_eq!(snap.entry(b.raw(), b"a").unwrap().unwrap().value, Raw::Int(1));
    assert_eq!(snap.list(b.raw(), &ListOptions::default()).unwrap().entries.len(), 1);
    snap.close();
    assert_eq!(snap.entry(b.raw(), b"a").unwrap_err().kind(), ErrorKind::Closed);
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
    let e = tx.take_checked(b.raw(), b"bad", None, as_number).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("not a number"), "the check's own error: {e}");
    assert_eq!((e.bucket(), e.path()), (Some("b"), Some("bad")), "{e}");
    assert!(
        tx.entry(b.raw(), b"bad").unwrap().is_some(),
        "a value the check refuses stays"
    );
    let taken = tx.take_checked(b.raw(), b"good", None, as_number).unwrap().unwrap();
    assert_eq!(taken.value, Raw::text("42"));
    assert_eq!(
        tx.entry(b.raw(), b"good").unwrap(),
        None,
        "a value that passes is taken"
    );
    assert_eq!(tx.take_checked(b.raw(), b"gone", None, as_number).unwrap(), None);
    // A version that does not match is a conflict before the check runs.
    let at = tx.entry(b.raw(), b"bad").unwrap().unwrap().version;
    let other = tinystore::Version::from_raw(at.get() + 1);
    let e = tx
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
