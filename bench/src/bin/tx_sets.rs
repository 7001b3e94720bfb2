//! Sets inside one transaction: 6,400 sets of fresh keys (100-byte values)
//! in one `Store::tx`, in one binding transaction driven call by call (the
//! `BindingTx` every binding uses, through `Scope::Tx`), and in one rusqlite
//! transaction of single prepared inserts (WAL, synchronous=FULL). Each
//! round runs each contender once, the order rotating; the figures are the
//! median µs a set, the commit included, and TinyStore's time over the
//! peer's, paired (each round's ratio) and of the medians.
//!
//! `cargo run --release -p tinystore-bench --bin tx_sets [-- --rounds 9]`

use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use tinystore::{Raw, Scope, Store, WriteOptions};
use tinystore_bench::{Contender, arg, compare, machine};

const SETS: u64 = 6_400;

/// New keys for every round and contender, so each set inserts.
fn keys(run: u64) -> Vec<Vec<u8>> {
    (0..SETS).map(|i| format!("k:{run:04}:{i:05}").into_bytes()).collect()
}

fn peer_conn(path: &std::path::Path) -> Connection {
    let c = Connection::open(path).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.pragma_update(None, "synchronous", "FULL").unwrap();
    c.execute_batch("CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
        .unwrap();
    c
}

fn main() {
    let rounds = arg("--rounds", 9) as usize;
    println!("{SETS} sets of fresh keys in one transaction, durable");
    println!("machine: {}", machine());
    let value = vec![b'v'; 100];
    let (ours_dir, peer_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = Store::open(ours_dir.path()).unwrap();
    let bucket = store.raw_bucket("b").open().unwrap();
    let mut peer = peer_conn(&peer_dir.path().join("peer.db"));
    let run = std::cell::Cell::new(0u64);
    let next = || {
        run.set(run.get() + 1);
        keys(run.get())
    };
    let timed = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        (SETS, start.elapsed())
    };
    let mut contenders = [
        Contender::new("tinystore Store::tx (Rust)", |_: Duration| {
            let ks = next();
            timed(&mut || {
                store
                    .tx(|tx| {
                        let b = tx.with(&bucket);
                        for k in &ks {
                            b.set(&k[..], &Raw::Bytes(value.clone()))?;
                        }
                        Ok(())
                    })
                    .unwrap()
            })
        }),
        Contender::new("tinystore BindingTx (the bindings' transaction)", |_: Duration| {
            let ks = next();
            timed(&mut || {
                let (session, done) = store.transaction().unwrap();
                let scope = Scope::Tx(&session);
                for k in &ks {
                    scope
                        .set(bucket.raw(), k, Raw::Bytes(value.clone()), WriteOptions::default())
                        .unwrap();
                }
                session.commit().unwrap();
                done.recv().unwrap().unwrap();
            })
        }),
        Contender::new("rusqlite, one transaction", |_: Duration| {
            let ks = next();
            timed(&mut || {
                let tx = peer.transaction().unwrap();
                {
                    let mut st = tx.prepare_cached("INSERT INTO kv (k, v) VALUES (?1, ?2)").unwrap();
                    for k in &ks {
                        st.execute(params![k, value]).unwrap();
                    }
                }
                tx.commit().unwrap();
            })
        }),
    ];
    let out = compare("sets in one transaction", rounds, Duration::ZERO, &mut contenders);
    println!("\n  {:<60} {:>10}", "contender", "µs a set");
    for (i, c) in contenders.iter().enumerate() {
        println!("  {:<60} {:>10.2}", c.name, 1e6 / out.median(i));
    }
    // Times are the inverse of rates: our time over the peer's is the
    // peer's rate over ours.
    for (i, c) in contenders.iter().enumerate().take(2) {
        println!(
            "  {} / rusqlite (time): {:.2} ({:.2})",
            c.name,
            out.paired(2, i),
            out.of_medians(2, i)
        );
    }
    println!(
        "  BindingTx / Store::tx (time): {:.2} ({:.2})",
        out.paired(0, 1),
        out.of_medians(0, 1)
    );
    store.close().unwrap();
}
