//! The node binding of TinyStore KV: the napi-rs addon that the npm package
//! `tinystore` loads, the same file in Node and in Bun.
//!
//! Thin glue over the core crate: it converts JS values to the engine's
//! types ([`convert`], [`napi_values`]), maps engine errors to the
//! package's error classes, and settles write Promises from the writer
//! thread ([`completions`]), handing a turn's writes over as one group
//! ([`write_handoff`]). Each operation is one function over its scope
//! ([`scope`]): the store, a transaction ([`tx`]) or a snapshot ([`view`]).
//! The hot calls also have bare napi callbacks that skip napi-rs'
//! bookkeeping ([`fast_reads`], [`fast_writes`], [`fast_allow`]). Every rule
//! (keys, expiry, limits, the file) stays in `tinystore`; the package's
//! TypeScript gives the API's names and types.

/// The allocator of the addon's Rust code (JS values keep V8's). A write
/// is allocated on the event loop's thread and freed on the writer's,
/// which glibc's malloc serves through one locked arena; mimalloc frees to
/// the owning thread's heap without a lock. The sets at 64 in flight of
/// `bench/node/bench.mjs` measure what this decides.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bucket;
mod caller;
mod cancel;
mod completions;
mod config;
mod convert;
mod fast_allow;
mod fast_reads;
mod fast_writes;
mod limit_store;
mod limits;
mod logs;
mod napi_values;
mod once;
mod scope;
mod store;
mod tx;
mod view;
mod write_handoff;

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi_derive::napi;

pub use bucket::NativeBucket;
pub use cancel::{NativeCancel, disarm_cancel};
pub use config::NativeConfig;
pub use fast_allow::rate_limit_allow;
pub use fast_reads::fast_reads;
pub use fast_writes::fast_writes;
pub use limits::{NativeCounters, NativeQuota, NativeRateLimit};
pub use logs::forward_logs;
pub use once::{NativeClaim, NativeOnce};
pub use scope::admit;
pub use store::NativeStore;
pub use tx::NativeTx;
pub use view::NativeSnapshot;

/// Sets up this JS environment (once per thread that loads the addon):
/// `makeError(code, message, bucket, key)` makes the package's error objects.
#[napi(ts_args_type = "makeError: (code: string, message: string, bucket?: string, key?: string) => Error")]
pub fn init(env: &Env, make_error: Unknown<'_>) -> napi::Result<()> {
    completions::init(env.raw(), napi_values::raw(&make_error)).map_err(convert::to_napi)
}

/// The stable codes of every error kind, in the engine's order, so the
/// package can check that it has a class for each.
#[napi]
pub fn error_codes() -> Vec<&'static str> {
    tinystore::ErrorKind::ALL.iter().map(|k| k.code()).collect()
}

/// The text of an error, as the engine renders every error's: the message,
/// then the bucket and key it is about. Every error class of the package
/// takes its message from here, so no binding builds that text again.
#[napi]
pub fn error_text(message: String, bucket: Option<String>, key: Option<String>) -> String {
    tinystore::Error::new(tinystore::ErrorKind::Invalid, message)
        .about(bucket.as_deref(), key.as_deref())
        .text()
}

/// The package's error for a fault of a bucket's own codec (`encode`,
/// `decode`, `not_bytes`) or of JSON (`json_encode`, `json_type`,
/// `json_decode`) about `bucket` and `key`: the engine's kind and text, so
/// that every language words and classes it alike.
#[napi(
    ts_args_type = "word: 'encode' | 'decode' | 'not_bytes' | 'json_encode' | 'json_type' | 'json_decode', detail: string, bucket: string, key: string",
    ts_return_type = "Error"
)]
pub fn codec_fault<'e>(
    env: &'e Env,
    word: String,
    detail: String,
    bucket: String,
    key: String,
) -> napi::Result<Unknown<'e>> {
    let e = tinystore::CodecFault::named(&word, &detail, "").map(|f| f.error().at(&bucket, key));
    error_object(
        env,
        e.ok_or_else(|| completions::invalid(format!("no codec fault {word:?}"))),
    )
}

/// The package's error for a refusal it finds before its call reaches the
/// engine (`tx_ended`, `view_ended`, ...: see `tinystore::Refusal::named`),
/// about `bucket` and `key` when given: the engine's kind and text, so that
/// every language words and classes it alike.
#[napi(ts_return_type = "Error")]
pub fn refusal<'e>(
    env: &'e Env,
    word: String,
    detail: Option<String>,
    bucket: Option<String>,
    key: Option<String>,
) -> napi::Result<Unknown<'e>> {
    let e = tinystore::Refusal::named(&word, detail.as_deref().unwrap_or(""))
        .map(|r| r.error().about(bucket.as_deref(), key.as_deref()));
    error_object(
        env,
        e.ok_or_else(|| completions::invalid(format!("no refusal {word:?}"))),
    )
}

/// The package's error object (see `makeError`) for `e`, to throw.
fn error_object<'e>(env: &'e Env, e: convert::Ts<tinystore::Error>) -> napi::Result<Unknown<'e>> {
    let made = e.and_then(|e| completions::shared()?.waker().error_value(env.raw(), &e));
    completions::value(env, made)
}

/// `owner/owner/key` as the engine shows a key in a message, for the
/// package's own messages about a key (a codec's failure).
#[napi(
    ts_args_type = "owners: ReadonlyArray<string | number | bigint | Uint8Array>, key: string | number | bigint | Uint8Array"
)]
pub fn show_path(env: &Env, owners: Vec<Unknown<'_>>, key: Unknown<'_>) -> napi::Result<String> {
    let key_of = |v: &Unknown<'_>| convert::key(env.raw(), napi_values::raw(v));
    let owners = owners.iter().map(key_of).collect::<convert::Ts<Vec<_>>>();
    let r = owners.and_then(|owners| Ok(tinystore::show_path(&owners, Some(&key_of(&key)?))));
    completions::sync(env, r)
}

/// A caller's context inside nothing, for the engine's guards against
/// deadlock: the package grows it as its code enters transactions and runs
/// of once (see `caller.rs`).
#[napi]
pub fn caller_context() -> caller::NativeContext {
    caller::NativeContext(tinystore::CallerContext::new())
}

/// Parses a duration with the engine's grammar, in ms (for the clock's
/// `advance` in TypeScript and for tests of the grammar).
#[napi]
pub fn parse_duration(env: Env, text: String) -> napi::Result<f64> {
    let d = completions::sync(&env, tinystore::parse_duration(&text))?;
    Ok(d.as_secs_f64() * 1000.0)
}
