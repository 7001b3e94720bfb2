//! The values of the language-neutral cases (conformance and interchange)
//! as rows, through the core's one mapping: shared by the Rust runner and
//! the Rust agent.

use std::time::Duration;

use serde_json::Value;
use tinystore::{Error, ErrorKind, Raw, parse_duration};

/// The value types a case names.
#[derive(Clone, Copy, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Ty {
    String,
    Bytes,
    Int,
    Uint64,
    Float,
    Bool,
    Set,
    Json,
}

impl Ty {
    /// The type a case names.
    pub fn parse(s: &str) -> Ty {
        match s {
            "string" => Ty::String,
            "bytes" => Ty::Bytes,
            "int" => Ty::Int,
            "uint64" => Ty::Uint64,
            "float" => Ty::Float,
            "bool" => Ty::Bool,
            "set" => Ty::Set,
            "json" => Ty::Json,
            other => panic!("unknown value type {other:?}"),
        }
    }
}

/// Bytes from hex.
pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A key or owner of a case as text.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) if o.contains_key("repeat") => o["repeat"]
            .as_str()
            .unwrap()
            .repeat(o["times"].as_u64().unwrap() as usize),
        Value::Number(n) => n.to_string(),
        other => panic!("not a key or owner: {other}"),
    }
}

/// A key as text for comparisons.
pub fn lossy(k: &tinystore::Key) -> String {
    String::from_utf8_lossy(k.as_bytes()).into_owned()
}

/// A duration of a case.
pub fn span(v: &Value) -> Result<Duration, Error> {
    parse_duration(v.as_str().expect("a duration is text"))
}

/// A value of a case, as the row of `ty` keeps it (through the core's mapping).
pub fn to_raw(ty: Ty, v: &Value) -> Raw {
    match ty {
        Ty::String => match v {
            Value::String(s) => Raw::text(s),
            Value::Object(_) => Raw::text(&text(v)),
            other => panic!("not a string value: {other}"),
        },
        Ty::Bytes => {
            let unit = hex(v["hex"].as_str().expect("bytes are {hex}"));
            Raw::Bytes(unit.repeat(v.get("times").and_then(Value::as_u64).unwrap_or(1) as usize))
        }
        Ty::Int => match v {
            Value::Number(n) => Raw::int(n.as_i64().expect("an int64")),
            Value::Object(o) => Raw::int(o["int"].as_str().unwrap().parse().unwrap()),
            other => panic!("not an int value: {other}"),
        },
        Ty::Uint64 => Raw::uint64(v["uint64"].as_str().unwrap().parse().unwrap()),
        Ty::Float => Raw::float(float(v)),
        Ty::Bool => Raw::bool(v.as_bool().expect("a bool")),
        Ty::Set => Raw::Null,
        Ty::Json => Raw::json(serde_json::to_vec(v).unwrap()),
    }
}

/// A float of a case.
pub fn float(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::Object(o) if o.contains_key("bits") => {
            f64::from_bits(u64::from_str_radix(o["bits"].as_str().unwrap(), 16).unwrap())
        }
        Value::Object(o) => match o["float"].as_str().unwrap() {
            "-0" => -0.0,
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            other => panic!("unknown float {other}"),
        },
        other => panic!("not a float value: {other}"),
    }
}

/// Reads a row as `ty`, as a typed API would: a row of another kind is Corrupt.
pub fn check_type(ty: Ty, raw: &Raw) -> Result<(), Error> {
    match ty {
        Ty::String => raw.as_text().map(|_| ()),
        Ty::Bytes => raw.as_bytes().map(|_| ()),
        Ty::Int => raw.as_int().map(|_| ()),
        Ty::Uint64 => raw.as_uint64().map(|_| ()),
        Ty::Float => raw.as_float().map(|_| ()),
        Ty::Bool => raw.as_bool().map(|_| ()),
        Ty::Set => raw.as_set_member(),
        Ty::Json => serde_json::from_slice::<Value>(raw.as_json()?)
            .map(|_| ())
            .map_err(|e| Error::new(ErrorKind::Corrupt, format!("not JSON: {e}"))),
    }
}

/// Compares a row with a case's expected value.
pub fn same_value(ty: Ty, expected: &Value, actual: &Raw) -> bool {
    match ty {
        Ty::Json => {
            serde_json::from_slice::<Value>(actual.as_json().unwrap_or(b""))
                .ok()
                .as_ref()
                == Some(expected)
        }
        Ty::Float => actual.as_float().map(f64::to_bits).ok() == Some(float(expected).to_bits()),
        _ => &to_raw(ty, expected) == actual,
    }
}
