//! A closed store on PostgreSQL keeps no connection open on the server,
//! though handles of it live on: the languages free their handles when
//! their garbage collector runs, and a process that opens and closes stores
//! would otherwise hold every pool's connections until then.

mod common;
mod pg;

use tinystore::{Options, Store};

/// A database of this test's own, so that its connections are told apart
/// from every other test's (the store names itself `tinystore` to the
/// server): dropped with whatever is connected to it, then made anew.
const DATABASE: &str = "tinystore_close_test";

/// Runs statements one at a time on the server's own database.
fn admin(statements: &[&str]) -> Vec<i64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(&pg::server(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let mut counts = Vec::new();
        for s in statements {
            for m in c.simple_query(s).await.unwrap() {
                if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                    counts.push(r.get(0).unwrap().parse().unwrap());
                }
            }
        }
        counts
    })
}

/// The server's connections to [`DATABASE`].
fn connections() -> i64 {
    admin(&[&format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{DATABASE}'"
    )])[0]
}

#[test]
fn kv19_a_closed_store_on_postgres_closes_its_connections_while_handles_live() {
    admin(&[
        &format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"),
        &format!("CREATE DATABASE {DATABASE}"),
    ]);
    let server = pg::server();
    let (base, query) = server.split_once('?').map_or((server.as_str(), ""), |(b, q)| (b, q));
    let base = &base[..base.rfind('/').unwrap()];
    let location = format!("{base}/{DATABASE}?{query}");
    let store = Store::open_with(&location, Options::new().test_clock(common::start())).unwrap();
    let b = store.bucket::<String>("sessions").open().unwrap();
    b.set("a", &"web".to_string()).unwrap();
    // A transaction's connection goes back to the pool's idle ones.
    store
        .tx(|tx| tx.with(&b).set("b", &"ios".to_string()).map(|_| ()))
        .unwrap();
    assert!(connections() >= 2, "the store had connections open");
    store.close().unwrap();
    let mut left = connections();
    // The server ends a backend a moment after its client hangs up: wait
    // for it through the server's own view, at most two seconds.
    for _ in 0..200 {
        if left == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        left = connections();
    }
    assert_eq!(left, 0, "connections still open after close");
    assert!(b.get("a").is_err(), "the handle answers closed");
    drop((b, store));
    admin(&[&format!("DROP DATABASE {DATABASE} WITH (FORCE)")]);
}
