//! Python values to core types and back: keys, durations, versions and
//! the scalar values of a bucket. Scalars go through the core's `Raw`
//! mapping (`Raw::text`, `as_int`, ...); JSON values through the codec the
//! Python package built for the bucket's type.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDelta, PyDeltaAccess, PyFloat, PyInt, PyString, PyTuple};
use tinystore::{Branches, CodecFault, Error, ErrorKind, Raw, Version};

use crate::errors::{corrupt, from_codec, invalid, to_py};

/// A Python object as a call is given it.
pub type Arg<'py> = Bound<'py, PyAny>;

/// What a call answers: a Python object, its value or the `Pending` that
/// gives the value on the loop.
pub type Answered = PyResult<Py<PyAny>>;

/// The bytes of a key or owner: text as UTF-8, bytes as they are, an
/// integer as its decimal spelling (KV-1). Anything else is `Invalid`.
pub fn key_bytes<'a>(obj: &'a Bound<'_, PyAny>) -> Result<Cow<'a, [u8]>, Error> {
    if let Ok(s) = obj.cast::<PyString>() {
        let text = s
            .to_str()
            .map_err(|_| invalid("a key is not valid text (it holds a lone surrogate)"))?;
        return Ok(Cow::Borrowed(text.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        let text = obj
            .str()
            .map_err(|_| invalid("an integer key has no decimal spelling"))?;
        return Ok(Cow::Owned(text.to_string().into_bytes()));
    }
    Err(invalid(format!(
        "a key must be str, bytes or int, not {}",
        type_name(obj)
    )))
}

/// [`key_bytes`] of a key or owner of the handle `name`, whose errors name it.
pub fn key_in(py: Python<'_>, name: &str, key: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    key_bytes(key)
        .map(|k| k.into_owned())
        .map_err(|e| to_py(py, e.in_bucket(name)))
}

/// The branch of `owners` under `handle`, each owner a key whose error
/// names the handle.
pub fn branch<H: Branches>(py: Python<'_>, handle: &H, owners: &Bound<'_, PyTuple>) -> PyResult<H> {
    let mut h = handle.clone();
    for o in owners.iter() {
        h = h.under(&key_in(py, handle.name(), &o)?);
    }
    Ok(h)
}

/// A key as Python gets it back: `str` when it is UTF-8, else `bytes`.
pub fn key_to_py<'py>(py: Python<'py>, key: &[u8]) -> Bound<'py, PyAny> {
    match std::str::from_utf8(key) {
        Ok(s) => PyString::new(py, s).into_any(),
        Err(_) => PyBytes::new(py, key).into_any(),
    }
}

/// The name of an object's type, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// An int argument as the core's signed number, which the core checks:
/// a bool or another type is refused here, naming `what`, and an int past
/// i128 goes as its decimal text, which every check of the core refuses.
pub fn int_of(obj: &Bound<'_, PyAny>, what: &str) -> Result<tinystore::Signed, Error> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        let shown = obj.repr().map(|r| r.to_string()).unwrap_or_default();
        return Err(invalid(format!(
            "{what} must be an int, not {} {shown}",
            type_name(obj)
        )));
    }
    Ok(match obj.extract::<i128>() {
        Ok(n) => n.into(),
        Err(_) => tinystore::Signed::Other(obj.str().map(|t| t.to_string()).unwrap_or_default().into()),
    })
}

/// A duration: text in the core's grammar (`"15m"`, `"1h30m"`) or a
/// `datetime.timedelta`. `what` names the option in messages.
pub fn span(obj: &Bound<'_, PyAny>, what: &str) -> Result<Duration, Error> {
    if let Ok(s) = obj.cast::<PyString>() {
        let text = s.to_str().map_err(|_| invalid(format!("{what} is not valid text")))?;
        return tinystore::parse_duration(text).map_err(|e| invalid(format!("{what}: {}", e.message())));
    }
    if let Ok(d) = obj.cast::<PyDelta>() {
        let (days, secs, micros) = (d.get_days(), d.get_seconds(), d.get_microseconds());
        let micros = (i128::from(days) * 86_400 + i128::from(secs)) * 1_000_000 + i128::from(micros);
        return tinystore::duration_from_nanos(micros * 1_000, what);
    }
    Err(invalid(format!(
        "{what} must be a duration as text (\"15m\", \"30d\", \"1h30m\") or a timedelta, not {}",
        type_name(obj)
    )))
}

/// An optional duration argument.
pub fn opt_span(obj: Option<&Bound<'_, PyAny>>, what: &str) -> Result<Option<Duration>, Error> {
    match obj {
        Some(o) if !o.is_none() => span(o, what).map(Some),
        _ => Ok(None),
    }
}

/// A version as a call's `if_version`: the text `entry` gave, or its number.
pub fn version(obj: Option<&Bound<'_, PyAny>>) -> Result<Option<Version>, Error> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(s) = obj.cast::<PyString>() {
        let text = s.to_str().map_err(|_| invalid("if_version is not valid text"))?;
        return text.parse::<Version>().map(Some);
    }
    if obj.is_instance_of::<PyInt>()
        && !obj.is_instance_of::<PyBool>()
        && let Ok(n) = obj.extract::<i64>()
    {
        return Ok(Some(Version::from_raw(n)));
    }
    Err(invalid(format!(
        "if_version must be a version as entry() gave it, not {}",
        type_name(obj)
    )))
}

/// The type of a bucket's values, as the package's codec named it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    Str,
    Bytes,
    Int,
    Float,
    Bool,
    /// A set: members have no value.
    Set,
    /// Anything else: JSON written and read by the Python codec.
    Json,
    /// The bytes of a bucket's own codec.
    Custom,
    /// The row as it is: `None`, an `int` or `bytes` (`tinystore.Raw`).
    Raw,
}

impl ValueKind {
    pub fn parse(name: &str) -> Result<ValueKind, Error> {
        Ok(match name {
            "str" => ValueKind::Str,
            "bytes" => ValueKind::Bytes,
            "int" => ValueKind::Int,
            "float" => ValueKind::Float,
            "bool" => ValueKind::Bool,
            "none" => ValueKind::Set,
            "json" => ValueKind::Json,
            "codec" => ValueKind::Custom,
            "raw" => ValueKind::Raw,
            other => return Err(invalid(format!("unknown value kind {other:?}"))),
        })
    }
}

/// How one handle's values cross between Python and rows: the kind, and
/// for JSON the package's `encode(value) -> bytes` and `decode(bytes) -> value`.
pub struct Codec {
    pub kind: ValueKind,
    /// The type's name, for messages.
    pub type_name: String,
    pub encode: Option<Py<PyAny>>,
    pub decode: Option<Py<PyAny>>,
}

impl Codec {
    /// The codec of the handle `name` (a `what`: bucket or once) from the
    /// package's (`tinystore._codecs.Codec`): its kind, its type's name and
    /// for JSON its encoder and decoder.
    pub fn of(py: Python<'_>, name: &str, what: &str, codec: &Bound<'_, PyAny>) -> PyResult<Arc<Codec>> {
        let field = |f: &str| codec.getattr(f);
        let (kind, type_name): (String, String) = (field("kind")?.extract()?, field("type_name")?.extract()?);
        let (encode, decode): (Option<Py<PyAny>>, Option<Py<PyAny>>) =
            (field("encode")?.extract()?, field("decode")?.extract()?);
        Codec::new(name, what, &kind, type_name, encode, decode).map_err(|e| to_py(py, e))
    }

    fn new(
        name: &str,
        what: &str,
        kind: &str,
        type_name: String,
        encode: Option<Py<PyAny>>,
        decode: Option<Py<PyAny>>,
    ) -> Result<Arc<Codec>, Error> {
        let kind = ValueKind::parse(kind).map_err(|e| e.in_bucket(name))?;
        if matches!(kind, ValueKind::Json | ValueKind::Custom) && (encode.is_none() || decode.is_none()) {
            return Err(invalid(format!("a JSON {what} needs an encoder and a decoder")).in_bucket(name));
        }
        Ok(Arc::new(Codec {
            kind,
            type_name,
            encode,
            decode,
        }))
    }

    fn wrong(&self, value: &Bound<'_, PyAny>) -> Error {
        let why = format!("got {}", type_name(value));
        CodecFault::ValueType {
            ty: &self.type_name,
            why: &why,
        }
        .error()
    }

    /// A Python value as a row, refusing a value of another type (`Invalid`).
    pub fn to_raw(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> Result<Raw, Error> {
        let is_bool = value.is_instance_of::<PyBool>();
        match self.kind {
            ValueKind::Str => text_row(value).unwrap_or_else(|| Err(self.wrong(value))),
            ValueKind::Bytes => bytes_row(value).ok_or_else(|| self.wrong(value)),
            ValueKind::Int if value.is_instance_of::<PyInt>() && !is_bool => int_row(value),
            // An int is a fine float (PEP 484); a bool is not.
            ValueKind::Float if (value.is_instance_of::<PyFloat>() || value.is_instance_of::<PyInt>()) && !is_bool => {
                match value.extract::<f64>() {
                    Ok(f) => Ok(Raw::float(f)),
                    Err(_) => Err(invalid("the integer is too large for a float")),
                }
            }
            ValueKind::Bool if is_bool => Ok(Raw::bool(value.is_truthy().unwrap_or(false))),
            ValueKind::Set if value.is_none() => Ok(Raw::Null),
            ValueKind::Json | ValueKind::Custom => {
                let encode = self.encode.as_ref().expect("a JSON codec has an encoder");
                let out = encode
                    .bind(py)
                    .call1((value,))
                    .map_err(|e| from_codec(py, ErrorKind::Invalid, e))?;
                let bytes = out
                    .cast::<PyBytes>()
                    .map_err(|_| invalid("the codec did not give bytes"))?;
                Ok(Raw::json(bytes.as_bytes().to_vec()))
            }
            ValueKind::Raw => raw_row(value),
            _ => Err(self.wrong(value)),
        }
    }

    /// A row as the Python value of this type; a row of another kind is `Corrupt`.
    pub fn to_py<'py>(&self, py: Python<'py>, raw: &Raw) -> Result<Bound<'py, PyAny>, Error> {
        Ok(match self.kind {
            ValueKind::Str => PyString::new(py, raw.as_text()?).into_any(),
            ValueKind::Bytes => PyBytes::new(py, raw.as_bytes()?).into_any(),
            ValueKind::Int => PyInt::new(py, raw.as_int()?).into_any(),
            ValueKind::Float => PyFloat::new(py, raw.as_float()?).into_any(),
            ValueKind::Bool => PyBool::new(py, raw.as_bool()?).to_owned().into_any(),
            ValueKind::Set => {
                raw.as_set_member()?;
                py.None().into_bound(py)
            }
            ValueKind::Json | ValueKind::Custom => {
                let row = if self.kind == ValueKind::Custom {
                    raw.as_codec_bytes()?
                } else {
                    raw.as_json()?
                };
                let bytes = PyBytes::new(py, row);
                let decode = self.decode.as_ref().expect("a JSON codec has a decoder");
                decode
                    .bind(py)
                    .call1((bytes,))
                    .map_err(|e| from_codec(py, ErrorKind::Corrupt, e))?
            }
            ValueKind::Raw => match raw {
                Raw::Null => py.None().into_bound(py),
                Raw::Int(i) => PyInt::new(py, *i).into_any(),
                Raw::Bytes(b) => PyBytes::new(py, b).into_any(),
            },
        })
    }

    /// Whether a row reads as this type, checked without Python where the
    /// kind allows (inside a `take`, on the writer thread).
    pub fn check(&self, raw: &Raw) -> Result<(), Error> {
        match self.kind {
            ValueKind::Str => raw.as_text().map(drop),
            ValueKind::Bytes => raw.as_bytes().map(drop),
            ValueKind::Int => raw.as_int().map(drop),
            ValueKind::Float => raw.as_float().map(drop),
            ValueKind::Bool => raw.as_bool().map(drop),
            ValueKind::Set => raw.as_set_member(),
            ValueKind::Json | ValueKind::Custom => Python::attach(|py| self.to_py(py, raw).map(drop)),
            ValueKind::Raw => Ok(()),
        }
        .map_err(|e| {
            if e.kind() == ErrorKind::Corrupt {
                e
            } else {
                corrupt(e.message().to_owned())
            }
        })
    }
}

/// A value of a raw bucket as its row: `None` is nothing, an `int` (a bool
/// too, as 1 or 0) an integer, `bytes` (or `bytearray`, `memoryview`) bytes,
/// and a `str` its UTF-8 bytes, as a `str` bucket keeps it.
fn raw_row(value: &Bound<'_, PyAny>) -> Result<Raw, Error> {
    if value.is_none() {
        return Ok(Raw::Null);
    }
    if value.is_instance_of::<PyInt>() {
        return int_row(value);
    }
    if let Some(row) = bytes_row(value) {
        return Ok(row);
    }
    if let Some(row) = text_row(value) {
        return row;
    }
    if let Ok(m) = value.cast::<pyo3::types::PyMemoryView>()
        && let Ok(b) = m.call_method0("tobytes")
        && let Ok(b) = b.cast::<PyBytes>()
    {
        return Ok(Raw::Bytes(b.as_bytes().to_vec()));
    }
    Err(invalid(format!(
        "a raw bucket holds None, an int or bytes, not {}",
        type_name(value)
    )))
}

/// A `str` as its row (None for another type); a lone surrogate is refused.
fn text_row(value: &Bound<'_, PyAny>) -> Option<Result<Raw, Error>> {
    let text = value.cast::<PyString>().ok()?.to_str();
    Some(
        text.map(Raw::text)
            .map_err(|_| invalid("the text holds a lone surrogate")),
    )
}

/// `bytes` or a `bytearray` as its row (None for another type).
fn bytes_row(value: &Bound<'_, PyAny>) -> Option<Raw> {
    if let Ok(b) = value.cast::<PyBytes>() {
        return Some(Raw::Bytes(b.as_bytes().to_vec()));
    }
    value.cast::<PyByteArray>().ok().map(|b| Raw::Bytes(b.to_vec()))
}

/// An `int` as its row (the core refuses one past int64).
fn int_row(value: &Bound<'_, PyAny>) -> Result<Raw, Error> {
    match value.extract::<i64>() {
        Ok(i) => Ok(Raw::int(i)),
        Err(_) => Raw::int64_of(int_of(value, "an integer")?),
    }
}
