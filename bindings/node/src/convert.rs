//! JS values to the engine's types and back: keys, durations, times,
//! versions, and values of a bucket's declared type (KV-1, KV-3, KV-18).
//!
//! Values map through `tinystore::Raw`'s own helpers (`Raw::text`,
//! `Raw::int`, `as_float`, ...), never a mapping of our own, so that a row
//! reads the same here as in Python, Go and Rust. A bucket without a type
//! keeps each value by its JS kind and reads each row by its kind, by the
//! core's rule for values known only at run time (`Raw::number`,
//! `Raw::by_kind`).

use std::time::{Duration, SystemTime};

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::{napi_env, napi_value};
use tinystore::{Branches, ByKind, ErrorKind, Raw, Version};

use crate::completions::{invalid, sync};
use crate::napi_values as js;

/// The largest integer a JS number holds exactly.
pub(crate) const MAX_SAFE: i64 = tinystore::MAX_SAFE_INTEGER;

/// A result whose error is the engine's, so it maps to the package's classes.
pub(crate) type Ts<T> = std::result::Result<T, tinystore::Error>;

/// Turns a napi-rs failure (rare: a broken env) into an engine error.
pub(crate) fn napi_err(e: napi::Error) -> tinystore::Error {
    tinystore::Error::new(ErrorKind::Invalid, e.reason)
}

/// An engine error as napi-rs' error, for the setup calls that answer one.
pub(crate) fn to_napi(e: tinystore::Error) -> napi::Error {
    napi::Error::from_reason(e.to_string())
}

/// The type of values a bucket (or `once`) holds, as its `type` option says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueKind {
    /// The default: each value by its kind, each row by its kind. The
    /// package passes an object or array as its JSON text and parses the
    /// JSON text a row reads as; the addon maps the rest (`Raw::number`,
    /// `Raw::by_kind`).
    Auto,
    /// Any JSON value; the package stringifies and parses it, the addon
    /// passes the text.
    Json,
    /// Text, kept as its UTF-8 bytes.
    String,
    /// A `Uint8Array`.
    Bytes,
    /// A safe integer `number`, kept as an integer row.
    Int,
    /// A `bigint` of int64 or uint64 range.
    BigInt,
    /// A `number` kept as its float bits.
    Float,
    /// A `boolean`, kept as 1 or 0.
    Bool,
    /// A set member: `null`, kept as a row of nothing.
    Set,
    /// The row as it is: `null` (nothing), a `bigint` (an integer) or a
    /// `Uint8Array` (bytes), whatever type wrote it.
    Raw,
    /// The bytes of a bucket's own codec (the package's `codec` option),
    /// as a `Uint8Array`: a row of another kind reads as the core's
    /// codec fault.
    Codec,
}

impl ValueKind {
    /// Every kind with its option's name and what a value of it is, in the
    /// enum's order, so that the kind indexes it.
    #[rustfmt::skip]
    const NAMES: [(ValueKind, &'static str, &'static str); 11] = [
        (ValueKind::Auto, "auto", "null, a boolean, a number, a bigint, a string, a Uint8Array, an object or an array"),
        (ValueKind::Json, "json", "JSON text"),
        (ValueKind::String, "string", "a string"),
        (ValueKind::Bytes, "bytes", "a Uint8Array"),
        (ValueKind::Int, "int", "an integer number"),
        (ValueKind::BigInt, "bigint", "a bigint"),
        (ValueKind::Float, "float", "a number"),
        (ValueKind::Bool, "bool", "a boolean"),
        (ValueKind::Set, "set", "null (a member has no value)"),
        (ValueKind::Raw, "raw", "null, a bigint, an integer number, a string or a Uint8Array"),
        (ValueKind::Codec, "codec", "a Uint8Array"),
    ];

    /// The kind named by a bucket's `type` option.
    pub(crate) fn parse(name: &str) -> Ts<ValueKind> {
        let found = Self::NAMES.iter().find(|(_, n, _)| *n == name);
        found.map(|(k, _, _)| *k).ok_or_else(|| {
            invalid(format!(
                "type {name:?} is not a value type: use 'auto', 'json', 'string', 'bytes', 'int', 'bigint', 'float', 'bool', 'set' or 'raw'"
            ))
        })
    }

    /// Converts a JS value of this kind to its row. A value of another JS
    /// type, or an integer out of range, is `Invalid`.
    pub(crate) fn encode(self, env: napi_env, v: napi_value) -> Ts<Raw> {
        if matches!(self, ValueKind::String | ValueKind::Json | ValueKind::Auto) {
            // Most values of these types are short strings: read straight
            // into the stack, in one napi call (no type query first: a
            // value that is no string, or too long, takes the way below).
            let mut buf = [0u8; 1024];
            if let Some(bytes) = js::read_string_into(env, v, &mut buf) {
                match self {
                    // A string, or the JSON text of an object: bytes either way.
                    ValueKind::Json | ValueKind::Auto => return Ok(Raw::json(bytes.to_vec())),
                    // The bytes came from a JS string, so they are UTF-8.
                    _ => {
                        if let Ok(text) = std::str::from_utf8(bytes) {
                            return Ok(Raw::text(text));
                        }
                    }
                }
            }
        }
        let t = js::type_name(env, v);
        let wrong = || {
            invalid(format!(
                "a bucket of type '{}' holds {}, not a {t}",
                self.name(),
                Self::NAMES[self as usize].2
            ))
        };
        match (self, t) {
            (ValueKind::Json | ValueKind::Auto, "string") => Ok(Raw::json(js::read_string(env, v)?)),
            (ValueKind::Auto, "number") => Ok(Raw::number(js::read_f64(env, v)?)),
            (ValueKind::Auto, "boolean") => Ok(Raw::bool(js::read_bool(env, v)?)),
            (ValueKind::Auto | ValueKind::BigInt, "bigint") => Raw::integer(js::signed_bigint(env, v)?),
            (ValueKind::String, "string") => {
                let bytes = js::read_string(env, v)?;
                // The bytes came from a JS string, so they are UTF-8.
                Ok(Raw::text(std::str::from_utf8(&bytes).map_err(|_| wrong())?))
            }
            (ValueKind::Bytes | ValueKind::Codec | ValueKind::Auto | ValueKind::Raw, "object") => {
                match js::read_bytes(env, v)? {
                    Some(b) => Ok(Raw::Bytes(b)),
                    None => Err(wrong()),
                }
            }
            (ValueKind::Int, "number") => {
                let n = js::read_f64(env, v)?;
                let what = "a value of type 'int' (type 'bigint' holds int64)";
                Ok(Raw::int(tinystore::whole_number(n, what, -MAX_SAFE..=MAX_SAFE)?))
            }
            (ValueKind::Float, "number") => Ok(Raw::float(js::read_f64(env, v)?)),
            (ValueKind::Bool, "boolean") => Ok(Raw::bool(js::read_bool(env, v)?)),
            (ValueKind::Auto | ValueKind::Set | ValueKind::Raw, "null") => Ok(Raw::Null),
            (ValueKind::Raw, "bigint") => Raw::int64_of(js::signed_bigint(env, v)?),
            (ValueKind::Raw, "number") => {
                let n = js::read_f64(env, v)?;
                let what = "a number in a raw bucket (a bigint holds int64)";
                Ok(Raw::int(tinystore::whole_number(n, what, -MAX_SAFE..=MAX_SAFE)?))
            }
            (ValueKind::Raw, "string") => Ok(Raw::Bytes(js::read_string(env, v)?)),
            _ => Err(wrong()),
        }
    }

    /// Checks that a row reads as this kind, without JS: what `take` runs
    /// inside its write, so that a row that does not read stays (KV-5).
    pub(crate) fn check(self, raw: &Raw) -> Ts<()> {
        match self {
            ValueKind::Auto => by_kind(raw).map(|_| ()),
            ValueKind::Json => {
                let text = raw.as_json()?;
                serde_json::from_slice::<serde::de::IgnoredAny>(text)
                    .map(|_| ())
                    .map_err(|e| tinystore::CodecFault::JsonDecode(&e.to_string()).error())
            }
            ValueKind::String => raw.as_text().map(|_| ()),
            ValueKind::Bytes => raw.as_bytes().map(|_| ()),
            ValueKind::Codec => raw.as_codec_bytes().map(|_| ()),
            ValueKind::Int => {
                let i = raw.as_int()?;
                if !(-MAX_SAFE..=MAX_SAFE).contains(&i) {
                    return Err(tinystore::Error::new(
                        ErrorKind::Corrupt,
                        format!(
                            "the integer {i} is outside the safe integers of a number: open the bucket with type 'bigint'"
                        ),
                    ));
                }
                Ok(())
            }
            ValueKind::BigInt => match raw {
                Raw::Int(_) => Ok(()),
                _ => raw.as_uint64().map(|_| ()),
            },
            ValueKind::Float => raw.as_float().map(|_| ()),
            ValueKind::Bool => raw.as_bool().map(|_| ()),
            ValueKind::Set => raw.as_set_member(),
            ValueKind::Raw => Ok(()),
        }
    }

    /// The JS value of a row of this kind (JSON as its text, which the
    /// package parses). A row of another kind is `Corrupt`.
    pub(crate) fn decode(self, env: napi_env, raw: &Raw) -> Ts<napi_value> {
        self.check(raw)?;
        match self {
            ValueKind::Auto => match by_kind(raw)? {
                ByKind::Nothing => js::null(env),
                ByKind::Integer(i) => js::number(env, i as f64),
                // JSON is UTF-8 text (serde_json checked it): the package parses it.
                ByKind::Json(_) => js::string(env, raw.as_text()?),
            },
            ValueKind::Json | ValueKind::String => js::string(env, raw.as_text()?),
            ValueKind::Bytes => js::uint8array(env, raw.as_bytes()?),
            ValueKind::Codec => js::uint8array(env, raw.as_codec_bytes()?),
            ValueKind::Int => js::number(env, raw.as_int()? as f64),
            ValueKind::BigInt => match raw {
                Raw::Int(i) => js::bigint_i64(env, *i),
                _ => js::bigint_u64(env, raw.as_uint64()?),
            },
            ValueKind::Float => js::number(env, raw.as_float()?),
            ValueKind::Bool => js::boolean(env, raw.as_bool()?),
            ValueKind::Set => js::null(env),
            ValueKind::Raw => match raw {
                Raw::Null => js::null(env),
                Raw::Int(i) => js::bigint_i64(env, *i),
                Raw::Bytes(b) => js::uint8array(env, b),
            },
        }
    }

    /// The option's name of this kind.
    pub(crate) fn name(self) -> &'static str {
        Self::NAMES[self as usize].1
    }

    /// The type a bucket of this kind reports: a codec's rows are bytes.
    pub(crate) fn value_type(self) -> &'static str {
        match self {
            ValueKind::Codec => ValueKind::Bytes.name(),
            other => other.name(),
        }
    }
}

/// A row read by its kind (`Raw::by_kind`), as a number when it is an
/// integer; a row that does not read so is `Corrupt`, naming the type that
/// reads it.
fn by_kind(raw: &Raw) -> Ts<ByKind<'_>> {
    let hint = |e: tinystore::Error, types: &str| {
        tinystore::Error::new(
            ErrorKind::Corrupt,
            format!("{}: open the bucket with {types}", e.message()),
        )
    };
    match raw
        .by_kind()
        .map_err(|e| hint(e, "type 'string', 'bytes' or 'float'"))?
    {
        ByKind::Integer(_) => raw
            .as_safe_integer()
            .map(ByKind::Integer)
            .map_err(|e| hint(e, "type 'bigint'")),
        other => Ok(other),
    }
}

/// Runs `f` with the bytes of a key of `bucket`. A key is most often a
/// short string: it is read straight into a buffer on the stack, with no
/// type check, length query or allocation (a third of the binding's own
/// time in a `get`); any other key goes through [`key`], its error naming
/// the bucket.
pub(crate) fn with_key<R>(env: napi_env, v: napi_value, bucket: &str, f: impl FnOnce(&[u8]) -> Ts<R>) -> Ts<R> {
    let mut buf = [0u8; 256];
    match js::read_string_into(env, v, &mut buf) {
        Some(k) if !k.is_empty() => f(k),
        _ => f(&key_in(env, v, bucket)?),
    }
}

/// A key or an owner of the handle `name`; an error names the handle.
pub(crate) fn key_in(env: napi_env, v: napi_value, name: &str) -> Ts<Vec<u8>> {
    key(env, v).map_err(|e| e.in_bucket(name))
}

/// A key or an owner given to a method of `handle`; an error names the handle.
pub(crate) fn arg_key(env: &Env, v: &Unknown<'_>, handle: &impl Branches) -> Ts<Vec<u8>> {
    key_in(env.raw(), js::raw(v), handle.name())
}

/// The branch of `owner` under `handle`: every handle's `under`.
pub(crate) fn branch<H: Branches>(env: &Env, handle: &H, owner: &Unknown<'_>) -> napi::Result<H> {
    Ok(handle.under(&sync(env, arg_key(env, owner, handle))?))
}

/// A key or an owner: text, bytes, or an integer (its decimal spelling, so
/// `42` and `'42'` are one key). Anything else is `Invalid` (KV-1).
pub(crate) fn key(env: napi_env, v: napi_value) -> Ts<Vec<u8>> {
    match js::type_name(env, v) {
        "string" => js::read_string(env, v),
        "number" => {
            let n = js::read_f64(env, v)?;
            let i = tinystore::whole_number(n, "a number key", -MAX_SAFE..=MAX_SAFE)?;
            Ok(tinystore::AsKey::key_bytes(&i).into_owned())
        }
        "bigint" => Ok(js::signed_bigint(env, v)?.to_string().into_bytes()),
        "object" => match js::read_bytes(env, v)? {
            Some(b) => Ok(b),
            None => Err(invalid(
                "a key is text, bytes (Uint8Array) or an integer, not an object",
            )),
        },
        t => Err(invalid(format!(
            "a key is text, bytes (Uint8Array) or an integer, not {t}"
        ))),
    }
}

/// A span: text as `'15m'` or `'1h30m'` (the engine's grammar), or a number
/// of milliseconds. `undefined` or `null` is no span.
pub(crate) fn duration(env: &Env, v: &Unknown<'_>, what: &str) -> Ts<Option<Duration>> {
    let (env, v) = (env.raw(), js::raw(v));
    match js::type_name(env, v) {
        "undefined" | "null" => Ok(None),
        "string" => {
            let text = js::read_string(env, v)?;
            let text = String::from_utf8(text).map_err(|_| invalid(format!("{what} is not text")))?;
            tinystore::parse_duration(&text).map(Some)
        }
        "number" => {
            let ms = js::read_f64(env, v)?;
            millis(ms, what).map(Some)
        }
        t => Err(invalid(format!(
            "{what} is a duration as '15m', '1h30m' or a number of milliseconds, not a {t}"
        ))),
    }
}

/// A number of milliseconds as a span, by the core's rule: negative, NaN,
/// infinite or past 2^53 - 1 is `Invalid` naming `what` and the number.
pub(crate) fn millis(ms: f64, what: &str) -> Ts<Duration> {
    tinystore::duration_from_millis(ms, what)
}

/// A time as milliseconds since the Unix epoch (what `Date.getTime()` gives).
pub(crate) fn time(ms: f64, what: &str) -> Ts<SystemTime> {
    if !ms.is_finite() {
        return Err(invalid(format!("{what} is not a valid date")));
    }
    Ok(tinystore::from_millis(ms as i64))
}

/// A version as the package passes it: the decimal text an entry gave.
pub(crate) fn version(text: Option<String>) -> Ts<Option<Version>> {
    text.map(|t| t.parse::<Version>()).transpose()
}

/// The JS value of a key: its text (keys written as text are UTF-8), or a
/// `Uint8Array` when the bytes are not UTF-8.
pub(crate) fn key_value(env: napi_env, key: &tinystore::Key) -> Ts<napi_value> {
    match key.as_str() {
        Some(s) => js::string(env, s),
        None => js::uint8array(env, key.as_bytes()),
    }
}

/// A version as the package gets it: its decimal text.
pub(crate) fn version_value(env: napi_env, v: Version) -> Ts<napi_value> {
    js::string(env, &v.to_string())
}

/// `{ key, value, version, expiresAt }` of an entry.
pub(crate) fn entry(env: napi_env, kind: ValueKind, e: &tinystore::Entry<Raw>) -> Ts<napi_value> {
    entry_of(env, &e.key, kind.decode(env, &e.value)?, e.version, e.expires_at)
}

/// `{ key, value, version, expiresAt }` of a value already made.
pub(crate) fn entry_of(
    env: napi_env,
    key: &tinystore::Key,
    value: napi_value,
    version: Version,
    expires_at: Option<SystemTime>,
) -> Ts<napi_value> {
    js::object_of(
        env,
        &[
            ("key\0", key_value(env, key)?),
            ("value\0", value),
            ("version\0", version_value(env, version)?),
            ("expiresAt\0", js::opt_date(env, expires_at)?),
        ],
    )
}
