//! A value as its row keeps it.

use crate::error::{Error, Result};

/// The largest value, in encoded bytes.
pub const MAX_VALUE: usize = 1 << 20;

/// Values over this many encoded bytes live in a row of their own, so that
/// scans of keys and expiry do not read through them.
pub const SPILL_OVER: usize = 512;

/// A value as its row keeps it: nothing (a set member), an integer (bools
/// and integers that fit), or bytes (strings, byte strings, float bits,
/// 64-bit unsigned integers and JSON). Every language maps its own types
/// onto these three, which is what lets one read what another wrote.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Raw {
    /// No value: a member of a set.
    Null,
    /// An integer row.
    Int(i64),
    /// A byte row. An empty string is empty bytes, not `Null`.
    Bytes(Vec<u8>),
}

impl Raw {
    /// The name of the row's kind, for listings and messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Raw::Null => "nothing",
            Raw::Int(_) => "integer",
            Raw::Bytes(_) => "bytes",
        }
    }

    /// The size this value takes in a row, as the value limits count it.
    pub fn encoded_len(&self) -> usize {
        match self {
            Raw::Null => 0,
            Raw::Int(_) => 8,
            Raw::Bytes(b) => b.len(),
        }
    }

    /// Refuses a value over [`MAX_VALUE`].
    pub(crate) fn check_size(&self) -> Result<()> {
        let n = self.encoded_len();
        if n > MAX_VALUE {
            return Err(Error::limit(format!(
                "a value of {n} bytes is over the limit of {MAX_VALUE} bytes (1 MiB)"
            )));
        }
        Ok(())
    }
}

impl rusqlite::ToSql for Raw {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(match self {
            Raw::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Raw::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Raw::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

impl Raw {
    /// Reads a value column; anything but NULL, an integer or a blob is damage.
    pub(crate) fn from_sql(v: rusqlite::types::ValueRef<'_>) -> Result<Raw> {
        use rusqlite::types::ValueRef;
        match v {
            ValueRef::Null => Ok(Raw::Null),
            ValueRef::Integer(i) => Ok(Raw::Int(i)),
            ValueRef::Blob(b) => Ok(Raw::Bytes(b.to_vec())),
            ValueRef::Text(t) => Ok(Raw::Bytes(t.to_vec())),
            ValueRef::Real(_) => Err(Error::corrupt("a value row holds a REAL")),
        }
    }
}

/// The one mapping of each language's scalar types onto rows (KV-3), so that
/// no binding writes its own: a binding converts its value to the Rust
/// scalar and calls these.
impl Raw {
    /// Text: its UTF-8 bytes.
    pub fn text(s: &str) -> Raw {
        Raw::Bytes(s.as_bytes().to_vec())
    }

    /// An integer.
    pub fn int(i: i64) -> Raw {
        Raw::Int(i)
    }

    /// A 64-bit unsigned integer: eight big-endian bytes.
    pub fn uint64(u: u64) -> Raw {
        Raw::Bytes(u.to_be_bytes().to_vec())
    }

    /// A bool: the integer 1 or 0.
    pub fn bool(b: bool) -> Raw {
        Raw::Int(b as i64)
    }

    /// A float: the eight big-endian bytes of its bits, so -0, infinities
    /// and NaN payloads come back bit for bit.
    pub fn float(f: f64) -> Raw {
        Raw::Bytes(f.to_bits().to_be_bytes().to_vec())
    }

    /// A 32-bit float: the four big-endian bytes of its bits, as serde keeps
    /// an `f32`, so a signalling NaN stays one.
    pub fn float32(f: f32) -> Raw {
        Raw::Bytes(f.to_bits().to_be_bytes().to_vec())
    }

    /// JSON text, already encoded by the language's own JSON library.
    pub fn json(encoded: Vec<u8>) -> Raw {
        Raw::Bytes(encoded)
    }

    /// The row named in a message: "an integer row".
    pub fn a_row(&self) -> &'static str {
        a_row_of(self.kind_name())
    }

    fn wrong(&self, want: &str) -> Error {
        Error::corrupt(format!("{} does not read as {want}", self.a_row()))
    }

    /// The row as bytes.
    pub fn as_bytes(&self) -> Result<&[u8]> {
        match self {
            Raw::Bytes(b) => Ok(b),
            _ => Err(self.wrong("bytes")),
        }
    }

    /// The row as UTF-8 text.
    pub fn as_text(&self) -> Result<&str> {
        std::str::from_utf8(self.as_bytes().map_err(|_| self.wrong("text"))?)
            .map_err(|_| Error::corrupt("a byte row is not UTF-8 text"))
    }

    /// The row as an integer.
    pub fn as_int(&self) -> Result<i64> {
        match self {
            Raw::Int(i) => Ok(*i),
            _ => Err(self.wrong("an integer")),
        }
    }

    /// The row as a 64-bit unsigned integer (eight bytes, or a non-negative integer).
    pub fn as_uint64(&self) -> Result<u64> {
        match self {
            Raw::Int(i) if *i >= 0 => Ok(*i as u64),
            Raw::Bytes(b) if b.len() == 8 => Ok(u64::from_be_bytes(b[..].try_into().expect("eight bytes"))),
            _ => Err(self.wrong("a 64-bit unsigned integer")),
        }
    }

    /// The row as a bool (1 or 0).
    pub fn as_bool(&self) -> Result<bool> {
        match self {
            Raw::Int(0) => Ok(false),
            Raw::Int(1) => Ok(true),
            _ => Err(self.wrong("a bool")),
        }
    }

    /// The row as a float (eight bytes of bits, or four of a 32-bit float).
    pub fn as_float(&self) -> Result<f64> {
        match self {
            Raw::Bytes(b) if b.len() == 8 => Ok(f64::from_bits(u64::from_be_bytes(b[..].try_into().expect("8")))),
            Raw::Bytes(b) if b.len() == 4 => {
                Ok(f32::from_bits(u32::from_be_bytes(b[..].try_into().expect("4"))).into())
            }
            _ => Err(self.wrong("a float")),
        }
    }

    /// The row as a 32-bit float: four bytes of bits, bit for bit, or the
    /// eight of a 64-bit float, rounded.
    pub fn as_float32(&self) -> Result<f32> {
        match self {
            Raw::Bytes(b) if b.len() == 4 => Ok(f32::from_bits(u32::from_be_bytes(b[..].try_into().expect("4")))),
            Raw::Bytes(b) if b.len() == 8 => {
                Ok(f64::from_bits(u64::from_be_bytes(b[..].try_into().expect("8"))) as f32)
            }
            _ => Err(self.wrong("a float")),
        }
    }

    /// The row as a set member (no value).
    pub fn as_set_member(&self) -> Result<()> {
        match self {
            Raw::Null => Ok(()),
            _ => Err(self.wrong("a set member")),
        }
    }

    /// The row as JSON text (bytes the language's JSON library parses).
    pub fn as_json(&self) -> Result<&[u8]> {
        self.as_bytes().map_err(|_| self.wrong("JSON"))
    }
}

/// A row of the kind named `kind` (a [`Raw::kind_name`]) as a message names
/// it: "an integer row". A binding that names a row's kind by that word gets
/// the same text as the core.
pub fn a_row_of(kind: &str) -> &'static str {
    match kind {
        "nothing" => "an empty row",
        "integer" => "an integer row",
        "bytes" => "a bytes row",
        _ => "a row of another kind",
    }
}
