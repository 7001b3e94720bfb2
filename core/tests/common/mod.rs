//! Helpers shared by the core's tests: a manual store, a file hash.
#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tinystore::{Options, Store};

/// The start of every test clock: 2026-10-20T09:00:00Z.
pub fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_792_486_800)
}

/// A store with a test clock in a new temporary directory.
pub fn manual() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(dir.path(), Options::new().test_clock(start())).unwrap();
    (dir, store)
}

/// Opens another store on the same directory, with its own test clock.
pub fn reopen(dir: &Path) -> Store {
    Store::open_with(dir, Options::new().test_clock(start())).unwrap()
}

/// The bytes of every file of a store's directory, to prove nothing changed.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// A digest of a file, for before-and-after checks.
pub fn digest(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(std::fs::read(path).unwrap()))
}

pub fn mins(n: u64) -> Duration {
    Duration::from_secs(60 * n)
}

/// Holds the writer inside a transaction until told to let go (send on
/// the sender, then join the thread), so that writes queue up behind it.
pub fn hold_writer(store: &Store) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (held, is_held) = std::sync::mpsc::channel::<()>();
    let s = store.clone();
    let h = std::thread::spawn(move || {
        s.tx(|_| {
            held.send(()).unwrap();
            wait.recv().unwrap();
            Ok(())
        })
        .unwrap();
    });
    is_held.recv().unwrap();
    (go, h)
}

/// The test's side of a run of once held open: it waits for the run to
/// start, then lets it end. See [`held_run`].
pub struct RunGate {
    started: std::sync::mpsc::Receiver<()>,
    go: std::sync::mpsc::Sender<()>,
}

/// The run's side: [`Hold::hold`] inside the run's function says the run
/// started, then waits until the test lets it end.
pub struct Hold {
    started: std::sync::mpsc::Sender<()>,
    go: std::sync::mpsc::Receiver<()>,
}

/// A run of once that the test holds open, so that other calls of its key
/// meet a run in progress.
pub fn held_run() -> (RunGate, Hold) {
    let (started, is_started) = std::sync::mpsc::channel();
    let (go, wait_go) = std::sync::mpsc::channel();
    (
        RunGate {
            started: is_started,
            go,
        },
        Hold { started, go: wait_go },
    )
}

impl RunGate {
    /// Waits until the run is inside its function.
    pub fn wait_started(&self) {
        self.started.recv().unwrap();
    }

    /// Lets the run's function return.
    pub fn release(&self) {
        self.go.send(()).unwrap();
    }
}

impl Hold {
    /// Says the run started, and waits to be let go.
    pub fn hold(&self) {
        self.started.send(()).unwrap();
        self.go.recv().unwrap();
    }
}
