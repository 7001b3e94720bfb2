//! Point reads: `Bucket::get` of hits and misses against a raw
//! prepared rusqlite read of the same keys, over stores of 10,000, 100,000
//! and 1,000,000 keys (the stores of the get curve and the one between), all sizes in one alternation, medians and paired ratios.
//! Answers two targets: a get within 1.3 times the raw read, and a get over
//! 1,000,000 keys costing at most 1.5 times one over 10,000 (the keys are
//! read in a random order, so the large store does not sit in the CPU's
//! caches).
//!
//! `cargo run --release -p tinystore-bench --bin reads [-- --rounds 15 --ms 300 --sizes 10000,100000,1000000]`
//! (`make bench-reads`; `--short` for a quick check: 3 rounds, 10,000 and 100,000 keys).

use std::hint::black_box;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};
use tinystore::{Bucket, Store};
use tinystore_bench::{Contender, compare, machine, timed};

/// The key of index `i`: 24 hex digits, spread over the key space as token digests are.
fn key(i: u64) -> String {
    format!(
        "{:024x}",
        i.wrapping_mul(0x9E37_79B9_7F4A_7C15) as u128 * 0xFFFF_FFFF + i as u128
    )
}

/// A random walk over `n` indexes (a fixed sequence, the same for every contender).
fn walk(n: u64) -> impl FnMut(u64) -> u64 {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    }
}

/// A tinystore store and a plain SQLite file with the same `n` keys.
fn build(dir: &std::path::Path, n: u64, keep_locks: bool) -> (Store, Bucket<Vec<u8>>, Connection) {
    let options = tinystore::Options::new().keep_read_locks(keep_locks);
    let store = Store::open_with(dir.join("ts"), options).expect("open");
    let bucket = store.bucket::<Vec<u8>>("bench").open().expect("bucket");
    let value = vec![7u8; 100];
    let mut i = 0;
    while i < n {
        let end = (i + 20_000).min(n);
        store
            .tx(|tx| {
                let b = tx.with(&bucket);
                for j in i..end {
                    b.set(key(j), &value)?;
                }
                Ok(())
            })
            .expect("seed");
        i = end;
    }
    let plain = Connection::open(dir.join("plain.db")).expect("plain");
    plain
        .execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;
             CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;",
        )
        .expect("schema");
    let t = plain.unchecked_transaction().expect("tx");
    {
        let mut put = t.prepare("INSERT INTO kv (k, v) VALUES (?1, ?2)").expect("prepare");
        for j in 0..n {
            put.execute(rusqlite::params![key(j), value]).expect("insert");
        }
    }
    t.commit().expect("commit");
    (store, bucket, plain)
}

fn main() {
    let mut short = false;
    let mut rounds = 15;
    let mut ms = 300;
    let mut sizes = vec![10_000u64, 100_000, 1_000_000];
    let mut keep_locks = true;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => rounds = args.next().and_then(|v| v.parse().ok()).expect("--rounds N"),
            "--ms" => ms = args.next().and_then(|v| v.parse().ok()).expect("--ms N"),
            "--sizes" => {
                sizes = args
                    .next()
                    .expect("--sizes A,B")
                    .split(',')
                    .map(|s| s.parse().expect("a size"))
                    .collect()
            }
            // TinyStore's readers as plain SQLite's: every read takes its
            // read-mark lock from the kernel (Options::keep_read_locks).
            "--no-kept-locks" => keep_locks = false,
            "--short" => {
                short = true;
                rounds = 3;
                ms = 150;
                sizes = vec![10_000, 100_000];
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("== Rust point reads: tinystore Bucket::get against a prepared rusqlite read");
    println!("# machine: {}", machine());
    println!("# command: {}", std::env::args().collect::<Vec<_>>().join(" "));
    println!(
        "# load average at start: {}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let budget = Duration::from_millis(ms);
    // Every size is built first and all are timed in one alternation, so
    // that the cost of a get over the big store and over the small one is a
    // ratio within each round, as ours against rusqlite is.
    let dirs: Vec<tempfile::TempDir> = sizes
        .iter()
        .map(|_| tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).expect("tempdir"))
        .collect();
    let stores: Vec<(Store, Bucket<Vec<u8>>, Connection)> = dirs
        .iter()
        .zip(&sizes)
        .map(|(d, &n)| build(d.path(), n, keep_locks))
        .collect();
    let mut reads: Vec<_> = stores
        .iter()
        .map(|(_, _, plain)| {
            let hit = plain.prepare("SELECT v FROM kv WHERE k = ?1").expect("prepare");
            let miss = plain.prepare("SELECT v FROM kv WHERE k = ?1").expect("prepare");
            (hit, miss)
        })
        .collect();
    let mut contenders = Vec::new();
    for ((&n, (_, bucket, _)), (read, read_miss)) in sizes.iter().zip(&stores).zip(reads.iter_mut()) {
        let (mut w1, mut w2, mut w3, mut w4) = (walk(n), walk(n), walk(n), walk(n));
        contenders.push(Contender::new(format!("tinystore get, hit, {n} keys"), move |b| {
            timed(b, |i| {
                black_box(bucket.get(key(w1(i))).expect("get").expect("a hit"));
            })
        }));
        contenders.push(Contender::new(
            format!("rusqlite prepared read, hit, {n} keys"),
            move |b| {
                timed(b, |i| {
                    let v: Option<Vec<u8>> = read.query_row([key(w2(i))], |r| r.get(0)).optional().expect("read");
                    black_box(v.expect("a hit"));
                })
            },
        ));
        contenders.push(Contender::new(format!("tinystore get, miss, {n} keys"), move |b| {
            timed(b, |i| {
                black_box(bucket.get(key(w3(i) + n)).expect("get"));
            })
        }));
        contenders.push(Contender::new(
            format!("rusqlite prepared read, miss, {n} keys"),
            move |b| {
                timed(b, |i| {
                    let v: Option<Vec<u8>> = read_miss
                        .query_row([key(w4(i) + n)], |r| r.get(0))
                        .optional()
                        .expect("read");
                    black_box(v);
                })
            },
        ));
    }
    let locks = tinystore::read_lock_counts();
    let m = compare("point reads", rounds, budget, &mut contenders);
    drop(contenders);
    let locks_after = tinystore::read_lock_counts();
    println!(
        "# tinystore's read-mark locks: {} reads found theirs kept, {} took it from the kernel{}",
        locks_after.reused - locks.reused,
        locks_after.taken - locks.taken,
        if keep_locks {
            ""
        } else {
            " (--no-kept-locks: readers as plain SQLite's, uncounted)"
        }
    );
    let mut rows: Vec<(String, f64)> = Vec::new();
    let mut ratios: Vec<(String, f64, &str)> = Vec::new();
    // Each ratio goes to the results twice: paired, and of the medians.
    let both = |ratios: &mut Vec<(String, f64, &'static str)>, what: String, (a, b): (usize, usize), target| {
        ratios.push((format!("{what} (paired)"), m.paired(a, b), target));
        ratios.push((format!("{what} (of medians)"), m.of_medians(a, b), target));
    };
    let names = [
        "tinystore get, hit",
        "rusqlite read, hit",
        "tinystore get, miss",
        "rusqlite read, miss",
    ];
    println!(
        "\nsummary: each figure is the paired ratio (median of the rounds' ratios), then the ratio of the medians"
    );
    for (s, &n) in sizes.iter().enumerate() {
        let at = 4 * s;
        rows.extend(
            names
                .iter()
                .enumerate()
                .map(|(j, name)| (format!("{name}, {n} keys"), m.median(at + j))),
        );
        println!(
            "  {n} keys: get time / rusqlite read time: hits {:.2} ({:.2}), misses {:.2} ({:.2}) (target <= 1.3)",
            m.paired(at + 1, at),
            m.of_medians(at + 1, at),
            m.paired(at + 3, at + 2),
            m.of_medians(at + 3, at + 2)
        );
        for (what, a, b) in [("hits", at + 1, at), ("misses", at + 3, at + 2)] {
            both(
                &mut ratios,
                format!("get time / rusqlite read time, {what}, {n} keys"),
                (a, b),
                "<= 1.3",
            );
        }
    }
    if sizes.len() > 1 {
        let (first, last) = (0, 4 * (sizes.len() - 1));
        let (small, big) = (sizes[0], sizes[sizes.len() - 1]);
        println!(
            "  the cost of a get from {small} to {big} keys: tinystore {:.2}x ({:.2}), rusqlite {:.2}x ({:.2}) (target <= 1.5)",
            m.paired(first, last),
            m.of_medians(first, last),
            m.paired(first + 1, last + 1),
            m.of_medians(first + 1, last + 1)
        );
        both(
            &mut ratios,
            format!("get time, {big} / {small} keys"),
            (first, last),
            "<= 1.5",
        );
    }
    drop(reads);
    for (store, _, _) in stores {
        store.close().expect("close");
    }
    let end = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let three = |l: &str| l.split_whitespace().take(3).collect::<Vec<_>>().join(", ");
    println!("# load average at the end: {}", three(&end));
    // The results for bench/python/chart.py, as the other benches write them.
    let quote = |t: &str| format!("{t:?}");
    let json = format!(
        "{{\"meta\": {{\"cpu\": {}, \"cores\": {}, \"command\": {}, \"load\": [{}], \"load_end\": [{}]}},\n \
         \"curve\": {{\"title\": {}, \"rows\": {{{}}}, \"ratios\": [{}]}}}}\n",
        quote(&machine()),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        quote(&std::env::args().collect::<Vec<_>>().join(" ")),
        three(&load),
        three(&end),
        quote("Rust point reads against a prepared rusqlite read"),
        rows.iter()
            .map(|(k, v)| format!("{}: {v:.1}", quote(k)))
            .collect::<Vec<_>>()
            .join(", "),
        ratios
            .iter()
            .map(|(k, v, t)| format!("[{}, {v:.3}, {}]", quote(k), quote(t)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    std::fs::create_dir_all(&dir).expect("bench/results");
    let file = dir.join(if short {
        "rust-reads-short.json"
    } else {
        "rust-reads.json"
    });
    std::fs::write(&file, json).expect("write the results");
    println!("# results in {}", file.display());
}
