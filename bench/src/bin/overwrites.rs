//! Durable overwrites of keys that exist, in a bucket with a ttl: what a
//! store of sessions writes. 100,000 keys are present; each run writes
//! 6,400 random ones of them with new 100-byte values (every row changes:
//! SQLite skips a page whose row is rewritten byte for byte), 64 in flight
//! from one event loop, against raw rusqlite upserting 64 a transaction by
//! hand into a table with the same expiry column and the index a sweep of
//! expired rows needs, keeping a live row's expiry as ours does. Both files
//! are opened again before each run.
//!
//! `cargo run --release -p tinystore-bench --bin overwrites [-- --rounds 7]`

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, params};
use tinystore::{Raw, RawBucket, Store};
use tinystore_bench::{Contender, arg, compare, event_loop, machine};

const KEYS: u64 = 100_000;
const WRITES: u64 = 6_400;
const DEPTH: usize = 64;
const TTL: Duration = Duration::from_secs(30 * 86_400);

fn key(n: u64) -> Vec<u8> {
    format!("session:{n:08}").into_bytes()
}

/// A 100-byte value of run `run` and write `n`: new bytes every write.
fn value(run: u64, n: u64) -> Vec<u8> {
    let mut v = format!("{run:016x}{n:016x}").into_bytes();
    v.resize(100, b'.');
    v
}

/// The random key of write `n` of run `run` (an xorshift of both).
fn pick(run: u64, n: u64) -> u64 {
    let mut x = (run << 32 | n).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x % KEYS
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn raw_conn(path: &std::path::Path) -> Connection {
    let c = Connection::open(path).unwrap();
    c.busy_timeout(Duration::from_secs(30)).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.pragma_update(None, "synchronous", "FULL").unwrap();
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL, expires INTEGER) WITHOUT ROWID;
         CREATE INDEX IF NOT EXISTS kv_expiry ON kv (expires) WHERE expires IS NOT NULL;",
    )
    .unwrap();
    c
}

/// Keeps 64 overwrites in flight from this thread ([`event_loop`]), as the
/// Python and Node bindings drive the writer.
fn ours(dir: &std::path::Path, run: u64) -> (u64, Duration) {
    let store = Store::open(dir).unwrap();
    let b = RawBucket::open(&store, "sessions", Some(TTL), None).unwrap();
    let out = event_loop(
        DEPTH,
        |n| n < WRITES,
        |n, inbox| {
            b.set_then(
                &key(pick(run, n)),
                Raw::Bytes(value(run, n)),
                Default::default(),
                move |r| {
                    r.unwrap();
                    inbox.answered();
                },
            )
            .unwrap();
        },
    );
    store.close().unwrap();
    out
}

/// The same overwrites by hand: 64 upserts a transaction.
fn peer(path: &std::path::Path, run: u64) -> (u64, Duration) {
    let mut c = raw_conn(path);
    let start = Instant::now();
    for chunk in 0..WRITES / DEPTH as u64 {
        let tx = c.transaction().unwrap();
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO kv (k, v, expires) VALUES (?1, ?2, ?3)
                     ON CONFLICT (k) DO UPDATE SET v = excluded.v",
                )
                .unwrap();
            for i in 0..DEPTH as u64 {
                let n = chunk * DEPTH as u64 + i;
                st.execute(params![
                    key(pick(run, n)),
                    value(run, n),
                    now_ms() + TTL.as_millis() as i64
                ])
                .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    (WRITES, start.elapsed())
}

fn main() {
    let rounds = arg("--rounds", 7) as usize;
    println!("overwrites of {KEYS} present keys with a ttl, {WRITES} a run, {DEPTH} in flight, durable");
    println!("machine: {}", machine());
    let (ours_dir, peer_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let peer_file = peer_dir.path().join("peer.db");
    {
        let store = Store::open(ours_dir.path()).unwrap();
        let b = RawBucket::open(&store, "sessions", Some(TTL), None).unwrap();
        let mut c = raw_conn(&peer_file);
        let tx = c.transaction().unwrap();
        for n in 0..KEYS {
            b.set(&key(n), Raw::Bytes(value(0, n)), Default::default()).ok();
            tx.execute(
                "INSERT INTO kv (k, v, expires) VALUES (?1, ?2, ?3)",
                params![key(n), value(0, n), now_ms() + TTL.as_millis() as i64],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        store.close().unwrap();
    }
    let mut run = 1u64;
    let mut next = || {
        run += 1;
        run
    };
    let runs = std::cell::RefCell::new(&mut next);
    let mut contenders = [
        Contender::new("tinystore set_then, 64 in flight, ttl bucket", |_| {
            ours(ours_dir.path(), (runs.borrow_mut())())
        }),
        Contender::new("rusqlite upsert, 64 a transaction by hand, expiry index", |_| {
            peer(&peer_file, (runs.borrow_mut())())
        }),
    ];
    let r = compare("overwrites", rounds, Duration::ZERO, &mut contenders);
    println!(
        "\nsummary (target: at least 0.8 of the hand-batched upsert): {:.2} (paired; of the medians {:.2})",
        1.0 / r.paired(1, 0),
        1.0 / r.of_medians(1, 0)
    );
}
