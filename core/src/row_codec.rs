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

use crate::codec_fault::CodecFault;
use crate::error::Result;
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
