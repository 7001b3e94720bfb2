//! KV-15 under crashes: a writer process with many writes in flight is
//! killed with SIGKILL at random moments; after each kill the file passes
//! `PRAGMA integrity_check` and every write that had been acknowledged is
//! there with its value.
//!
//! The writer is the helper's `crash-writer` role (`src/child/crash.rs`).
//! The short form (300 kills) runs in `cargo test`. The long form:
//! `TINYSTORE_CRASH_KILLS=3000 cargo test --release -p tinystore-process-tests --test crash_kill -- --nocapture`

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tinystore_process_tests::role;

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn kv15_sigkill_loses_no_acknowledged_write() {
    let kills: usize = std::env::var("TINYSTORE_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ std::process::id() as u64;
    let mut acked: std::collections::HashMap<String, i64> = Default::default();
    let started = Instant::now();
    for round in 0..kills {
        let mut child = common::child(
            role::CRASH_WRITER,
            &[dir.path().as_os_str(), round.to_string().as_ref()],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(k) = line.strip_prefix("ack ") {
                    let _ = tx.send(k.to_owned());
                }
            }
        });
        // Wait for the first acknowledgement, then kill at a random moment.
        let first = rx.recv_timeout(Duration::from_secs(30));
        assert!(first.is_ok(), "round {round}: the writer acknowledged nothing in 30 s");
        std::thread::sleep(Duration::from_micros(xorshift(&mut seed) % 80_000));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        for k in first.into_iter().chain(rx.try_iter()) {
            let n: i64 = k.rsplit('-').next().unwrap().parse().unwrap();
            acked.insert(k, n);
        }
        // Every acknowledged write is in the file, and the file is whole.
        let conn = rusqlite::Connection::open(dir.path().join("kv.db")).unwrap();
        let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(check, "ok", "round {round}");
        drop(conn);
        if round % 25 == 0 || round + 1 == kills {
            let store = tinystore::Store::open(dir.path()).unwrap();
            let b = store.bucket::<i64>("acks").open().unwrap();
            for (k, n) in &acked {
                assert_eq!(
                    b.get(k).unwrap(),
                    Some(*n),
                    "round {round}: acknowledged {k} is missing"
                );
            }
            store.close().unwrap();
        }
    }
    eprintln!(
        "crash test: {kills} kills, {} acknowledged writes checked, 0 lost, {:.1} s",
        acked.len(),
        started.elapsed().as_secs_f64()
    );
}
