//! The clear race's commands of the Rust agent (tests/processes/README.md,
//! "A clear under writes"): the branch `b` of bucket `race-clear` filled
//! with old keys, cleared while every language writes new keys in it, and
//! probed on snapshots meanwhile.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tinystore::{Bucket, Store};

use super::{say, start_line};

fn epoch_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()
}

fn branch(store: &Store) -> tinystore::Result<Bucket<String>> {
    Ok(store.bucket::<String>("race-clear").open()?.under("b"))
}

/// Threads that write the old keys at once: one at a time, 20,000 round
/// trips to PostgreSQL would take most of the race's time.
const SETUP_THREADS: u64 = 16;

pub fn run(store: &Store, cmd: &str, arg: &dyn Fn(usize) -> String) -> Option<tinystore::Result<bool>> {
    let num = |i: usize| arg(i).parse::<u64>().unwrap_or(0);
    let out = || -> tinystore::Result<bool> {
        let b = branch(store)?;
        match cmd {
            "clear-setup" => {
                let n = num(2);
                std::thread::scope(|s| {
                    let writers: Vec<_> = (0..SETUP_THREADS)
                        .map(|t| {
                            let b = b.clone();
                            s.spawn(move || -> tinystore::Result<()> {
                                for i in (t..n).step_by(SETUP_THREADS as usize) {
                                    b.set(format!("old{i}").as_str(), &"old".to_owned())?;
                                }
                                Ok(())
                            })
                        })
                        .collect();
                    writers
                        .into_iter()
                        .try_for_each(|w| w.join().expect("a setup thread panicked"))
                })?;
                say("ready");
            }
            "clear-branch" => {
                start_line();
                say(&format!("start {}", epoch_ms()));
                b.clear()?;
                say(&format!("cleared {}", epoch_ms()));
            }
            "clear-writes" => {
                start_line();
                let (start, prefix) = (Instant::now(), arg(2));
                let mut i = 0;
                while start.elapsed() < Duration::from_millis(num(3)) {
                    let key = format!("{prefix}{i}");
                    let t0 = epoch_ms();
                    b.set(key.as_str(), &"new".to_owned())?;
                    say(&format!("wrote {key} {t0} {}", epoch_ms()));
                    i += 1;
                }
                say("done");
            }
            "clear-probe" => {
                start_line();
                let start = Instant::now();
                while start.elapsed() < Duration::from_millis(num(2)) {
                    let t0 = epoch_ms();
                    let old = store.view(|v| {
                        let mut old = 0;
                        for e in v.with(&b).all() {
                            old += usize::from(e?.key.as_bytes().starts_with(b"old"));
                        }
                        Ok(old)
                    })?;
                    say(&format!("saw {old} {t0} {}", epoch_ms()));
                }
            }
            "clear-list" => {
                for e in b.all() {
                    say(&format!("key {}", String::from_utf8_lossy(e?.key.as_bytes())));
                }
                say("listed");
            }
            other => {
                eprintln!("tinystore-agent: unknown command {other:?}");
                return Ok(false);
            }
        }
        Ok(true)
    };
    cmd.starts_with("clear-").then(out)
}
