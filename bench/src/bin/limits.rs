//! Rate limit `allow` against a plain in-memory GCRA written here, on one
//! hot key and on 100,000 distinct keys, in alternating rounds, medians.
//!
//! Ours runs on an ordinary store: the background thread writes the limit's
//! memory to kv.db every second while the loop runs. The plain limiter keeps
//! the same one integer a key in a `HashMap` and writes nothing; it is shown
//! with and without the mutex any limiter shared by a server's threads needs.
//!
//! Then processes: four processes calling `allow` on one hot key of one
//! store, against one process alone, in alternating rounds: the limits
//! table every process maps must let them count together at least as fast
//! as one alone (no convoy on a lock or on SQLite's writer).
//!
//! `cargo run --release -p tinystore-bench --bin limits [-- --rounds 7 --ms 300]`
//!
//! Rounds are short (300 ms) on purpose: a key untouched for a whole second
//! leaves our memory after the next flush and is read from the file at its
//! next request, and long rounds of the other contenders would make every
//! round of ours start cold.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tinystore::Store;
use tinystore_bench::{Contender, arg, compare, format_rate, machine, median, timed};

const KEYS: usize = 100_000;
const RATE: u64 = 100;
const PER: Duration = Duration::from_secs(1);

/// A plain GCRA: one due time a key, as ours keeps.
struct Plain {
    interval: i64,
    tolerance: i64,
    due: HashMap<String, i64>,
}

impl Plain {
    fn new() -> Plain {
        let interval = (PER.as_nanos() / u128::from(RATE)) as i64;
        Plain {
            interval,
            tolerance: interval * RATE as i64,
            due: HashMap::new(),
        }
    }

    fn allow(&mut self, key: &str, now: i64) -> (bool, u64) {
        let due = match self.due.get_mut(key) {
            Some(d) => d,
            None => self.due.entry(key.to_owned()).or_insert(0),
        };
        let next = (*due).max(now) + self.interval;
        let limit = now + self.tolerance;
        if next <= limit {
            *due = next;
            (true, ((limit - next) / self.interval) as u64)
        } else {
            (false, 0)
        }
    }
}

fn now_nanos() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64
}

/// A child of the processes part: waits until `start_ms` (epoch), calls
/// `allow` on the hot key for `ms`, prints how many calls it made.
fn child(dir: &str, start_ms: u64, ms: u64) {
    let store = Store::open(dir).unwrap();
    let rl = store.rate_limit("shared").rate(RATE, PER).open().unwrap();
    rl.allow("hot").unwrap();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    std::thread::sleep(Duration::from_millis(start_ms.saturating_sub(now)));
    let (calls, took) = timed(Duration::from_millis(ms), |_| {
        black_box(rl.allow("hot").unwrap());
    });
    println!("{calls} {}", took.as_nanos());
    store.close().unwrap();
}

/// `n` processes on one hot key at once: their calls a second, together.
fn processes(dir: &std::path::Path, n: usize, ms: u64) -> f64 {
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 300;
    let children: Vec<_> = (0..n)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--child", dir.to_str().unwrap(), &start.to_string(), &ms.to_string()])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = String::from_utf8(c.wait_with_output().unwrap().stdout).unwrap();
            let mut w = out.split_whitespace().map(|x| x.parse::<f64>().unwrap());
            let (calls, nanos) = (w.next().unwrap(), w.next().unwrap());
            calls / (nanos / 1e9)
        })
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        return child(&args[2], args[3].parse().unwrap(), args[4].parse().unwrap());
    }
    let rounds = arg("--rounds", 7) as usize;
    let budget = Duration::from_millis(arg("--ms", 300));
    println!("rate limit benchmark: allow, GCRA {RATE}/s burst {RATE}, one thread");
    println!("machine: {}", machine());
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let rl = store.rate_limit("bench").rate(RATE, PER).open().unwrap();
    let keys: Vec<String> = (0..KEYS)
        .map(|i| format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255))
        .collect();

    let mut plain = Plain::new();
    let locked = Mutex::new(Plain::new());
    let mut hot = [
        Contender::new("tinystore RateLimit::allow", |b| {
            timed(b, |_| {
                black_box(rl.allow("hot").unwrap());
            })
        }),
        Contender::new("plain GCRA, HashMap", |b| {
            timed(b, |_| {
                black_box(plain.allow(black_box("hot"), now_nanos()));
            })
        }),
        Contender::new("plain GCRA, Mutex<HashMap>", |b| {
            timed(b, |_| {
                black_box(locked.lock().unwrap().allow(black_box("hot"), now_nanos()));
            })
        }),
    ];
    let hot = compare("one hot key", rounds, budget, &mut hot);

    // Every key once before timing, for all three, so no round starts from
    // an empty map (ours reads each key's row from the file at its first
    // request).
    for k in &keys {
        rl.allow(k).unwrap();
    }
    let mut plain = Plain::new();
    let locked = Mutex::new(Plain::new());
    for k in &keys {
        plain.allow(k, now_nanos());
        locked.lock().unwrap().allow(k, now_nanos());
    }
    let mut many = [
        Contender::new("tinystore RateLimit::allow", |b| {
            timed(b, |n| {
                black_box(rl.allow(&keys[n as usize % KEYS]).unwrap());
            })
        }),
        Contender::new("plain GCRA, HashMap", |b| {
            timed(b, |n| {
                black_box(plain.allow(&keys[n as usize % KEYS], now_nanos()));
            })
        }),
        Contender::new("plain GCRA, Mutex<HashMap>", |b| {
            timed(b, |n| {
                black_box(locked.lock().unwrap().allow(&keys[n as usize % KEYS], now_nanos()));
            })
        }),
    ];
    let many = compare(&format!("{KEYS} distinct keys"), rounds, budget, &mut many);
    store.close().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let (mut one, mut four, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    println!("\n== four processes on one hot key, against one process alone ({rounds} rounds, alternating)");
    for _ in 0..rounds {
        let a = processes(dir.path(), 1, budget.as_millis() as u64);
        let b = processes(dir.path(), 4, budget.as_millis() as u64);
        println!(
            "  one process {:>12}/s   four together {:>12}/s",
            format_rate(a),
            format_rate(b)
        );
        ratios.push(b / a);
        one.push(a);
        four.push(b);
    }
    let together = median(&mut ratios);

    println!("\nsummary (targets: ours within 3x of the plain loop; four processes at least one's rate)");
    for (what, m) in [("one hot key", &hot), ("100,000 keys", &many)] {
        println!(
            "  {what:<13} ours {:.2}x slower than a plain HashMap, {:.2}x slower than a Mutex<HashMap> \
             (paired; of the medians {:.2}x, {:.2}x)",
            m.paired(1, 0),
            m.paired(2, 0),
            m.of_medians(1, 0),
            m.of_medians(2, 0)
        );
    }
    println!(
        "  processes     four together {:.2}x the rate of one alone (paired; of the medians {:.2}x)",
        together,
        median(&mut four) / median(&mut one)
    );
}
