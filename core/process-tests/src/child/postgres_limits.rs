//! An app server on a PostgreSQL store (`postgres_limits_processes.rs`):
//! several of these spend one quota, one counter and one rate limit.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tinystore::Store;
use tinystore_process_tests::pg_limits::{self, ADDS, QUOTA_TRIES, RATE_FOR};

fn nanos(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

/// Says `ready`, waits for a line, then from two threads tries the quota's
/// key `u` [`QUOTA_TRIES`] times and adds [`ADDS`] to the counter `k`;
/// then sends requests to the rate limit's key `hot` for [`RATE_FOR`].
/// Prints `quota-passed N`, `rate-passed N`, and `rate-first NS` and
/// `rate-last NS`: the system time before its first request was sent and
/// after its last was answered.
pub fn run(location: &str) {
    let store = Store::open(location).unwrap();
    let (quota, counters, limit) = (
        pg_limits::quota(&store),
        pg_limits::counters(&store),
        pg_limits::rate_limit(&store),
    );
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let quota_passed: usize = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|i| {
                let (quota, counters) = (&quota, &counters);
                s.spawn(move || {
                    let tries = QUOTA_TRIES / 2 + i * (QUOTA_TRIES % 2);
                    let passed = (0..tries).filter(|_| quota.allow("u").unwrap().ok).count();
                    for _ in 0..ADDS / 2 + i as i64 * (ADDS % 2) {
                        counters.add("k", 1).unwrap();
                    }
                    passed
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    let first = SystemTime::now();
    let started = Instant::now();
    let mut rate_passed = 0;
    // Bounded by time and by count; paced so that four servers on two
    // cores leave the database room to answer.
    for _ in 0..100_000 {
        if started.elapsed() >= RATE_FOR {
            break;
        }
        if limit.allow("hot").unwrap().ok {
            rate_passed += 1;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let last = SystemTime::now();
    let mut out = std::io::stdout().lock();
    writeln!(out, "quota-passed {quota_passed}").unwrap();
    writeln!(out, "rate-passed {rate_passed}").unwrap();
    writeln!(out, "rate-first {}", nanos(first)).unwrap();
    writeln!(out, "rate-last {}", nanos(last)).unwrap();
    drop(out);
    store.close().unwrap();
}
