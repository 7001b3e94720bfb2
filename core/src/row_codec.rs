//! How a typed bucket turns its values into rows and back.
//!
//! By default a value is kept by its serde shape ([`ByType`], KV-3). A bucket
//! can be given its own [`Codec`] instead (`.codec(c)` on the builder), whose
//! bytes are kept as a byte row; and a bucket opened with
//! [`Store::raw_bucket`](crate::Store::raw_bucket) reads and writes rows as
//! they are ([`AsRow`]). A row a codec cannot decode is `Corrupt`, naming the
//! bucket and key, and a `take` of it leaves it in place, because the decode
//! runs inside the take's write.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::NO_JSON;
use crate::error::{Error, Result};
use crate::raw::Raw;

/// The error a [`Codec`] gives: any error, boxed.
pub type CodecError = Box<dyn std::error::Error + Send + Sync>;

/// A bucket's own encoding of its values, in place of the choice by type:
/// `store.bucket::<Point>("points").codec(PointCodec).open()?`.
///
/// What `encode` gives is kept as a byte row, and `decode` reads it back. An
/// error from `encode` is `Invalid` and writes nothing; an error (or a panic)
/// from `decode` is `Corrupt`, and a `take` of such a value keeps it.
/// A pair of functions `(encode, decode)` is a codec too.
pub trait Codec<T>: Send + Sync + 'static {
    /// The bytes that keep `value`.
    fn encode(&self, value: &T) -> std::result::Result<Vec<u8>, CodecError>;
    /// The value kept in `bytes`.
    fn decode(&self, bytes: &[u8]) -> std::result::Result<T, CodecError>;
}

impl<T, E, D> Codec<T> for (E, D)
where
    E: Fn(&T) -> std::result::Result<Vec<u8>, CodecError> + Send + Sync + 'static,
    D: Fn(&[u8]) -> std::result::Result<T, CodecError> + Send + Sync + 'static,
{
    fn encode(&self, value: &T) -> std::result::Result<Vec<u8>, CodecError> {
        (self.0)(value)
    }
    fn decode(&self, bytes: &[u8]) -> std::result::Result<T, CodecError> {
        (self.1)(bytes)
    }
}

/// How a bucket of `T` maps values onto rows: [`ByType`], [`WithCodec`] or
/// [`AsRow`]. A bucket builder's second type parameter; rarely named.
pub trait RowCodec<T>: Send + Sync + 'static {
    /// The row that keeps `value`; a value that cannot be kept is `Invalid`.
    fn encode_row(&self, value: &T) -> Result<Raw>;
    /// The value a row keeps; a row that does not read as `T` is `Corrupt`.
    fn decode_row(&self, row: &Raw) -> Result<T>;
    /// [`RowCodec::decode_row`] of a row the caller no longer needs, which
    /// a codec may take apart instead of copying.
    fn decode_owned(&self, row: Raw) -> Result<T> {
        self.decode_row(&row)
    }
}

/// The default: a value is kept by its serde shape (KV-3), as every
/// language keeps the same kind of value.
#[derive(Clone, Copy, Debug, Default)]
pub struct ByType;

impl<T: Serialize + DeserializeOwned + 'static> RowCodec<T> for ByType {
    fn encode_row(&self, value: &T) -> Result<Raw> {
        crate::codec::encode(value)
    }
    fn decode_row(&self, row: &Raw) -> Result<T> {
        crate::codec::decode(row)
    }
    fn decode_owned(&self, row: Raw) -> Result<T> {
        crate::codec::decode_owned(row)
    }
}

/// A [`Codec`] given to a bucket: its bytes are a byte row.
#[derive(Clone, Copy, Debug)]
pub struct WithCodec<C>(pub C);

pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// What a bucket's own codec (the user's encode and decode), or a JSON
/// bucket's, did wrong: each is one error, with one message in every
/// language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodecFault<'a> {
    /// Its encode failed (an error, an exception or a panic), saying this.
    Encode(&'a str),
    /// Its decode failed, saying this: the row stays as it is.
    Decode(&'a str),
    /// Its encode gave a value of this type, not bytes.
    NotBytes(&'a str),
    /// The row is of this kind, not bytes, so the codec cannot read it.
    RowNotBytes(&'a str),
    /// The language's JSON library could not write the value, saying this.
    JsonEncode(&'a str),
    /// The value holds one of this type, which JSON has no way to write.
    JsonType(&'a str),
    /// The value holds a map whose keys are of this type, not text.
    JsonKey(&'a str),
    /// A JSON bucket's row does not parse as JSON, the library saying this.
    JsonDecode(&'a str),
    /// The value is not of the handle's type (named as its language names
    /// it), saying why.
    ValueType { ty: &'a str, why: &'a str },
    /// The row does not read as the handle's type, saying why: the row
    /// stays as it is.
    RowType { ty: &'a str, why: &'a str },
}

impl<'a> CodecFault<'a> {
    /// The fault a binding names by a word (`encode`, `decode`, `not_bytes`,
    /// `row_not_bytes`, `json_encode`, `json_type`, `json_key`,
    /// `json_decode`, `value_type`, `row_type`) with its detail, for a codec
    /// in its own language; `ty` is the handle's type, which only
    /// `value_type` and `row_type` name.
    pub fn named(word: &str, detail: &'a str, ty: &'a str) -> Option<CodecFault<'a>> {
        Some(match word {
            "encode" => CodecFault::Encode(detail),
            "decode" => CodecFault::Decode(detail),
            "not_bytes" => CodecFault::NotBytes(detail),
            "row_not_bytes" => CodecFault::RowNotBytes(detail),
            "json_encode" => CodecFault::JsonEncode(detail),
            "json_type" => CodecFault::JsonType(detail),
            "json_key" => CodecFault::JsonKey(detail),
            "json_decode" => CodecFault::JsonDecode(detail),
            "value_type" => CodecFault::ValueType { ty, why: detail },
            "row_type" => CodecFault::RowType { ty, why: detail },
            _ => return None,
        })
    }

    /// The error: `Invalid` for what an encode did (nothing is written),
    /// `Corrupt` for a row that does not read back.
    pub fn error(self) -> Error {
        match self {
            CodecFault::JsonEncode(why) => Error::invalid(format!("{NO_JSON}: {why}")),
            // Bytes have their own row kind, which every language reads:
            // the hint names it, since JSON would keep them as numbers or text.
            CodecFault::JsonType("bytes") => Error::invalid(format!(
                "{NO_JSON}: it holds bytes, which JSON has no way to write: keep them in a bytes bucket, or as text"
            )),
            CodecFault::JsonType(ty) => Error::invalid(format!(
                "{NO_JSON}: it holds a value of type {ty}, which JSON has no way to write"
            )),
            CodecFault::JsonKey(ty) => Error::invalid(format!("{NO_JSON}: its keys are text, not {ty}")),
            CodecFault::JsonDecode(why) => Error::corrupt(format!("the row is not JSON: {why}")),
            CodecFault::Encode(why) => Error::invalid(format!("the bucket's codec could not encode the value: {why}")),
            CodecFault::Decode(why) => Error::corrupt(format!("the bucket's codec could not decode the value: {why}")),
            CodecFault::NotBytes(got) => Error::invalid(format!("the bucket's codec gave {got}, not bytes")),
            CodecFault::ValueType { ty, why } => Error::invalid(format!("the value does not fit the type {ty}: {why}")),
            CodecFault::RowType { ty, why } => Error::corrupt(format!("the row does not read as {ty}: {why}")),
            CodecFault::RowNotBytes(kind) => Error::corrupt(format!(
                "{} does not read through the bucket's codec, which reads bytes",
                crate::raw::a_row_of(kind)
            )),
        }
    }
}

impl Raw {
    /// The row's bytes, for a bucket's own codec, which reads bytes only: a
    /// row of another kind is `Corrupt`, in the one text every language gives.
    pub fn as_codec_bytes(&self) -> Result<&[u8]> {
        match self {
            Raw::Bytes(b) => Ok(b),
            other => Err(CodecFault::RowNotBytes(other.kind_name()).error()),
        }
    }
}

impl<T, C: Codec<T>> RowCodec<T> for WithCodec<C> {
    fn encode_row(&self, value: &T) -> Result<Raw> {
        // A codec is the user's code: a panic in it must not unwind through
        // the store, so it is the call's error instead.
        match catch_unwind(AssertUnwindSafe(|| self.0.encode(value))) {
            Ok(Ok(bytes)) => Ok(Raw::Bytes(bytes)),
            Ok(Err(e)) => Err(CodecFault::Encode(&e.to_string()).error()),
            Err(p) => Err(CodecFault::Encode(&format!("it panicked: {}", panic_text(p.as_ref()))).error()),
        }
    }
    fn decode_row(&self, row: &Raw) -> Result<T> {
        let bytes = row.as_codec_bytes()?;
        // The decode of a take runs on the writer thread: a panic there is
        // `Corrupt`, and the value stays.
        match catch_unwind(AssertUnwindSafe(|| self.0.decode(bytes))) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(CodecFault::Decode(&e.to_string()).error()),
            Err(p) => Err(CodecFault::Decode(&format!("it panicked: {}", panic_text(p.as_ref()))).error()),
        }
    }
}

/// Rows as they are: a bucket of [`Raw`] reads what a bucket of any type
/// wrote under its name, and writes rows a bucket of the matching type reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct AsRow;

impl RowCodec<Raw> for AsRow {
    fn encode_row(&self, value: &Raw) -> Result<Raw> {
        Ok(value.clone())
    }
    fn decode_row(&self, row: &Raw) -> Result<Raw> {
        Ok(row.clone())
    }
    fn decode_owned(&self, row: Raw) -> Result<Raw> {
        Ok(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn every_json_and_type_word_names_its_fault() {
        for (word, detail, kind, text) in [
            (
                "json_encode",
                "a cycle",
                ErrorKind::Invalid,
                "the value cannot be written as JSON: a cycle",
            ),
            (
                "json_type",
                "function",
                ErrorKind::Invalid,
                "the value cannot be written as JSON: it holds a value of type function, which JSON has no way to write",
            ),
            (
                "json_type",
                "bytes",
                ErrorKind::Invalid,
                "the value cannot be written as JSON: it holds bytes, which JSON has no way to write: keep them in a bytes bucket, or as text",
            ),
            (
                "json_key",
                "tuple",
                ErrorKind::Invalid,
                "the value cannot be written as JSON: its keys are text, not tuple",
            ),
            (
                "json_decode",
                "line 1",
                ErrorKind::Corrupt,
                "the row is not JSON: line 1",
            ),
            (
                "value_type",
                "[0]: got str",
                ErrorKind::Invalid,
                "the value does not fit the type list[int]: [0]: got str",
            ),
            (
                "row_type",
                "[0]: got str",
                ErrorKind::Corrupt,
                "the row does not read as list[int]: [0]: got str",
            ),
        ] {
            let e = CodecFault::named(word, detail, "list[int]").expect(word).error();
            assert_eq!((e.kind(), e.message()), (kind, text), "{word}");
        }
    }
}
