//! The native module `tinystore._native`: a thin PyO3 layer over the core.
//!
//! It converts types, maps errors and releases the GIL around every call
//! into the core; the Python package `tinystore` gives the idiom (asyncio,
//! typed values, dataclasses). Writes answer asyncio futures through
//! [`completions`], so no thread is parked per pending write.

use pyo3::prelude::*;

/// The allocator of the module's Rust code (Python's objects keep Python's).
/// A write is allocated on the event loop's thread and freed on the
/// writer's, which glibc's malloc serves through one locked arena; with
/// mimalloc, which frees to the owning thread's heap without a lock, no
/// arena is shared. `bench/python/sets64.py` measures the sets this
/// decides (64 in flight against `sqlite3` batched by hand).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bucket;
mod caller;
mod completions;
mod config;
mod convert;
mod errors;
mod limit_store;
mod limits;
mod logs;
mod once;
mod pending;
mod reply;
mod scope;
mod store;
mod tx;

// Declared inline so that PyO3's introspection (feature
// `experimental-inspect`) describes every item: `make generate` writes
// python/tinystore/_native.pyi from the module built, with this doc comment
// as the stubs' docstring.
/// The native module ``tinystore._native`` (PyO3 over the Rust core).
///
/// Private: the public API is the ``tinystore`` package. Times cross as
/// milliseconds since the epoch, versions as decimal text, durations as text
/// (``"15m"``) or ``timedelta``, keys as ``str``, ``bytes`` or ``int``.
#[pymodule]
mod _native {
    #[pymodule_export]
    use super::{
        bucket::Bucket,
        caller::CallerContext,
        codec_fault,
        completions::Completions,
        config::{Config, ConfigWatch},
        error_text, json_field_name,
        limit_store::{LimitStore, LimitUpdate},
        limits::{Counters, Quota, RateLimit},
        logs::{forward_logs, next_logs, stop_logs},
        once::{Claim, Once},
        pending::Pending,
        refusal,
        store::Store,
        tx::{Tx, View},
    };

    /// The most entries a page of `list` holds.
    #[pymodule_export]
    const MAX_PAGE: usize = tinystore::MAX_PAGE;
}

/// The core's message for a fault of a bucket's own codec (`encode`,
/// `decode`, `not_bytes`), of JSON (`json_encode`, `json_type`, `json_key`,
/// `json_decode`) or of a value or row not of the handle's type
/// `type_name` (`value_type`, `row_type`), so that every language words it
/// alike.
#[pyfunction]
#[pyo3(signature = (word, detail, type_name = ""))]
fn codec_fault(word: &str, detail: &str, type_name: &str) -> PyResult<String> {
    tinystore::CodecFault::named(word, detail, type_name)
        .map(|f| f.error().message().to_owned())
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("no codec fault {word:?}")))
}

/// The package's exception for a refusal it finds before its call reaches
/// the core (`tx_ended`, `view_ended`, ...: see `tinystore::Refusal::named`),
/// about `bucket` and `path` when given: the core's kind and text, so that
/// every language words and classes it alike.
#[pyfunction]
#[pyo3(signature = (word, detail = "", bucket = None, path = None) -> "_Error")]
fn refusal(py: Python<'_>, word: &str, detail: &str, bucket: Option<&str>, path: Option<&str>) -> PyResult<Py<PyAny>> {
    let e = tinystore::Refusal::named(word, detail)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("no refusal {word:?}")))?
        .error();
    Ok(errors::to_py(py, e.about(bucket, path)).into_value(py).into_any())
}

/// The text of an error the package finds itself, as the core renders
/// every error: its kind's word, the message, then the bucket and key it
/// is about. A code the core does not know gives the text without a word.
#[pyfunction]
#[pyo3(signature = (code, message, bucket=None, path=None))]
fn error_text(code: &str, message: &str, bucket: Option<&str>, path: Option<&str>) -> String {
    let kind = tinystore::ErrorKind::ALL.into_iter().find(|k| k.code() == code);
    let e = tinystore::Error::new(kind.unwrap_or(tinystore::ErrorKind::Invalid), message).about(bucket, path);
    if kind.is_some() { e.to_string() } else { e.text() }
}

/// The JSON name of a dataclass field, by the core's rule for struct fields
/// (`user_id` as `userId`), so that every language names it alike.
#[pyfunction]
fn json_field_name(name: &str) -> String {
    tinystore::json_field_name(name).into_owned()
}
