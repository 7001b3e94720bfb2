//! Other processes on one kv.db: a reader driven line by line
//! (`read_locks_other_process.rs`) and a busy writer (`kv_processes.rs`).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tinystore::{Store, read_lock_counts};
use tinystore_process_tests::BUSY_WRITES as WRITES;

/// Answers each line on stdin with one line on stdout: `hello` is `ready`;
/// `set N` sets `k` to N; `read` reads `k` without pause, keeping its
/// locks, until `stop`, which answers how many reads found their lock
/// kept; `bye` ends.
pub fn reader(dir: &str) {
    let store = Store::open(PathBuf::from(dir)).unwrap();
    let b = store.bucket::<i64>("n").open().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut reading = None;
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let answer = match line.split_once(' ').unwrap_or((&line, "")) {
            ("hello", _) => "ready".to_string(),
            ("set", n) => {
                b.set("k", &n.parse::<i64>().unwrap()).unwrap();
                "set".to_string()
            }
            ("read", _) => {
                let (b, stop) = (b.clone(), stop.clone());
                reading = Some(std::thread::spawn(move || {
                    let before = read_lock_counts().reused;
                    while !stop.load(Ordering::Relaxed) {
                        b.get("k").unwrap();
                    }
                    read_lock_counts().reused - before
                }));
                "reading".to_string()
            }
            ("stop", _) => {
                stop.store(true, Ordering::Relaxed);
                format!("{}", reading.take().unwrap().join().unwrap())
            }
            ("bye", _) => "bye".to_string(),
            (other, _) => panic!("unknown line {other:?}"),
        };
        println!("{answer}");
        std::io::stdout().flush().unwrap();
        if line == "bye" {
            break;
        }
    }
    store.close().unwrap();
}

const IN_FLIGHT: usize = 64;

/// Opens the store in `DIR/store`, says it is ready, waits for the start
/// line on stdin, then writes its own keys as fast as its writer takes
/// them, 64 in flight as an event loop keeps them: the writer always has
/// its next group queued when it commits.
pub fn busy_writer(dir: &str) {
    let dir = PathBuf::from(dir);
    let me = std::process::id();
    let store = Store::open(dir.join("store")).unwrap();
    let writes = store.bucket::<i64>("writes").open().unwrap().under(me as i64);
    let writes = writes.raw();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    assert_eq!(go.trim(), "go", "the start line");
    let (tx, rx) = std::sync::mpsc::channel();
    let submit = |n: usize| {
        let tx = tx.clone();
        writes.set_then(
            &(n as i64).to_be_bytes(),
            tinystore::Raw::Int(n as i64),
            Default::default(),
            move |r| tx.send(r).unwrap(),
        )
    };
    let mut sent = 0;
    while sent < IN_FLIGHT {
        submit(sent).unwrap();
        sent += 1;
    }
    for _ in 0..WRITES {
        rx.recv().unwrap().unwrap();
        if sent < WRITES {
            submit(sent).unwrap();
            sent += 1;
        }
    }
    store.close().unwrap();
}
