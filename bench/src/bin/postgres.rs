//! A store on PostgreSQL: durable sets and point reads from 1, 8 and 64
//! threads at once, against the server `TINYSTORE_TEST_PG` names (`make
//! pg-start` starts one on 127.0.0.1:55432). Each figure is one run of
//! `--secs` seconds, in a schema of its own.
//!
//! `cargo run --release -p tinystore-bench --bin postgres [-- --secs 2]`

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tinystore::Store;
use tinystore_bench::{arg, format_rate, machine};

fn main() {
    let server = std::env::var("TINYSTORE_TEST_PG").unwrap_or_else(|_| {
        eprintln!("set TINYSTORE_TEST_PG to a PostgreSQL location (make pg-start starts one)");
        std::process::exit(2)
    });
    let secs = Duration::from_secs(arg("--secs", 2));
    let sep = if server.contains('?') { '&' } else { '?' };
    let store = Store::open(format!("{server}{sep}schema=bench_postgres")).unwrap();
    let b = store.bucket::<String>("sessions").open().unwrap();
    let value = "v".repeat(128);
    for i in 0..10_000 {
        b.set(format!("k{i}"), &value).unwrap();
    }
    println!("# {}", machine());
    println!("PostgreSQL store, 128-byte values, {} s a figure", secs.as_secs());
    for threads in [1, 8, 64] {
        let sets = run(threads, secs, |t, i| {
            b.set(format!("k{}", (t * 7919 + i) % 10_000), &value).unwrap();
        });
        let gets = run(threads, secs, |t, i| {
            b.get(format!("k{}", (t * 7919 + i) % 10_000)).unwrap();
        });
        println!(
            "  {threads:>2} at once: durable sets {:>10}/s   gets {:>10}/s",
            format_rate(sets),
            format_rate(gets)
        );
    }
}

/// Calls `op` from `threads` threads for `secs`; calls per second.
fn run(threads: usize, secs: Duration, op: impl Fn(usize, usize) + Sync) -> f64 {
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (stop, done, op) = (&stop, &done, &op);
            s.spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    op(t, i);
                    i += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        std::thread::sleep(secs);
        stop.store(true, Ordering::Relaxed);
    });
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}
