//! The limits commands of the Rust agent: rate limits and flush_every
//! counters shared by every process (tests/processes/README.md, "Limits").

use std::io::BufRead;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tinystore::{Counters, RateLimit, Store};

use super::{say, start_line};

fn epoch_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()
}

/// The hot limit every racer shares: 20 a second, 10 at once.
fn race_rate(store: &Store) -> tinystore::Result<RateLimit> {
    store
        .rate_limit("race-rate")
        .rate(20, Duration::from_secs(1))
        .burst(10)
        .open()
}

/// One request a key an hour: each key passes once, across every process.
fn once_per_key(store: &Store) -> tinystore::Result<RateLimit> {
    store
        .rate_limit("race-once-per-key")
        .rate(1, Duration::from_secs(3600))
        .open()
}

/// The shell's limit: 10 at once, one more an hour, so that a test's own
/// pace refills nothing.
fn shell_rate(store: &Store) -> tinystore::Result<RateLimit> {
    store
        .rate_limit("race-shell")
        .rate(1, Duration::from_secs(3600))
        .burst(10)
        .open()
}

fn race_fcounter(store: &Store) -> tinystore::Result<Counters> {
    store
        .counters("race-fcounter")
        .flush_every(Duration::from_secs(1))
        .open()
}

/// Runs a limits command; `None` when `cmd` is not one.
pub fn run(store: &Store, cmd: &str, arg: &dyn Fn(usize) -> String) -> Option<tinystore::Result<bool>> {
    let num = |i: usize| arg(i).parse::<u64>().unwrap_or(0);
    let out = || -> tinystore::Result<bool> {
        match cmd {
            "rate-race" => {
                let rl = race_rate(store)?;
                start_line();
                let (start, first) = (Instant::now(), epoch_ms());
                let mut passed = 0;
                while start.elapsed() < Duration::from_millis(num(2)) {
                    passed += u64::from(rl.allow("hot")?.ok);
                }
                say(&format!("passed {passed} from {first} to {}", epoch_ms()));
            }
            "rate-spread" => {
                let rl = once_per_key(store)?;
                start_line();
                let mut passed = 0;
                for i in 0..num(3) {
                    passed += u64::from(rl.allow(format!("{}{i}", arg(2)))?.ok);
                }
                say(&format!("passed {passed}"));
            }
            "fcounter-adds" => {
                let c = race_fcounter(store)?;
                start_line();
                for _ in 0..num(2) {
                    c.add("k", 1)?;
                }
                say("done");
            }
            "fcounter-get" => say(&format!("value {}", race_fcounter(store)?.get(arg(2))?)),
            "fcounter-forever" => {
                let c = race_fcounter(store)?;
                for n in 1.. {
                    c.add("k", 1)?;
                    say(&format!("added {n}"));
                }
            }
            "limits-shell" => shell(store)?,
            _ => return Ok(false),
        }
        Ok(true)
    };
    let known = [
        "rate-race",
        "rate-spread",
        "fcounter-adds",
        "fcounter-get",
        "fcounter-forever",
        "limits-shell",
    ];
    known.contains(&cmd).then(out)
}

/// Reads commands from standard input until it ends or says `quit`.
fn shell(store: &Store) -> tinystore::Result<()> {
    let (rl, c) = (shell_rate(store)?, race_fcounter(store)?);
    say("ready");
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap_or_default();
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["allow", key] => say(if rl.allow(*key)?.ok { "ok" } else { "refused" }),
            ["peek", key] => say(&format!("left {}", rl.peek(*key)?.left)),
            ["reset", key] => {
                rl.reset(*key)?;
                say("reset");
            }
            ["add", key, n] => say(&format!("value {}", c.add(*key, n.parse().unwrap_or(0))?)),
            ["get", key] => say(&format!("value {}", c.get(*key)?)),
            ["quit"] => break,
            _ => say(&format!("unknown {line:?}")),
        }
    }
    Ok(())
}
