//! Shared helpers of the benchmarks: rounds that alternate the contenders,
//! medians, and the table of ratios they print.
//!
//! Every benchmark runs each contender once per round, in turn, for several
//! rounds, so that a noisy neighbour slows all of them alike; it reports the
//! median rate of each and two ratios to ours: the ratio of the medians, and
//! the median of each round's ratio (the paired ratio). On these machines
//! the cost of an fsync drifts by a third within an hour; the contenders of
//! one round run seconds apart and see the same drift, so the paired ratio
//! cancels it where the ratio of medians, taken from different rounds, does
//! not. Both are printed; they differ by the noise of the run.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// With the `mimalloc` feature, every benchmark binary, ours and the peers
/// in one process alike, allocates with mimalloc: the allocator a Rust
/// program may pick for itself, where the system's (glibc's) serves a
/// write allocated on one thread and freed on the writer's through one
/// locked arena.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The allocator the binary was built with, for the header of its output.
pub const ALLOCATOR: &str = if cfg!(feature = "mimalloc") {
    "mimalloc"
} else {
    "the system's malloc"
};

/// One contender: a name and a function that runs for about `budget` and
/// returns how many operations it did.
pub struct Contender<'a> {
    /// Printed in the table.
    pub name: String,
    /// Runs one round; returns operations done and the time they took.
    pub run: Box<dyn FnMut(Duration) -> (u64, Duration) + 'a>,
}

impl<'a> Contender<'a> {
    /// A contender named `name`.
    pub fn new(name: impl Into<String>, run: impl FnMut(Duration) -> (u64, Duration) + 'a) -> Contender<'a> {
        Contender {
            name: name.into(),
            run: Box::new(run),
        }
    }
}

/// The median of `xs` (which it sorts).
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).expect("rates are numbers"));
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// The rates every contender reached in every round, in the order they ran.
pub struct Rounds {
    /// `rates[contender][round]`, in operations per second.
    pub rates: Vec<Vec<f64>>,
}

impl Rounds {
    /// The median rate of contender `i`.
    pub fn median(&self, i: usize) -> f64 {
        median(&mut self.rates[i].clone())
    }

    /// The median over the rounds of contender `a`'s rate over `b`'s in the
    /// same round.
    pub fn paired(&self, a: usize, b: usize) -> f64 {
        let mut ratios: Vec<f64> = self.rates[a].iter().zip(&self.rates[b]).map(|(x, y)| x / y).collect();
        median(&mut ratios)
    }

    /// `median(a) / median(b)`: the ratio of the medians.
    pub fn of_medians(&self, a: usize, b: usize) -> f64 {
        self.median(a) / self.median(b)
    }
}

/// Runs `contenders` in alternation for `rounds` rounds of `budget` each,
/// rotating which one goes first, and prints a table of median rates with both ratios of the first to each.
pub fn compare(title: &str, rounds: usize, budget: Duration, contenders: &mut [Contender<'_>]) -> Rounds {
    let n = contenders.len();
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); n];
    for round in 0..rounds {
        // Each round starts one contender later, so that no contender always
        // runs right after the same other one (whose WAL, checkpoint or
        // dirty pages it would inherit) or always first in the round.
        for i in (0..n).map(|k| (k + round) % n) {
            let (ops, took) = (contenders[i].run)(budget);
            rates[i].push(ops as f64 / took.as_secs_f64());
        }
    }
    let out = Rounds { rates };
    println!("\n{title}  ({rounds} rounds of {budget:?}, medians)");
    println!(
        "  {:<60} {:>12} {:>12} {:>9}",
        "contender", "ops/s", "ours / this", "paired"
    );
    for (i, c) in contenders.iter().enumerate() {
        println!(
            "  {:<60} {:>12} {:>11.2}x {:>8.2}x",
            c.name,
            format_rate(out.median(i)),
            out.of_medians(0, i),
            out.paired(0, i)
        );
    }
    // Each round's ratio, in the order the rounds ran: a median hides
    // whether a low reading is one slow round or a drift over the run.
    for (i, c) in contenders.iter().enumerate().skip(1) {
        let each: Vec<String> = (0..rounds)
            .map(|r| format!("{:.2}", out.rates[0][r] / out.rates[i][r]))
            .collect();
        println!("  rounds, ours / {}: {}", c.name, each.join(" "));
    }
    out
}

/// A rate with thousands separators.
pub fn format_rate(r: f64) -> String {
    let n = r.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Runs `op` in a loop until `budget` passes; returns (count, elapsed).
pub fn timed(budget: Duration, mut op: impl FnMut(u64)) -> (u64, Duration) {
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed() < budget {
        for _ in 0..16 {
            op(n);
            n += 1;
        }
    }
    (n, start.elapsed())
}

/// Describes the machine in one line, for the report.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores, SQLite {}, {ALLOCATOR}", rusqlite::version())
}

/// What a durable write waits on, measured on this machine before the
/// contenders run: the two costs that set the writer's ratios apart from
/// one VM to the next with the same code.
#[derive(Clone, Copy, Debug)]
pub struct Waits {
    /// Median time of an `fdatasync` after a 4 KiB write, in µs.
    pub fsync_us: f64,
    /// Median time for one thread to wake a parked thread and be woken back
    /// by it, in µs (the hand-off between an event loop and the writer).
    pub wake_round_trip_us: f64,
}

impl std::fmt::Display for Waits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fdatasync of a 4 KiB write {:.0} µs, a thread's wake-up and back {:.0} µs (medians)",
            self.fsync_us, self.wake_round_trip_us
        )
    }
}

/// Measures [`Waits`] in `dir`, on the file system the benchmark writes to.
pub fn probe_waits(dir: &std::path::Path) -> std::io::Result<Waits> {
    use std::io::{Seek, SeekFrom, Write};
    let path = dir.join("probe-fsync.tmp");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)?;
    file.write_all(&vec![0u8; 64 * 4096])?;
    file.sync_all()?;
    let page = [1u8; 4096];
    let mut syncs = Vec::with_capacity(200);
    for i in 0..200u64 {
        file.seek(SeekFrom::Start((i % 64) * 4096))?;
        file.write_all(&page)?;
        let t = Instant::now();
        file.sync_data()?;
        syncs.push(t.elapsed().as_secs_f64() * 1e6);
    }
    drop(file);
    std::fs::remove_file(&path)?;
    Ok(Waits {
        fsync_us: median(&mut syncs),
        wake_round_trip_us: wake_round_trip(2_000),
    })
}

/// The median of `n` round trips of a wake-up between two parked threads.
fn wake_round_trip(n: usize) -> f64 {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let turn = std::sync::Arc::new(AtomicUsize::new(0));
    let main = std::thread::current();
    let other_turn = turn.clone();
    // Each side parks until the counter reaches its next odd or even value,
    // so every step is one unpark and one wake from `park`.
    let other = std::thread::spawn(move || {
        for i in 0..n {
            while other_turn.load(Ordering::Acquire) != 2 * i + 1 {
                std::thread::park();
            }
            other_turn.store(2 * i + 2, Ordering::Release);
            main.unpark();
        }
    });
    let mut trips = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        turn.store(2 * i + 1, Ordering::Release);
        other.thread().unpark();
        while turn.load(Ordering::Acquire) != 2 * i + 2 {
            std::thread::park();
        }
        trips.push(t.elapsed().as_secs_f64() * 1e6);
    }
    other.join().expect("the probe's thread");
    median(&mut trips)
}

/// The number after `name` on the command line, or `default`.
pub fn arg(name: &str, default: u64) -> u64 {
    arg_value(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The word after `name` on the command line, if given.
pub fn arg_value(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

/// Where the completions of an [`event_loop`]'s writes answer: they queue
/// their answers and wake the loop once per group.
#[derive(Clone)]
pub struct Inbox(Arc<(Mutex<(u64, bool)>, Condvar)>);

impl Inbox {
    /// A write of the loop answered (call from its completion).
    pub fn answered(&self) {
        let mut q = self.0.0.lock().unwrap();
        q.0 += 1;
        let wake = !std::mem::replace(&mut q.1, true);
        drop(q);
        if wake {
            let me = self.clone();
            tinystore::after_answers(move || me.0.1.notify_one());
        }
    }
}

/// Keeps `depth` writes in flight from this one thread through the
/// completion form, the way the Python and Node bindings drive the writer:
/// completions queue their answers and wake the loop once per group
/// (`after_answers`), and the loop submits its next burst of writes
/// together (`submit_together`), so that a burst is one group. `submit(n,
/// inbox)` sends the loop's `n`th write, whose completion calls
/// `inbox.answered()`; `go_on(n)` says whether to send the `n`th. Returns
/// the writes answered and the time they took.
pub fn event_loop(depth: usize, mut go_on: impl FnMut(u64) -> bool, submit: impl Fn(u64, Inbox)) -> (u64, Duration) {
    let inbox = Inbox(Arc::new((Mutex::new((0, false)), Condvar::new())));
    let start = Instant::now();
    let (mut sent, mut done) = (0u64, 0u64);
    let mut burst = |n: u64, sent: &mut u64| {
        tinystore::submit_together(|| {
            for _ in 0..n {
                if !go_on(*sent) {
                    break;
                }
                submit(*sent, inbox.clone());
                *sent += 1;
            }
        })
    };
    burst(depth as u64, &mut sent);
    while done < sent {
        let answered = {
            let mut q = inbox.0.0.lock().unwrap();
            while q.0 == 0 {
                q = inbox.0.1.wait(q).unwrap();
            }
            q.1 = false;
            std::mem::take(&mut q.0)
        };
        done += answered;
        burst(answered, &mut sent);
    }
    (done, start.elapsed())
}
