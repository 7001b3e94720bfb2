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
