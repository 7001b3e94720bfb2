//! What a PostgreSQL store answers when the database fails under it
//! (KV-15): a write whose commit was sent and never answered is
//! `OutcomeUnknown`, never a success; a database that is paused or down
//! gets every call answered within the deadline; the store reconnects by
//! itself. A proxy between the store and the CI server plays the faults.

mod common;
mod pg;

use std::time::{Duration, Instant};

use tinystore::{ErrorKind, Options, Store};

use pg::{Mode, Proxy};

fn stores(schema: &str) -> (Proxy, Store, Store) {
    let proxy = Proxy::start();
    let through = Store::open_with(proxy.location(schema), Options::new().test_clock(common::start())).unwrap();
    let direct = Store::open_with(
        format!("{}?schema={schema}", pg::server()),
        Options::new().test_clock(common::start()),
    )
    .unwrap();
    (proxy, through, direct)
}

/// Opens every shared connection (calls take them in turn; a store keeps
/// sixteen), so that the next statement goes out on an open one rather than
/// waiting to connect.
fn warm(b: &tinystore::Bucket<i64>) {
    for _ in 0..32 {
        b.get("warm").unwrap();
    }
}

#[test]
fn kv15_a_write_whose_answer_is_lost_is_outcome_unknown_not_success() {
    let (proxy, through, direct) = stores("kv15_lost_answer");
    let b = through.bucket::<i64>("b").open().unwrap();
    b.set("before", &1).unwrap();
    warm(&b);
    proxy.set(Mode::CutAnswers);
    let e = b.set("lost", &2).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}");
    assert!(e.message().contains("may or may not be in the database"), "{e}");
    // The statement had reached the server and committed.
    let seen = direct.bucket::<i64>("b").open().unwrap();
    assert_eq!(seen.get("lost").unwrap(), Some(2));
    // A write that locks its row first, cut before its COMMIT was sent,
    // wrote nothing and says so.
    proxy.set(Mode::Forward);
    assert!(b.create("warm", &0).unwrap(), "a held connection, open before the cut");
    proxy.set(Mode::CutAnswers);
    let e = b.create("created", &3).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("nothing of this call was written"), "{e}");
    assert_eq!(seen.get("created").unwrap(), None);
}

#[test]
fn kv15_a_paused_database_gets_every_call_answered_within_the_deadline() {
    let (proxy, through, _direct) = stores("kv15_paused");
    let b = through.bucket::<i64>("b").open().unwrap();
    b.set("k", &1).unwrap();
    warm(&b);
    proxy.set(Mode::Stall);
    let t = Instant::now();
    let e = b.get("k").err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("no answer within 2000 ms"), "{e}");
    let e = b.set("k", &2).err().unwrap();
    assert_eq!(
        e.kind(),
        ErrorKind::OutcomeUnknown,
        "a write sent to a paused server may commit later: {e}"
    );
    let e = b.take("k").err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    let took = t.elapsed();
    assert!(took < Duration::from_secs(8), "three calls took {took:?}");
    proxy.set(Mode::Forward);
    assert!(b.has("k").unwrap());
}

#[test]
fn kv15_a_database_that_is_down_is_a_clear_error_and_the_store_reconnects() {
    let (proxy, through, _direct) = stores("kv15_down");
    let b = through.bucket::<i64>("b").open().unwrap();
    b.set("k", &1).unwrap();
    proxy.set(Mode::Refuse);
    proxy.cut_all();
    let t = Instant::now();
    // The first call may find its connection cut; the next one cannot
    // connect at all.
    let _ = b.get("k");
    let e = b.get("k").err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("PostgreSQL at postgres://127.0.0.1:"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    proxy.set(Mode::Forward);
    assert_eq!(b.get("k").unwrap(), Some(1), "the store reconnects by itself");
    b.set("k", &2).unwrap();
}

#[test]
fn kv15_opening_a_store_on_a_port_where_nothing_listens_says_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Instant::now();
    let e = Store::open(format!("postgres://kv:s3cret@127.0.0.1:{port}/app"))
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(
        e.message()
            .contains(&format!("PostgreSQL at postgres://127.0.0.1:{port}/app")),
        "{e}"
    );
    assert!(e.message().contains("cannot be reached"), "{e}");
    assert!(!e.to_string().contains("s3cret"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
}
