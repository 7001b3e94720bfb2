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
mod scope;
mod store;
mod tx;

/// The module's contents.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<store::Store>()?;
    m.add_class::<bucket::Bucket>()?;
    m.add_class::<completions::Ticket>()?;
    m.add_class::<completions::Completions>()?;
    m.add_class::<pending::Pending>()?;
    m.add_class::<limit_store::LimitStore>()?;
    m.add_class::<limit_store::LimitUpdate>()?;
    m.add_class::<limits::RateLimit>()?;
    m.add_class::<limits::Quota>()?;
    m.add_class::<limits::Counters>()?;
    m.add_class::<once::Once>()?;
    m.add_class::<once::Claim>()?;
    m.add_class::<tx::Tx>()?;
    m.add_class::<caller::CallerContext>()?;
    m.add_class::<tx::View>()?;
    m.add_class::<config::Config>()?;
    m.add("MAX_PAGE", tinystore::MAX_PAGE)?;
    m.add_function(wrap_pyfunction!(json_field_name, m)?)?;
    m.add_function(wrap_pyfunction!(logs::forward_logs, m)?)?;
    m.add_function(wrap_pyfunction!(logs::next_logs, m)?)?;
    m.add_function(wrap_pyfunction!(logs::stop_logs, m)?)?;
    Ok(())
}

/// The JSON name of a dataclass field, by the core's rule for struct fields
/// (`user_id` as `userId`), so that every language names it alike.
#[pyfunction]
fn json_field_name(name: &str) -> String {
    tinystore::json_field_name(name).into_owned()
}
