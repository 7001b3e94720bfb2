//! Durable sets through the group-commit writer against raw rusqlite written
//! by hand two ways: one transaction per write, and 64 writes batched by hand
//! into one transaction (the best a hand-written program can do). Ours run
//! from threads, from one event loop of completions (as the Python and Node
//! bindings drive the writer), and from tokio tasks awaiting `aio().set`
//! (as a Rust service writes).
//!
//! `cargo run --release -p tinystore-bench --bin writer [-- --rounds 5 --secs 2 --depths 1,8,64]`

use std::cell::Cell;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use tinystore::Store;
use tinystore_bench::{Contender, arg, arg_value, compare, event_loop, machine};

const VALUE: usize = 128;

/// Counts every run of every contender, so that each run writes keys no
/// earlier run wrote. SQLite writes nothing, and syncs nothing, for a row
/// rewritten with the bytes it already holds; a peer rewriting the keys of
/// its previous round would be timed without its fsync.
static RUN: AtomicU64 = AtomicU64::new(0);

/// The `n`th key of a run, unique across runs. Every contender writes one
/// sequence of keys, its threads drawing the next number from one counter:
/// a group of writes then lands on the same few b-tree pages for each of
/// them. (Keys of 64 threads counting apart land on 64 pages per commit, so
/// a contender whose threads did so would write and sync four times the
/// bytes of the hand-batched peer.)
fn key(run: u64, n: u64) -> Vec<u8> {
    format!("r{run}-{n}").into_bytes()
}

fn raw_conn(path: &std::path::Path) -> Connection {
    let c = Connection::open(path).unwrap();
    c.busy_timeout(Duration::from_secs(30)).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.pragma_update(None, "synchronous", "FULL").unwrap();
    c.execute_batch("CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
        .unwrap();
    c
}

/// Runs `threads` loops of `op` at once for `budget`; returns total ops.
/// `op` gets its thread's index and the next number of the run's sequence.
fn in_flight(threads: usize, budget: Duration, op: impl Fn(usize, u64) + Sync) -> (u64, Duration) {
    let stop = AtomicBool::new(false);
    let total = AtomicU64::new(0);
    let next = AtomicU64::new(0);
    let barrier = Barrier::new(threads + 1);
    let start = std::thread::scope(|s| {
        for t in 0..threads {
            let (stop, total, barrier, op, next) = (&stop, &total, &barrier, &op, &next);
            s.spawn(move || {
                barrier.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    op(t, next.fetch_add(1, Ordering::Relaxed));
                    n += 1;
                }
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
        barrier.wait();
        let start = Instant::now();
        std::thread::sleep(budget);
        stop.store(true, Ordering::Relaxed);
        start
    });
    (total.load(Ordering::Relaxed), start.elapsed())
}

/// Keeps `depth` writes in flight from this one thread ([`event_loop`]).
fn completions(raw: &tinystore::RawBucket, v: &tinystore::Raw, depth: usize, budget: Duration) -> (u64, Duration) {
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let start = Instant::now();
    event_loop(
        depth,
        |_| start.elapsed() < budget,
        |n, inbox| {
            raw.set_then(&key(run, n), v.clone(), Default::default(), move |r| {
                r.unwrap();
                inbox.answered();
            })
            .unwrap();
        },
    )
}

/// Keeps `tasks` writes in flight as a Rust service on tokio writes them:
/// that many tasks on one runtime thread, each awaiting `aio().set` in a
/// loop. No completion callback or burst of the bench's own: the futures
/// and the writer's groups do the batching.
fn tokio_tasks(
    rt: &tokio::runtime::Runtime,
    bucket: &tinystore::Bucket<Vec<u8>>,
    tasks: usize,
    budget: Duration,
) -> (u64, Duration) {
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let next = std::sync::Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let value = vec![7u8; VALUE];
    let done = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..tasks {
            let (bucket, next, value) = (bucket.clone(), next.clone(), value.clone());
            set.spawn(async move {
                let mut n = 0u64;
                while start.elapsed() < budget {
                    let k = key(run, next.fetch_add(1, Ordering::Relaxed));
                    bucket.aio().set(k, &value).await.unwrap();
                    n += 1;
                }
                n
            });
        }
        let mut total = 0;
        while let Some(n) = set.join_next().await {
            total += n.unwrap();
        }
        total
    });
    (done, start.elapsed())
}

/// Runs a contender of ours, adding the groups it committed and the writes
/// in them to `total`.
fn grouped(store: &Store, total: &Cell<(u64, u64)>, run: impl FnOnce() -> (u64, Duration)) -> (u64, Duration) {
    let (g0, w0) = store.group_stats();
    let out = run();
    let (g1, w1) = store.group_stats();
    let (g, w) = total.get();
    total.set((g + g1 - g0, w + w1 - w0));
    out
}

/// A comma-separated list after `name`, if given.
fn arg_list(name: &str) -> Option<Vec<usize>> {
    let list = arg_value(name)?;
    Some(list.split(',').map(|n| n.parse().expect("--depths 1,8,64")).collect())
}

fn main() {
    let rounds = arg("--rounds", 5) as usize;
    let budget = Duration::from_millis(arg("--secs", 2) * 1000);
    println!("writer benchmark: durable sets of {VALUE}-byte values, WAL + synchronous=FULL");
    println!("machine: {}", machine());
    let dir = tempfile::tempdir().unwrap();
    // The fsync and a thread's wake-up bound every contender's rate, and
    // differ from VM to VM: the figures below are read beside them.
    match tinystore_bench::probe_waits(dir.path()) {
        Ok(w) => println!("waits: {w}"),
        Err(e) => println!("waits: not measured ({e})"),
    }
    let store = Store::open(dir.path().join("ours")).unwrap();
    let bucket = store.bucket::<Vec<u8>>("bench").open().unwrap();
    let value = tinystore::Raw::Bytes(vec![7u8; VALUE]);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let raw_path = dir.path().join("raw.db");
    drop(raw_conn(&raw_path));
    let mut summary = Vec::new();
    let depths: Vec<usize> = arg_list("--depths").unwrap_or_else(|| vec![1, 8, 64]);
    for threads in depths {
        let conns: Vec<std::sync::Mutex<Connection>> = (0..threads)
            .map(|_| std::sync::Mutex::new(raw_conn(&raw_path)))
            .collect();
        let batch_conn = raw_conn(&raw_path);
        let per_group = [Cell::new((0, 0)), Cell::new((0, 0)), Cell::new((0, 0))];
        let raw = bucket.raw().clone();
        let v = value.clone();
        let mut contenders = [
            Contender::new(format!("tinystore set, {threads} in flight"), |b| {
                let run = RUN.fetch_add(1, Ordering::Relaxed);
                grouped(&store, &per_group[0], || {
                    in_flight(threads, b, |_, n| {
                        raw.set(&key(run, n), v.clone(), Default::default()).unwrap();
                    })
                })
            }),
            Contender::new(
                format!("tinystore set_then, {threads} in flight from one event loop"),
                |b| grouped(&store, &per_group[1], || completions(&raw, &v, threads, b)),
            ),
            Contender::new(
                format!("tinystore aio().set, {threads} tokio tasks on one thread"),
                |b| grouped(&store, &per_group[2], || tokio_tasks(&rt, &bucket, threads, b)),
            ),
            Contender::new(format!("rusqlite, one transaction per write, {threads} threads"), |b| {
                let run = RUN.fetch_add(1, Ordering::Relaxed);
                in_flight(threads, b, |t, n| {
                    let c = conns[t].lock().unwrap();
                    c.prepare_cached(
                        "INSERT INTO kv (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
                    )
                    .unwrap()
                    .execute(params![key(run, n), vec![7u8; VALUE]])
                    .unwrap();
                })
            }),
            Contender::new("rusqlite, 64 writes batched by hand per transaction", |b| {
                let run = RUN.fetch_add(1, Ordering::Relaxed);
                let start = Instant::now();
                let mut n = 0u64;
                while start.elapsed() < b {
                    batch_conn.execute_batch("BEGIN IMMEDIATE").unwrap();
                    {
                        let mut st = batch_conn
                            .prepare_cached(
                                "INSERT INTO kv (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
                            )
                            .unwrap();
                        for _ in 0..64 {
                            st.execute(params![key(run, n), vec![7u8; VALUE]]).unwrap();
                            n += 1;
                        }
                    }
                    batch_conn.execute_batch("COMMIT").unwrap();
                }
                (n, start.elapsed())
            }),
        ];
        let m = compare(
            &format!("durable sets, {threads} in flight"),
            rounds,
            budget,
            &mut contenders,
        );
        let mean = |c: &Cell<(u64, u64)>| c.get().1 as f64 / c.get().0.max(1) as f64;
        println!(
            "  tinystore writes per group: {:.1} from threads, {:.1} from the event loop, {:.1} from tokio tasks",
            mean(&per_group[0]),
            mean(&per_group[1]),
            mean(&per_group[2])
        );
        summary.push((threads, m));
    }
    println!("\nsummary (targets at 64 in flight: >= 0.80 of hand-batched, >= 10x one-per-write)");
    println!("  each figure: the paired ratio (median of the rounds' ratios), then the ratio of the medians");
    for (t, m) in summary {
        let both = |a: usize, b: usize, digits: usize| {
            format!("{:.digits$} ({:.digits$})", m.paired(a, b), m.of_medians(a, b))
        };
        println!(
            "  {t:>2} in flight: threads {} of hand-batched, {}x one-per-write; \
             event loop {} of hand-batched, {}x one-per-write; \
             tokio tasks {} of hand-batched, {}x one-per-write",
            both(0, 4, 2),
            both(0, 3, 1),
            both(1, 4, 2),
            both(1, 3, 1),
            both(2, 4, 2),
            both(2, 3, 1)
        );
    }
}
