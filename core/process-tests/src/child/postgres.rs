//! An app server on a PostgreSQL store (`postgres_processes.rs`): several
//! of these race for the same keys.

use std::io::{BufRead, Write};

use tinystore::Store;

/// Says `ready`, waits for a line, then takes `c0`..`c{n-1}` from four
/// threads, each key once per thread, and prints `won cI` for each it got.
pub fn take(location: &str, n: usize) {
    let store = Store::open(location).unwrap();
    let codes = store.bucket::<i64>("codes").open().unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let won = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (codes, won) = (&codes, &won);
            s.spawn(move || {
                for i in 0..n {
                    if codes.take(format!("c{i}")).unwrap().is_some() {
                        won.lock().unwrap().push(i);
                    }
                }
            });
        }
    });
    let mut out = std::io::stdout().lock();
    for i in won.into_inner().unwrap() {
        writeln!(out, "won c{i}").unwrap();
    }
    store.close().unwrap();
}

/// Starts the run of `k` in the once `jobs` and never ends it: the parent
/// kills this process.
pub fn once_hang(location: &str) {
    let store = Store::open(location).unwrap();
    let _ = store.once::<String>("jobs").open().unwrap().run("k", || {
        println!("started");
        std::io::stdout().flush().unwrap();
        loop {
            std::thread::park();
        }
    });
}

/// Runs `k` in `jobs`, which a live process holds until the parent kills
/// it: says `waiting` once the claim was found held twice, notes when fn
/// ran in `dir/b-ran`, and prints the answer.
pub fn once_take_over(location: &str, dir: &str) {
    let store = Store::open(location).unwrap();
    let jobs = store.once::<String>("jobs").open().unwrap();
    let watcher = store.clone();
    std::thread::spawn(move || {
        while watcher.once_busy_polls_for_tests() < 2 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        println!("waiting");
        std::io::stdout().flush().unwrap();
    });
    let got = jobs.run("k", || {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        std::fs::write(std::path::Path::new(dir).join("b-ran"), now.as_millis().to_string()).unwrap();
        Ok("from the second".to_owned())
    });
    println!("{}{}", tinystore_process_tests::ANSWER, got.unwrap());
    store.close().unwrap();
}
