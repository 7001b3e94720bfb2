//! A store on PostgreSQL against the same statements sent by hand through
//! the same driver (tokio-postgres), alternated in one run: durable sets and
//! point reads from 1, 8 and 64 threads at once, then the hot-key `allow`
//! of a shared rate limit. The server is the one `TINYSTORE_TEST_PG` names
//! (`make pg-start` starts one on 127.0.0.1:55432); each contender has a
//! schema of its own, and both use plain TCP (`sslmode=disable`).
//!
//! The peer is what an app would write by hand: a table of the same shape
//! (key, value, a version from a sequence, an expiry with its index), an
//! upsert that returns the version, a `SELECT` that judges expiry on the
//! server's clock, prepared once, over as many connections as threads, up
//! to the store's pool of sixteen.
//!
//! `cargo run --release -p tinystore-bench --bin postgres [-- --secs 1 --rounds 5]`

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tinystore::Store;
use tinystore_bench::{Contender, arg, compare, format_rate, machine};
use tokio_postgres::{Client, NoTls, Statement};

const KEYS: usize = 10_000;
/// The store's pool keeps this many connections; the peer uses as many.
const POOL: usize = 16;

const PEER_SCHEMA: &str = "
DROP SCHEMA IF EXISTS bench_peer CASCADE;
CREATE SCHEMA bench_peer;
CREATE SEQUENCE bench_peer.versions;
CREATE TABLE bench_peer.cells (
    bucket bigint NOT NULL,
    path bytea NOT NULL,
    version bigint NOT NULL,
    expires bigint,
    value bytea,
    PRIMARY KEY (bucket, path)) WITH (fillfactor = 80);
CREATE INDEX ON bench_peer.cells (expires) WHERE expires IS NOT NULL;
";
const PEER_SET: &str = "INSERT INTO bench_peer.cells AS c (bucket, path, version, value)
    VALUES (1, $1, nextval('bench_peer.versions'), $2)
    ON CONFLICT (bucket, path) DO UPDATE SET version = excluded.version, value = excluded.value
    RETURNING version";
const PEER_GET: &str = "SELECT version, expires, value FROM bench_peer.cells
    WHERE bucket = 1 AND path = $1
      AND (expires IS NULL OR expires > floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)";

fn main() {
    let server = std::env::var("TINYSTORE_TEST_PG").unwrap_or_else(|_| {
        eprintln!("set TINYSTORE_TEST_PG to a PostgreSQL location (make pg-start starts one)");
        std::process::exit(2)
    });
    let budget = Duration::from_millis(arg("--secs", 1) * 1000);
    let rounds = arg("--rounds", 5) as usize;
    let sep = if server.contains('?') { '&' } else { '?' };
    // Both sides talk plain TCP, so that the ratio is the store's and not TLS's.
    let store = Store::open(format!("{server}{sep}schema=bench_postgres&sslmode=disable")).unwrap();
    let b = store.bucket::<String>("sessions").open().unwrap();
    let value = "v".repeat(128);
    for i in 0..KEYS {
        b.set(format!("k{i}"), &value).unwrap();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let peer = Peer::connect(&rt, &server);
    for i in 0..KEYS {
        peer.set(0, &format!("k{i}"), &value);
    }
    println!("# {}", machine());
    println!("PostgreSQL: TinyStore against the same statements by hand, 128-byte values");
    for threads in [1, 8, 64] {
        let key = |t: usize, i: u64| format!("k{}", (t * 7919 + i as usize) % KEYS);
        compare(
            &format!("durable sets, {threads} threads at once"),
            rounds,
            budget,
            &mut [
                Contender::new("TinyStore set", |d| {
                    at_once(threads, d, |t, i| {
                        b.set(key(t, i), &value).unwrap();
                    })
                }),
                Contender::new(format!("upsert by hand, {} connections", threads.min(POOL)), |d| {
                    at_once(threads, d, |t, i| peer.set(t, &key(t, i), &value))
                }),
            ],
        );
        compare(
            &format!("gets, {threads} threads at once"),
            rounds,
            budget,
            &mut [
                Contender::new("TinyStore get", |d| {
                    at_once(threads, d, |t, i| {
                        black_box(b.get(key(t, i)).unwrap());
                    })
                }),
                Contender::new(format!("SELECT by hand, {} connections", threads.min(POOL)), |d| {
                    at_once(threads, d, |t, i| peer.get(t, &key(t, i)))
                }),
            ],
        );
    }
    let rl = store
        .rate_limit("hot")
        .rate(1_000_000_000, Duration::from_secs(1))
        .open()
        .unwrap();
    for threads in [1, 64] {
        let (n, took) = at_once(threads, budget, |_, _| {
            black_box(rl.allow("hot").unwrap());
        });
        println!(
            "\nhot-key allow of a shared rate limit, {threads} threads at once: {}/s",
            format_rate(n as f64 / took.as_secs_f64())
        );
    }
}

/// The hand-written peer: one client per connection, statements prepared
/// once on each.
struct Peer<'r> {
    rt: &'r tokio::runtime::Runtime,
    conns: Vec<(Client, Statement, Statement)>,
}

impl<'r> Peer<'r> {
    fn connect(rt: &'r tokio::runtime::Runtime, url: &str) -> Peer<'r> {
        let conns = (0..POOL)
            .map(|i| {
                rt.block_on(async {
                    let (client, conn) = tokio_postgres::connect(url, NoTls).await.unwrap();
                    tokio::spawn(conn);
                    if i == 0 {
                        client.batch_execute(PEER_SCHEMA).await.unwrap();
                    }
                    let set = client.prepare(PEER_SET).await.unwrap();
                    let get = client.prepare(PEER_GET).await.unwrap();
                    (client, set, get)
                })
            })
            .collect();
        Peer { rt, conns }
    }

    fn set(&self, thread: usize, key: &str, value: &str) {
        let (c, set, _) = &self.conns[thread % POOL];
        let row = self
            .rt
            .block_on(c.query_one(set, &[&key.as_bytes(), &value.as_bytes()]))
            .unwrap();
        black_box(row.get::<_, i64>(0));
    }

    fn get(&self, thread: usize, key: &str) {
        let (c, _, get) = &self.conns[thread % POOL];
        let row = self.rt.block_on(c.query_opt(get, &[&key.as_bytes()])).unwrap();
        black_box(row.map(|r| r.get::<_, Vec<u8>>(2)));
    }
}

/// Calls `op` from `threads` threads until `budget` passes; the calls made
/// and the time they took.
fn at_once(threads: usize, budget: Duration, op: impl Fn(usize, u64) + Sync) -> (u64, Duration) {
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
                }
                done.fetch_add(i, Ordering::Relaxed);
            });
        }
        std::thread::sleep(budget);
        stop.store(true, Ordering::Relaxed);
    });
    (done.load(Ordering::Relaxed), start.elapsed())
}
