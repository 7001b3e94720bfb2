//! The limits' other processes: a quota's durable allow, `once` in two
//! processes, the limit store counting from two processes, and a config
//! updated from another process.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use tinystore::{LimitEntry, LimitStore, Options, Store};
use tinystore_process_tests::{ANSWER, Sent, guesses, messages, settings, start};

/// Allows 2 on the quota's key `k`, then exits as a crash would: no close.
pub fn quota_allow(dir: &str) {
    let store = Store::open_with(dir, Options::new().test_clock(start())).unwrap();
    messages(&store).allow_n("k", 2).unwrap();
    std::process::exit(0);
}

/// Spends the burst of `flushed` and writes it, then spends the burst of
/// `unflushed`, and exits as a crash would: no close.
pub fn rate_crash(dir: &str) {
    let store = Store::open_with(dir, Options::new().test_clock(start())).unwrap();
    let rl = guesses(&store);
    for _ in 0..5 {
        assert!(rl.allow("flushed").unwrap().ok);
    }
    store.maintain().unwrap();
    for _ in 0..5 {
        assert!(rl.allow("unflushed").unwrap().ok);
    }
    std::process::exit(0);
}

/// Adds 5 to a flush_every counter and writes it, adds 3 more, adds 8 to a
/// durable counter, and exits as a crash would: no close.
pub fn counters_crash(dir: &str) {
    let store = Store::open_with(dir, Options::new().test_clock(start())).unwrap();
    let memory = store
        .counters("memory")
        .flush_every(Duration::from_secs(1))
        .open()
        .unwrap();
    let durable = store.counters("durable").open().unwrap();
    memory.add("k", 5).unwrap();
    store.maintain().unwrap();
    memory.add("k", 3).unwrap();
    durable.add("k", 8).unwrap();
    std::process::exit(0);
}

fn answer(store: Store, answer: tinystore::Result<String>) {
    println!("{ANSWER}{}", answer.unwrap());
    store.close().unwrap();
}

/// Runs `once` on the key `k7q2`: fn appends this process's id to `ran`
/// and takes half a second, so that a second process comes while it runs.
pub fn once_run(dir: &str) {
    let store = Store::open(dir).unwrap();
    let pid = std::process::id();
    let sends = store
        .once::<Sent>("sends")
        .keep(Duration::from_secs(24 * 3600))
        .open()
        .unwrap();
    let got = sends.run("k7q2", || {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(Path::new(dir).join("ran"))
            .unwrap();
        writeln!(f, "{pid}").unwrap();
        std::thread::sleep(Duration::from_millis(500));
        Ok(Sent { id: pid as i64 })
    });
    answer(store, got.map(|s| s.id.to_string()));
}

/// Starts a run of `once` on `k` in `jobs`, says `started`, and never
/// ends it: the parent kills this process mid-run.
pub fn once_hang(dir: &str) {
    let store = Store::open(dir).unwrap();
    let got = store.once::<String>("jobs").open().unwrap().run("k", || {
        println!("started");
        std::io::stdout().flush().unwrap();
        loop {
            std::thread::park();
        }
    });
    answer(store, got);
}

/// Runs `k` in `jobs` once the killed process's claim lapses, and notes
/// when fn ran (ms since the epoch) in `b-ran`.
pub fn once_take_over(dir: &str) {
    let store = Store::open(dir).unwrap();
    let got = store.once::<String>("jobs").open().unwrap().run("k", || {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap();
        std::fs::write(Path::new(dir).join("b-ran"), now.as_millis().to_string()).unwrap();
        Ok("from the second".to_owned())
    });
    answer(store, got);
}

/// Adds one to the limit store's count of `one-key`, `n` times.
pub fn limit_store_count(dir: &str, n: usize) {
    let store = Store::open(dir).unwrap();
    let ls = LimitStore::open(&store).unwrap();
    for _ in 0..n {
        ls.update(&["one-key"], |entries, now| {
            let count = entries[0].as_ref().map_or(0, |e| e.value.parse::<i64>().unwrap());
            let expires_at = entries[0].as_ref().map_or(now + 60_000, |e| e.expires_at);
            vec![tinystore::Change::Put(LimitEntry {
                value: (count + 1).to_string(),
                expires_at,
            })]
        })
        .unwrap();
    }
    store.close().unwrap();
}

/// Sets the config `app`'s `rps` to 777.
pub fn config_update(dir: &str) {
    let store = Store::open(dir).unwrap();
    settings(&store).unwrap().update(|s| s.rps = 777).unwrap();
    store.close().unwrap();
}
