//! The clock child of `clock_steps_back.rs`: a store on the system clock,
//! which libfaketime moves between the steps the parent sends.

use std::io::{BufRead, Write};
use std::time::Duration;

use tinystore::Store;

/// Runs the steps read from stdin, one a line, and prints `ok <step>` after
/// each; a broken promise panics, which the parent reports.
pub fn steps(dir: &str) {
    let store = Store::open(dir).unwrap();
    let b = store.bucket::<i64>("b").open().unwrap();
    let stdin = std::io::stdin();
    let mut seen_max = 0i64;
    let mut last_version = 0i64;
    // A restarted child finds the count the last one left.
    let mut kept = b.get("kept").unwrap().unwrap_or(2);
    for line in stdin.lock().lines() {
        let step = line.unwrap();
        let now = store.clock().now_millis();
        assert!(
            now >= seen_max,
            "{step}: the store's clock moved back: {seen_max} -> {now}"
        );
        seen_max = now;
        match step.as_str() {
            "write" => {
                let v = b.key("short").ttl(Duration::from_secs(60)).set(&1).unwrap();
                assert!(v.get() > last_version);
                last_version = v.get();
                b.set("kept", &2).unwrap();
            }
            "expired" | "still-expired" => {
                assert_eq!(b.get("short").unwrap(), None, "{step}: an expired key came back");
                assert!(!b.has("short").unwrap(), "{step}");
                assert_eq!(b.take("short").unwrap(), None, "{step}");
                assert!(!b.expire("short", Duration::from_secs(60)).unwrap(), "{step}");
                let keys: Vec<_> = b.all().map(|e| e.unwrap().key).collect();
                assert_eq!(keys.len(), 1, "{step}: only kept is listed");
                assert_eq!(b.get("kept").unwrap(), Some(kept));
                kept += 1;
                let v = b.set("kept", &kept).unwrap();
                assert!(v.get() > last_version, "{step}: a version repeated");
                last_version = v.get();
            }
            _ => panic!("unknown step {step}"),
        }
        println!("ok {step}");
        std::io::stdout().flush().unwrap();
    }
    store.close().unwrap();
}
