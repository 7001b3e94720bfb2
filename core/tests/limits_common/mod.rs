//! Helpers of the limits tests: a store on a test clock, rows as the file
//! holds them, and a log capture.
#![allow(dead_code)] // each test file uses some of these

use std::path::Path;
use std::sync::{Mutex, Once};
use std::time::{Duration, SystemTime};

use tinystore::{Options, Store};

/// The test clock's start: 2023-11-14T22:13:20Z.
pub fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// A store on the test clock, starting at [`t0`].
pub fn open(dir: &Path) -> Store {
    Store::open_with(dir, Options::new().test_clock(t0())).unwrap()
}

/// Rows of the handle `name` in kv.db, live or not, read past the store.
pub fn rows(dir: &Path, name: &str) -> usize {
    let c = rusqlite::Connection::open(dir.join(tinystore::FILE_NAME)).unwrap();
    c.busy_timeout(Duration::from_secs(10)).unwrap();
    let n: i64 = c
        .query_row(
            "SELECT count(*) FROM cells c JOIN buckets b ON b.id = c.bucket WHERE b.name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap();
    n as usize
}

/// The integer values of the handle `name` in kv.db, summed, read past the
/// store: what a flush has written, whatever the table holds.
pub fn file_sum(dir: &Path, name: &str) -> i64 {
    let c = rusqlite::Connection::open(dir.join(tinystore::FILE_NAME)).unwrap();
    c.busy_timeout(Duration::from_secs(10)).unwrap();
    c.query_row(
        "SELECT coalesce(sum(c.value), 0) FROM cells c JOIN buckets b ON b.id = c.bucket WHERE b.name = ?1",
        [name],
        |r| r.get(0),
    )
    .unwrap()
}

static LOGS: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());
static INIT: Once = Once::new();

struct Capture;

static CAPTURE: Capture = Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        LOGS.lock().unwrap().push((r.level(), r.args().to_string()));
    }
    fn flush(&self) {}
}

/// Starts capturing this process's log.
pub fn capture_logs() {
    INIT.call_once(|| {
        log::set_logger(&CAPTURE).unwrap();
        log::set_max_level(log::LevelFilter::Info);
    });
}

/// The captured lines at `level` that contain `needle`.
pub fn logged(level: log::Level, needle: &str) -> Vec<String> {
    LOGS.lock()
        .unwrap()
        .iter()
        .filter(|(l, m)| *l == level && m.contains(needle))
        .map(|(_, m)| m.clone())
        .collect()
}
