//! The memory budget under load: 64 writers of 1 MiB values
//! and 64 readers at once, with `Options::memory(32 MiB)` and without, each
//! in a process of its own so that its peak resident memory (`VmHWM`) is
//! its own. Prints the peak above the process's resident memory just before
//! the load, beside the budget.
//!
//! `cargo run --release -p tinystore-bench --bin memory [-- --secs 5]`

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use tinystore::{MAX_VALUE, Options, Store};
use tinystore_bench::machine;

const WRITERS: usize = 64;
const READERS: usize = 64;
const BUDGET: usize = 32 << 20;
const KEYS: u64 = 256;

/// A line of /proc/self/status, in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux /proc");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"));
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("a number");
    kb * 1024
}

/// Resets the peak so that it measures from now (Linux 4.0+: "5" to clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// One run in this process: prints `rss_before peak writes reads`.
fn child(budget: Option<usize>, secs: u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::new();
    if let Some(b) = budget {
        opts = opts.memory(b);
    }
    let store = Store::open_with(dir.path(), opts).unwrap();
    let blobs = store.bucket::<String>("blobs").open().unwrap();
    // The callers' own value: one buffer they all write from. The store's
    // copies of it are what the budget bounds.
    let value = Arc::new("v".repeat(MAX_VALUE));
    for k in 0..KEYS {
        blobs.set(k, &value).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (writes, reads) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let start = Arc::new(Barrier::new(WRITERS + READERS + 1));
    let mut threads = Vec::new();
    for t in 0..WRITERS + READERS {
        let (blobs, value, stop, start) = (blobs.clone(), value.clone(), stop.clone(), start.clone());
        let count = if t < WRITERS { writes.clone() } else { reads.clone() };
        threads.push(std::thread::spawn(move || {
            start.wait();
            let mut k = t as u64;
            while !stop.load(Ordering::Relaxed) {
                k = (k * 31 + 7) % KEYS;
                if t < WRITERS {
                    blobs.set(k, &value).unwrap();
                } else {
                    assert_eq!(blobs.get(k).unwrap().map(|v| v.len()), Some(MAX_VALUE));
                }
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // Every thread is started and parked at the barrier: what is resident
    // now is the store, its connections and the threads, before any load.
    std::thread::sleep(Duration::from_millis(200));
    let before = status_bytes("VmRSS:");
    reset_peak();
    start.wait();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let peak = status_bytes("VmHWM:");
    println!(
        "{before} {peak} {} {}",
        writes.load(Ordering::Relaxed),
        reads.load(Ordering::Relaxed)
    );
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs = args
        .iter()
        .position(|a| a == "--secs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let budget = args[i + 1].parse().ok().filter(|&b: &usize| b > 0);
        child(budget, secs);
        return;
    }
    println!("memory benchmark: {WRITERS} writers of 1 MiB values and {READERS} readers at once, {secs} s a run");
    println!("machine: {}", machine());
    println!(
        "  {:<26} {:<30} {:>10} {:>9} {:>11} {:>7} {:>7}",
        "run", "malloc", "before MiB", "peak MiB", "peak-before", "writes", "reads"
    );
    // glibc raises its mmap threshold after a large buffer is freed, and
    // then keeps freed 1 MiB buffers in per-thread arenas: resident, though
    // free. A fixed threshold (MALLOC_MMAP_THRESHOLD_) gives them back, and
    // shows what the store itself holds.
    for malloc in ["glibc default", "MALLOC_MMAP_THRESHOLD_=65536"] {
        for (name, budget) in [("no budget", 0), ("Options::memory(32 MiB)", BUDGET)] {
            let mut cmd = Command::new(&args[0]);
            cmd.args(["--child", &budget.to_string(), "--secs", &secs.to_string()]);
            if malloc != "glibc default" {
                cmd.env("MALLOC_MMAP_THRESHOLD_", "65536");
            }
            let out = cmd.output().expect("run the child");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let line = String::from_utf8_lossy(&out.stdout);
            let v: Vec<u64> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
            println!(
                "  {:<26} {:<30} {:>10.1} {:>9.1} {:>11.1} {:>7} {:>7}",
                name,
                malloc,
                mib(v[0]),
                mib(v[1]),
                mib(v[1].saturating_sub(v[0])),
                v[2],
                v[3]
            );
        }
    }
    println!(
        "\nWith the budget, peak-before stays within 32 MiB plus a fixed overhead (page caches, SQLite's own copy\n\
         of the value it is writing or reading, values just handed to callers) once freed buffers go back to the system."
    );
}
