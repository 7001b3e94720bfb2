//! Values across the boundary: a kind, an integer and bytes.
//!
//! A caller says which of its language's kinds a value is (text, a float, a
//! uint64...) and the core's `Raw` helpers map it onto a row, so the KV-3
//! mapping is written once, in core. Reading, the caller says which kind it
//! wants and the core's `as_*` helpers refuse a row of another kind as
//! `Corrupt`.

use tinystore::{Raw, Result};

use crate::{bytes, give_bytes, invalid};

/// Nothing: a set member (`struct{}` in Go).
pub const TS_KIND_NULL: i32 = 0;
/// An integer, in `integer`.
pub const TS_KIND_INT: i32 = 1;
/// Bytes, in `bytes`.
pub const TS_KIND_BYTES: i32 = 2;
/// UTF-8 text, in `bytes`.
pub const TS_KIND_TEXT: i32 = 3;
/// A bool, 0 or 1 in `integer`.
pub const TS_KIND_BOOL: i32 = 4;
/// A 64-bit float, its bits in `integer`.
pub const TS_KIND_FLOAT: i32 = 5;
/// A 32-bit float, its bits in the low 32 bits of `integer`.
pub const TS_KIND_FLOAT32: i32 = 6;
/// A 64-bit unsigned integer, its bits in `integer`.
pub const TS_KIND_UINT64: i32 = 7;
/// JSON text the caller's JSON library wrote, in `bytes`.
pub const TS_KIND_JSON: i32 = 8;
/// Reading only: the row as it is kept, answered as `TS_KIND_NULL`,
/// `TS_KIND_INT` or `TS_KIND_BYTES`.
pub const TS_KIND_RAW: i32 = 9;
/// Reading only: the row's bytes for a bucket's own codec, answered as
/// `TS_KIND_BYTES`; a row of another kind is `TS_CORRUPT` in the core's text.
pub const TS_KIND_CODEC: i32 = 10;

/// A value: `kind` says which of `integer` and `bytes` holds it.
#[repr(C)]
pub struct TsValue {
    /// A `TS_KIND_*`.
    pub kind: i32,
    /// The integer, bool or bits.
    pub integer: i64,
    /// The bytes, text or JSON; null when empty.
    pub bytes: *mut u8,
    /// The length of `bytes`.
    pub len: usize,
}

impl TsValue {
    /// No value: `TS_KIND_NULL`.
    pub(crate) fn null() -> TsValue {
        TsValue {
            kind: TS_KIND_NULL,
            integer: 0,
            bytes: std::ptr::null_mut(),
            len: 0,
        }
    }
}

/// A value coming in, as the core's mapping keeps it.
pub(crate) unsafe fn raw_in(kind: i32, int: i64, ptr: *const u8, len: usize) -> Result<Raw> {
    let b = || unsafe { bytes(ptr, len) };
    Ok(match kind {
        TS_KIND_NULL => Raw::Null,
        TS_KIND_INT => Raw::int(int),
        TS_KIND_BYTES => Raw::Bytes(b().to_vec()),
        TS_KIND_TEXT => Raw::text(std::str::from_utf8(b()).map_err(|_| invalid("a text value is not UTF-8"))?),
        TS_KIND_BOOL => match int {
            0 | 1 => Raw::bool(int == 1),
            _ => return Err(invalid(format!("a bool is 0 or 1, not {int}"))),
        },
        TS_KIND_FLOAT => Raw::float(f64::from_bits(int as u64)),
        TS_KIND_FLOAT32 => Raw::float32(f32::from_bits(int as u32)),
        TS_KIND_UINT64 => Raw::uint64(int as u64),
        TS_KIND_JSON => Raw::json(b().to_vec()),
        _ => return Err(invalid(format!("no value kind {kind}"))),
    })
}

/// The row read as `want`: kind, integer and the bytes to hand out.
/// A row of another kind is `Corrupt`.
pub(crate) fn read_as(raw: &Raw, want: i32) -> Result<(i32, i64, Option<&[u8]>)> {
    Ok(match want {
        TS_KIND_NULL => {
            raw.as_set_member()?;
            (TS_KIND_NULL, 0, None)
        }
        TS_KIND_INT => (want, raw.as_int()?, None),
        TS_KIND_BYTES => (want, 0, Some(raw.as_bytes()?)),
        TS_KIND_TEXT => (want, 0, Some(raw.as_text()?.as_bytes())),
        TS_KIND_BOOL => (want, raw.as_bool()? as i64, None),
        TS_KIND_FLOAT => (want, raw.as_float()?.to_bits() as i64, None),
        TS_KIND_FLOAT32 => (want, i64::from(raw.as_float32()?.to_bits()), None),
        TS_KIND_UINT64 => (want, raw.as_uint64()? as i64, None),
        TS_KIND_JSON => (want, 0, Some(raw.as_json()?)),
        TS_KIND_RAW => match raw {
            Raw::Null => (TS_KIND_NULL, 0, None),
            Raw::Int(i) => (TS_KIND_INT, *i, None),
            Raw::Bytes(b) => (TS_KIND_BYTES, 0, Some(b)),
        },
        TS_KIND_CODEC => (TS_KIND_BYTES, 0, Some(raw.as_codec_bytes()?)),
        _ => return Err(invalid(format!("no value kind {want}"))),
    })
}

/// The row read as `want`, its bytes handed to the caller.
pub(crate) fn value_out(raw: &Raw, want: i32) -> Result<TsValue> {
    value_with(raw, want, |b| give_bytes(b.to_vec()))
}

/// The row read as `want`, its bytes borrowed from `raw` (for a check
/// callback or a page, which must not free them).
pub(crate) fn value_view(raw: &Raw, want: i32) -> Result<TsValue> {
    value_with(raw, want, |b| (b.as_ptr().cast_mut(), b.len()))
}

/// The row read as `want`, its bytes (when it has any) passed out by `pass`.
fn value_with(raw: &Raw, want: i32, pass: impl FnOnce(&[u8]) -> (*mut u8, usize)) -> Result<TsValue> {
    let (kind, integer, b) = read_as(raw, want)?;
    let (bytes, len) = b.map_or((std::ptr::null_mut(), 0), pass);
    Ok(TsValue {
        kind,
        integer,
        bytes,
        len,
    })
}
