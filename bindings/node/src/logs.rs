//! The engine's log records for the package's `onLog` hook: one thread
//! takes them from the engine's queue and calls the hook on the event
//! loop, so that no engine thread runs JavaScript.

use std::sync::Mutex;
use std::time::Duration;

use napi::Status;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

/// `[level, target, message]` in JS: level is `error`, `warn` or `info`.
type Record = (String, String, String);

/// Weak: a hook waiting for records keeps no process alive.
type Sink = ThreadsafeFunction<Record, (), Record, Status, false, true>;

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// Hands the engine's records to `sink` from now on (the last sink given
/// wins). Returns false when another logger of the process took them first.
#[napi(ts_args_type = "sink: (record: [level: string, target: string, message: string]) => void")]
pub fn forward_logs(sink: Sink) -> bool {
    if !tinystore::forward_logs() {
        return false;
    }
    let first = SINK.lock().unwrap_or_else(|p| p.into_inner()).replace(sink).is_none();
    if first {
        let spawned = std::thread::Builder::new().name("tinystore-logs".into()).spawn(pump);
        if spawned.is_err() {
            return false;
        }
    }
    true
}

fn pump() {
    loop {
        for r in tinystore::next_logs(256, Duration::from_secs(3600)) {
            let level = match r.level {
                log::Level::Error => "error",
                log::Level::Warn => "warn",
                _ => "info",
            };
            if let Some(sink) = SINK.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                sink.call(
                    (level.to_owned(), r.target, r.message),
                    ThreadsafeFunctionCallMode::NonBlocking,
                );
            }
        }
    }
}
