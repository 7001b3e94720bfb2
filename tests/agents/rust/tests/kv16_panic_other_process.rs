//! KV-16 across processes: after a panic inside `tx` is caught, the process
//! that panicked keeps its store open (as a web server does), and another
//! process can still write the file. A transaction left open by the panic
//! would hold SQLite's write lock for as long as the process lives, and the
//! other process would fail with `database is locked`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;

use tinystore::Store;

#[test]
fn kv16_after_a_panic_in_tx_another_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let b = store.bucket::<i64>("b").open().unwrap();
    let caught = catch_unwind(AssertUnwindSafe(|| {
        store.tx(|tx| -> tinystore::Result<()> {
            tx.with(&b).set("inside", &2)?;
            panic!("boom")
        })
    }));
    assert!(caught.is_err(), "the panic goes on");
    // The agent adds 1 to the counter `race-counter`/`k` five times, each a
    // durable write of its own, and exits non-zero if any fails.
    let out = Command::new(env!("CARGO_BIN_EXE_tinystore-agent"))
        .arg("counter-adds")
        .arg(dir.path())
        .arg("5")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the other process could not write: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counter = store.counters("race-counter").open().unwrap();
    assert_eq!(counter.get("k").unwrap(), 5);
    assert_eq!(b.get("inside").unwrap(), None, "rolled back");
    b.set("after", &3).unwrap();
    store.close().unwrap();
}
