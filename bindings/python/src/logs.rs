//! The engine's log records for Python's `logging`: the package's pump
//! thread takes them here, with the GIL let go while it waits, so that no
//! engine thread ever runs Python.

use std::time::Duration;

use pyo3::prelude::*;

/// Starts queueing the engine's records; false when another logger of the
/// process took them first.
#[pyfunction]
pub fn forward_logs() -> bool {
    tinystore::forward_logs()
}

/// Up to `max` records as `(levelno, logger name, message)`, waiting at
/// most `timeout` seconds for the first.
#[pyfunction]
pub fn next_logs(py: Python<'_>, max: usize, timeout: f64) -> Vec<(u8, String, String)> {
    let wait = Duration::from_secs_f64(timeout.clamp(0.0, 3600.0));
    py.detach(|| tinystore::next_logs(max, wait))
        .into_iter()
        .map(|r| {
            let level = match r.level {
                log::Level::Error => 40,
                log::Level::Warn => 30,
                log::Level::Info => 20,
                log::Level::Debug | log::Level::Trace => 10,
            };
            (level, r.target.replace("::", "."), r.message)
        })
        .collect()
}

/// Answers the pump's wait at once, for good: at the interpreter's exit.
#[pyfunction]
pub fn stop_logs() {
    tinystore::stop_logs()
}
