//! The writer that `reliability_io_faults.rs` runs under `strace`, whose
//! syncs and writes of kv.db or kv.db-wal fail as the parent chooses.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;

use tinystore::{Options, Store};
use tinystore_process_tests::{FAULT_MARK, start};
const ROUNDS: usize = 8;

/// Prints the answer of one write as a line the parent parses.
fn report(keys: &[String], r: &tinystore::Result<()>) {
    for k in keys {
        match r {
            Ok(()) => println!("ack {k}"),
            Err(e) => println!("err {k} {} {e}", e.kind().code()),
        }
    }
}

/// Per round one write alone, three through the completion form (so they
/// may share a group), a transaction of two keys and a large spilled value
/// of `big` bytes; after each round it reads back every acknowledged key.
pub fn writer(dir: &str, tag: &str, big: usize) {
    let opened = Store::open_with(dir, Options::new().test_clock(start()))
        .and_then(|s| s.bucket::<String>("acks").open().map(|b| (s, b)));
    let (store, b) = match opened {
        Ok(x) => x,
        Err(e) => {
            println!("open-err {} {e}", e.kind().code());
            return;
        }
    };
    let value = |k: &str| format!("{tag}:{k}");
    let mut acked: BTreeMap<String, String> = BTreeMap::new();
    let note = |acked: &mut BTreeMap<String, String>, keys: &[String], r: tinystore::Result<()>| {
        report(keys, &r);
        if r.is_ok() {
            for k in keys {
                acked.insert(k.clone(), value(k));
            }
        }
    };
    for round in 0..ROUNDS {
        let k = |n: usize| format!("{tag}-{round}-{n}");
        note(&mut acked, &[k(0)], b.set(k(0), &value(&k(0))).map(|_| ()));

        let (tx, rx) = mpsc::channel();
        for n in 1..=3 {
            let tx = tx.clone();
            let (key, v) = (k(n), value(&k(n)));
            b.set_then(k(n), &v, move |r| tx.send((key, r.map(|_| ()))).unwrap())
                .unwrap();
        }
        drop(tx);
        for (key, r) in rx {
            note(&mut acked, &[key], r);
        }

        let pair = [k(4), k(5)];
        let r = store.tx(|t| {
            for key in &pair {
                t.with(&b).set(key, &value(key))?;
            }
            Ok(())
        });
        note(&mut acked, &pair, r);

        let key = k(6);
        let v = format!("{}{}", value(&key), "x".repeat(big));
        match b.set(&key, &v) {
            Ok(_) => println!("ack-big {key}"),
            Err(e) => println!("err {key} {} {e}", e.kind().code()),
        }

        // Reads keep working after failed commits.
        for (key, v) in &acked {
            match b.get(key) {
                Ok(Some(got)) if &got == v => {}
                other => println!("read-bad {key} {other:?}"),
            }
        }
    }
    std::fs::File::create(Path::new(dir).join(FAULT_MARK)).unwrap();
    match store.close() {
        Ok(()) => println!("closed"),
        Err(e) => println!("close-err {} {e}", e.kind().code()),
    }
}
