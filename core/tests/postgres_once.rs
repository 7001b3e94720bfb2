//! KV-11 on a PostgreSQL store: `once` runs a key once for every store on
//! the database, keeps its answer for `keep`, and lets go when a run fails.
//! A killed holder taken over by another process:
//! `core/process-tests/tests/postgres_processes.rs`.

mod common;
mod pg;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tinystore::{Error, ErrorKind, Options, Store};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Sent {
    id: i64,
}

const HOUR: Duration = Duration::from_secs(3600);

fn manual(location: &str) -> Store {
    Store::open_with(location, Options::new().test_clock(common::start())).unwrap()
}

/// Claims held in the database.
fn claims(schema: &str) -> String {
    pg::query(schema, "SELECT count(*) FROM tinystore_runs").unwrap()
}

#[test]
fn kv11_on_postgres_fn_runs_once_and_its_answer_is_kept_for_keep() {
    let store = manual(&pg::fresh("kv11_keep"));
    let once = store.once::<Sent>("sends").keep(HOUR).open().unwrap();
    let calls = AtomicU32::new(0);
    let run = || {
        once.run("k7q2", || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(Sent { id: 40 + n as i64 })
        })
    };
    assert_eq!(run().unwrap(), Sent { id: 41 });
    assert_eq!(run().unwrap(), Sent { id: 41 }, "the kept answer, fn not run again");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(claims("kv11_keep"), "0", "the claim went with the keep");
    store.clock().advance(HOUR - Duration::from_millis(1)).unwrap();
    assert_eq!(run().unwrap(), Sent { id: 41 }, "kept until keep has passed");
    store.clock().advance(Duration::from_millis(1)).unwrap();
    assert_eq!(run().unwrap(), Sent { id: 42 }, "after keep the key runs again");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn kv11_on_postgres_get_and_delete_read_and_forget_an_answer() {
    let store = manual(&pg::fresh("kv11_get_delete"));
    let once = store.once::<Sent>("sends").open().unwrap();
    assert_eq!(once.get("k").unwrap(), None);
    assert!(!once.delete("k").unwrap());
    once.run("k", || Ok(Sent { id: 1 })).unwrap();
    assert_eq!(once.get("k").unwrap(), Some(Sent { id: 1 }));
    assert_eq!(once.under("user-2").get("k").unwrap(), None);
    assert!(once.delete("k").unwrap());
    assert_eq!(once.run("k", || Ok(Sent { id: 3 })).unwrap(), Sent { id: 3 });
    assert_eq!(
        store.bucket::<i64>("sends").open().unwrap_err().kind(),
        ErrorKind::Invalid,
        "a once's name keeps its kind"
    );
    let e = once.run("", || Ok(Sent { id: 0 })).unwrap_err();
    assert_eq!((e.kind(), e.bucket()), (ErrorKind::Invalid, Some("sends")));
}

#[test]
fn kv11_on_postgres_an_error_or_a_panic_keeps_nothing_and_lets_go() {
    let store = manual(&pg::fresh("kv11_errors"));
    let once = store.once::<Sent>("sends").open().unwrap();
    let e = once
        .run("k", || Err(Error::new(ErrorKind::Io, "the mail server was down")))
        .unwrap_err();
    assert_eq!(e.message(), "the mail server was down");
    assert_eq!(once.get("k").unwrap(), None);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        once.run("k", || -> tinystore::Result<Sent> { panic!("boom") })
    }));
    assert!(panicked.is_err());
    assert_eq!(once.get("k").unwrap(), None);
    // Letting go is answered after the run returned: wait for the row to go.
    let deadline = Instant::now() + Duration::from_secs(10);
    while claims("kv11_errors") != "0" {
        assert!(Instant::now() < deadline, "a failed run kept its claim");
        std::thread::yield_now();
    }
    assert_eq!(once.run("k", || Ok(Sent { id: 5 })).unwrap(), Sent { id: 5 });
}

/// Two stores on one database stand for two app servers: the second waits
/// behind the first's claim and gets its answer; fn runs once.
#[test]
fn kv11_on_postgres_a_waiter_on_another_server_gets_the_first_answer() {
    let location = pg::fresh("kv11_two_servers");
    let (a, b) = (Store::open(&location).unwrap(), Store::open(&location).unwrap());
    let on_a = a.once::<Sent>("sends").open().unwrap();
    let on_b = b.once::<Sent>("sends").open().unwrap();
    let calls = AtomicU32::new(0);
    let (gate, hold) = common::held_run();
    let (on_a, on_b, calls) = (&on_a, &on_b, &calls);
    std::thread::scope(|s| {
        let first = s.spawn(move || {
            on_a.run("k", || {
                calls.fetch_add(1, Ordering::SeqCst);
                hold.hold();
                Ok(Sent { id: 1 })
            })
        });
        gate.wait_started();
        let second = s.spawn(|| {
            on_b.run("k", || {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(Sent { id: 2 })
            })
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while b.once_busy_polls_for_tests() < 2 {
            assert!(
                Instant::now() < deadline,
                "the second store never waited on the first's claim"
            );
            std::thread::yield_now();
        }
        gate.release();
        assert_eq!(first.join().unwrap().unwrap(), Sent { id: 1 });
        assert_eq!(second.join().unwrap().unwrap(), Sent { id: 1 });
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(claims("kv11_two_servers"), "0");
}

/// A store that closes mid-run ends its session: its claim is free for
/// the next server at once, not after a lease.
#[test]
fn kv11_on_postgres_a_closed_holder_lets_another_server_run() {
    let location = pg::fresh("kv11_closed_holder");
    let (a, b) = (Store::open(&location).unwrap(), Store::open(&location).unwrap());
    let on_a = a.once::<Sent>("sends").open().unwrap();
    let (tx, rx) = mpsc::channel();
    let ctx = tinystore::CallerContext::new();
    on_a.raw()
        .begin("k", &ctx, move |r| {
            let _ = tx.send(r);
        })
        .unwrap();
    let claim = match rx.recv().unwrap().unwrap() {
        tinystore::Begun::Run(c) => c,
        other => panic!("expected the run, got {other:?}"),
    };
    assert_eq!(claims("kv11_closed_holder"), "1");
    a.close().unwrap();
    let on_b = b.once::<Sent>("sends").open().unwrap();
    assert_eq!(on_b.run("k", || Ok(Sent { id: 2 })).unwrap(), Sent { id: 2 });
    drop(claim);
}

#[test]
fn kv19_a_database_of_schema_version_1_gains_the_runs_of_once() {
    let location = pg::fresh("kv19_from_v1");
    let store = Store::open(&location).unwrap();
    store.bucket::<i64>("b").open().unwrap().set("k", &1).unwrap();
    store.close().unwrap();
    pg::sql(
        "kv19_from_v1",
        "DROP TABLE tinystore_runs; UPDATE tinystore_schema SET version = 1",
    );
    let store = Store::open(&location).unwrap();
    assert_eq!(
        pg::query("kv19_from_v1", "SELECT version FROM tinystore_schema").as_deref(),
        Some("5")
    );
    assert_eq!(store.bucket::<i64>("b").open().unwrap().get("k").unwrap(), Some(1));
    let once = store.once::<i64>("jobs").open().unwrap();
    assert_eq!(once.run("k", || Ok(7)).unwrap(), 7);
}
