//! An app server writing through a failover (`postgres_failover.rs`): it
//! writes new keys one after another and says how each write answered, so
//! the parent can check every acknowledged write on the promoted standby.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use tinystore::{ErrorKind, Store};

/// Writes `TAG-0`, `TAG-1`, ... to the bucket `orders` until the file
/// `stop` exists, printing `ok KEY VERSION` for each acknowledged write,
/// `unknown KEY` for each whose outcome is unknown and `failed KEY KIND`
/// for each that wrote nothing.
pub fn write_until_stopped(location: &str, tag: &str, stop: &str) {
    let store = Store::open(location).unwrap();
    let orders = store.bucket::<i64>("orders").open().unwrap();
    let mut out = std::io::stdout().lock();
    let mut i = 0i64;
    while !Path::new(stop).exists() {
        let key = format!("{tag}-{i}");
        match orders.set(&key, &i) {
            Ok(v) => writeln!(out, "ok {key} {v}").unwrap(),
            Err(e) => {
                match e.kind() {
                    ErrorKind::OutcomeUnknown => writeln!(out, "unknown {key}").unwrap(),
                    k => writeln!(out, "failed {key} {k:?}").unwrap(),
                }
                // An app backs off while its database is away.
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        out.flush().unwrap();
        i += 1;
    }
}
