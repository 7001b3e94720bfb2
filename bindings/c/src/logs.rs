//! The engine's log records for Go's `log/slog`: the package's goroutine
//! takes them here, one at a time, in a thread of its own.

use std::time::Duration;

use crate::give_bytes;

/// One record of the engine's log; its text belongs to the caller, who
/// frees each part with `ts_bytes_free`.
#[repr(C)]
pub struct TsLogRecord {
    /// 1 error, 2 warning, 3 information.
    pub level: i32,
    pub target: *mut u8,
    pub target_len: usize,
    pub message: *mut u8,
    pub message_len: usize,
    /// The store it is about (`ts_store_log_id`), or 0 when it is about none.
    pub store: u64,
}

/// Starts queueing the engine's records; false when another logger of the
/// process took them first.
#[unsafe(no_mangle)]
pub extern "C" fn ts_logs_forward() -> bool {
    tinystore::forward_logs()
}

/// Waits at most `timeout_ms` for a record: 1 with `out` filled, 0 when
/// none came.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_logs_next(timeout_ms: u32, out: *mut TsLogRecord) -> i32 {
    let Some(r) = tinystore::next_logs(1, Duration::from_millis(timeout_ms.into())).pop() else {
        return 0;
    };
    let (target, target_len) = give_bytes(r.target.into_bytes());
    let (message, message_len) = give_bytes(r.message.into_bytes());
    let level = match r.level {
        log::Level::Error => 1,
        log::Level::Warn => 2,
        _ => 3,
    };
    unsafe {
        *out = TsLogRecord {
            level,
            target,
            target_len,
            message,
            message_len,
            store: r.store.unwrap_or(0),
        }
    };
    1
}
