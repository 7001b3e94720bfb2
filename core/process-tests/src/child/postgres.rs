//! An app server on a PostgreSQL store (`postgres_processes.rs`): several
//! of these race for the same keys.

use std::io::{BufRead, Write};

use tinystore::Store;

/// Says `ready`, waits for a line, then takes `c0`..`c{n-1}` from four
/// threads, each key once per thread, and prints `won cI` for each it got.
pub fn take(location: &str, n: usize) {
    let store = Store::open(location).unwrap();
    let codes = store.bucket::<i64>("codes").open().unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let won = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (codes, won) = (&codes, &won);
            s.spawn(move || {
                for i in 0..n {
                    if codes.take(format!("c{i}")).unwrap().is_some() {
                        won.lock().unwrap().push(i);
                    }
                }
            });
        }
    });
    let mut out = std::io::stdout().lock();
    for i in won.into_inner().unwrap() {
        writeln!(out, "won c{i}").unwrap();
    }
    store.close().unwrap();
}
