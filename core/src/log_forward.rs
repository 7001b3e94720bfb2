//! The engine's log records, queued for a language to hand to its own
//! logging (Python's `logging`, Go's `log/slog`, a Node hook).
//!
//! The engine logs through the `log` crate, from any of its threads: the
//! writer, maintenance, timers. A binding must not run its language's code
//! on those threads (a Python logger would take the GIL on the writer
//! thread, which a caller holding the GIL may be waiting for), so
//! [`forward_logs`] installs a logger that only queues a record, and the
//! binding takes them with [`next_logs`] on a thread of its own.
//!
//! Invariant: logging never blocks an engine thread: the queue is bounded,
//! and past its bound the oldest record goes and is counted, so that the
//! next record taken says how many were lost.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How many records wait for their language at most.
pub const LOG_QUEUE: usize = 1024;

/// The key of a record's store, as the engine's log calls write it:
/// `log::warn!(store = inner.log_id; "...")`.
pub(crate) const STORE_KEY: &str = "store";

/// One record of the engine's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// How grave it is.
    pub level: log::Level,
    /// What wrote it, as a path of the engine's modules (`tinystore`,
    /// `tinystore::limit_store`).
    pub target: String,
    /// What happened, for a person.
    pub message: String,
    /// The store it is about ([`crate::Store::log_id`]), when it is about one.
    pub store: Option<u64>,
}

struct Queue {
    records: Mutex<(VecDeque<LogRecord>, u64)>,
    ready: Condvar,
}

struct Forward;

static QUEUE: Queue = Queue {
    records: Mutex::new((VecDeque::new(), 0)),
    ready: Condvar::new(),
};
static FORWARD: Forward = Forward;
static INSTALLED: OnceLock<bool> = OnceLock::new();
static STOPPED: AtomicBool = AtomicBool::new(false);

impl log::Log for Forward {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Info && m.target().starts_with("tinystore")
    }

    fn log(&self, r: &log::Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        // "tinystore: " says who wrote it in a shared log; the language's
        // logger name says it here.
        let text = r.args().to_string();
        let message = text.strip_prefix("tinystore: ").unwrap_or(&text).to_owned();
        let store = r
            .key_values()
            .get(log::kv::Key::from_str(STORE_KEY))
            .and_then(|v| v.to_u64());
        let record = LogRecord {
            level: r.level(),
            target: r.target().to_owned(),
            message,
            store,
        };
        let mut q = QUEUE.records.lock().unwrap_or_else(|p| p.into_inner());
        if q.0.len() == LOG_QUEUE {
            q.0.pop_front();
            q.1 += 1;
        }
        q.0.push_back(record);
        drop(q);
        QUEUE.ready.notify_one();
    }

    fn flush(&self) {}
}

/// Queues the engine's records of level info and graver for [`next_logs`].
/// Returns whether it could: `false` when the program set a logger of its
/// own first (a Rust program's records then go to that logger).
pub fn forward_logs() -> bool {
    *INSTALLED.get_or_init(|| {
        let ok = log::set_logger(&FORWARD).is_ok();
        if ok {
            log::set_max_level(log::LevelFilter::Info);
        }
        ok
    })
}

/// Takes up to `max` queued records, waiting at most `timeout` for the
/// first. When records were lost to the bound, a warning saying how many
/// comes first.
pub fn next_logs(max: usize, timeout: Duration) -> Vec<LogRecord> {
    let deadline = Instant::now() + timeout;
    let mut q = QUEUE.records.lock().unwrap_or_else(|p| p.into_inner());
    while q.0.is_empty() && q.1 == 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || STOPPED.load(Ordering::Acquire) {
            return Vec::new();
        }
        q = QUEUE.ready.wait_timeout(q, left).unwrap_or_else(|p| p.into_inner()).0;
    }
    let mut out = Vec::with_capacity(max.min(q.0.len() + 1));
    if q.1 > 0 {
        out.push(LogRecord {
            level: log::Level::Warn,
            target: "tinystore".into(),
            message: format!("{} log records were lost: nothing took them in time", q.1),
            store: None,
        });
        q.1 = 0;
    }
    while out.len() < max.max(1) {
        match q.0.pop_front() {
            Some(r) => out.push(r),
            None => break,
        }
    }
    out
}

/// Answers every wait of [`next_logs`] at once, now and from now on: a
/// language's pump stops before its runtime shuts down (a Python thread
/// woken while the interpreter finalizes would be torn down mid-call).
pub fn stop_logs() {
    STOPPED.store(true, Ordering::Release);
    let _q = QUEUE.records.lock().unwrap_or_else(|p| p.into_inner());
    QUEUE.ready.notify_all();
}
