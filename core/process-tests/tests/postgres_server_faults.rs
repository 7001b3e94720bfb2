//! Faults of the PostgreSQL server itself (KV-15): a server stopped with
//! `pg_ctl -m immediate`, or killed with SIGKILL, under the writes of three
//! app processes, and started again, has every write a store acknowledged,
//! at its version; the stores go on by themselves once it is back. A
//! server paused with SIGSTOP gets every call answered within the deadline
//! (2 s), and the store works again once it is continued.
//!
//! The servers are the test's own, in a temporary directory
//! (`pg_cluster`): the CI server, which every other test shares, cannot be
//! stopped or paused.

mod common;
mod pg_cluster;

use std::time::{Duration, Instant};

use pg_cluster::{Servers, Writers, check_acked, free_port};
use tinystore::{ErrorKind, Store};

/// One server of the test's own, started, and a location in it.
fn one_server(schema: &str) -> Option<(Servers, String)> {
    let servers = Servers::here()?;
    let port = free_port();
    servers.init("db", port, "");
    servers.start("db");
    let location = format!("postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable&schema={schema}");
    // Open once first, so that the writers find the tables made.
    Store::open(&location).unwrap().close().unwrap();
    Some((servers, location))
}

#[test]
fn kv15_a_server_stopped_at_once_or_killed_under_writes_loses_no_acknowledged_write() {
    let Some((servers, location)) = one_server("crash") else {
        return;
    };
    let writers = Writers::start(&location, servers.root().join("stop"), 3);
    let said = &writers.said;
    said.wait_for_more(30, Duration::from_secs(60), "before the stop");

    servers.stop_immediate("db");
    servers.start("db");
    said.wait_for_more(20, Duration::from_secs(60), "after a stop with -m immediate");

    servers.kill("db");
    servers.start("db");
    said.wait_for_more(20, Duration::from_secs(60), "after a SIGKILL");

    let said = writers.finish();
    check_acked(&location, &said.acked(), "after the server's crashes");
}

#[test]
fn kv15_a_server_paused_with_sigstop_gets_every_call_answered_within_the_deadline() {
    let Some((servers, location)) = one_server("paused") else {
        return;
    };
    let store = Store::open(&location).unwrap();
    let b = store.bucket::<i64>("b").open().unwrap();
    b.set("k", &1).unwrap();
    // Every shared connection opened, so the calls below wait on a server
    // that holds their sockets open and answers nothing.
    for _ in 0..32 {
        assert_eq!(b.get("k").unwrap(), Some(1));
    }

    servers.signal("db", "STOP");
    // The deadline, and what a loaded machine adds to a thread's wake-up.
    let bound = tinystore::POSTGRES_DEADLINE + Duration::from_secs(1);
    let timed = |what: &str, call: &dyn Fn() -> tinystore::Result<()>| {
        let t = Instant::now();
        let e = call()
            .err()
            .unwrap_or_else(|| panic!("{what} answered success from a paused server"));
        let took = t.elapsed();
        assert!(took <= bound, "{what} was answered after {took:?}, over {bound:?}");
        e
    };
    let e = timed("get", &|| b.get("k").map(drop));
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    let e = timed("set", &|| b.set("k", &2).map(drop));
    assert_eq!(
        e.kind(),
        ErrorKind::OutcomeUnknown,
        "a write sent may commit once it wakes: {e}"
    );
    let e = timed("take", &|| b.take("k").map(drop));
    assert!(matches!(e.kind(), ErrorKind::Io | ErrorKind::OutcomeUnknown), "{e}");
    let e = timed("a transaction", &|| store.tx(|tx| tx.with(&b).set("t", &3).map(drop)));
    assert!(matches!(e.kind(), ErrorKind::Io | ErrorKind::OutcomeUnknown), "{e}");

    servers.signal("db", "CONT");
    let value = b.get("k").unwrap();
    assert!(matches!(value, Some(1) | Some(2)), "{value:?}");
    b.set("after", &4).unwrap();
    assert_eq!(b.get("after").unwrap(), Some(4));
    store.close().unwrap();
}
