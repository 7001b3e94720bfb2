//! Rust values to rows and back, by their serde shape (KV-3).
//!
//! A value whose serde shape is a scalar keeps that scalar's row: strings and
//! byte strings as bytes, bools and integers up to 32 unsigned bits as an
//! integer, `u64` as eight big-endian bytes, floats as their big-endian bits,
//! `()` as nothing (a set member). Everything else is JSON. This is the same
//! choice the Go, Python and TypeScript APIs make for their own types, so a
//! row written in one language reads back in another.
//!
//! Encoding first asks a probe serializer for the scalar; the probe stops at
//! the first compound shape, and the value is then written as JSON.

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::ser::{self, Impossible, Serialize};
use std::any::{Any, TypeId};
use std::fmt;

use crate::codec_fault::{CodecFault, NO_JSON};
use crate::error::{Error, Result};
use crate::raw::Raw;

/// Encodes `value` into the row its type keeps.
pub fn encode<T: Serialize + ?Sized + 'static>(value: &T) -> Result<Raw> {
    if let Some(bytes) = as_bytes(value) {
        return Ok(Raw::Bytes(bytes.clone()));
    }
    match value.serialize(Probe) {
        Ok(raw) => Ok(raw),
        Err(ProbeError::Compound) => {
            value.serialize(FiniteCheck).map_err(|e| Error::invalid(e.0))?;
            crate::json_fields::to_json(value)
                .map(Raw::Bytes)
                .map_err(|e| Error::invalid(format!("{NO_JSON}: {e}")))
        }
        Err(ProbeError::Invalid(m)) => Err(Error::invalid(m)),
    }
}

/// `Vec<u8>` is bytes (KV-3, Go's `[]byte`), kept as they are. Serde sees
/// it as a sequence of numbers, which would be JSON (`[7,7,7]`): twice the
/// size, unreadable as bytes by the other languages, and decoded number by
/// number.
fn as_bytes<T: ?Sized + 'static>(value: &T) -> Option<&Vec<u8>> {
    if TypeId::of::<T>() == TypeId::of::<Vec<u8>>() {
        // SAFETY: T is Vec<u8>: the type ids are equal.
        Some(unsafe { &*(value as *const T as *const Vec<u8>) })
    } else {
        None
    }
}

/// Decodes a row as `T`; a row of another kind is `Corrupt`.
pub fn decode<T: DeserializeOwned + 'static>(raw: &Raw) -> Result<T> {
    if TypeId::of::<T>() == TypeId::of::<Vec<u8>>() {
        let Raw::Bytes(bytes) = raw else {
            let why = format!("it is {}, and bytes are kept as a bytes row", raw.a_row());
            return Err(CodecFault::RowType {
                ty: "Vec<u8>",
                why: &why,
            }
            .error());
        };
        return bytes_as(bytes.clone());
    }
    T::deserialize(RowDe(raw)).map_err(|e| {
        let ty = short_type::<T>();
        CodecFault::RowType { ty: &ty, why: &e.0 }.error()
    })
}

/// [`decode`] of a row the caller gives up: bytes read as `Vec<u8>` are
/// moved, not copied (a get of a bytes value copied it twice).
pub fn decode_owned<T: DeserializeOwned + 'static>(raw: Raw) -> Result<T> {
    match raw {
        Raw::Bytes(bytes) if TypeId::of::<T>() == TypeId::of::<Vec<u8>>() => bytes_as(bytes),
        raw => decode(&raw),
    }
}

/// `bytes` as a `T` that is `Vec<u8>`.
fn bytes_as<T: 'static>(bytes: Vec<u8>) -> Result<T> {
    let mut out: Option<T> = None;
    if let Some(slot) = (&mut out as &mut dyn Any).downcast_mut::<Option<Vec<u8>>>() {
        *slot = Some(bytes);
    }
    out.ok_or_else(|| Error::corrupt("Vec<u8> did not decode as itself"))
}

/// `T` as its code would spell it: every path cut to its last name
/// (`Vec<String>`, not `alloc::vec::Vec<alloc::string::String>`).
fn short_type<T>() -> String {
    let full = std::any::type_name::<T>();
    let mut out = String::with_capacity(full.len());
    let mut name = String::new();
    let mut chars = full.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            name.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            name.clear(); // a module of the path: only its last name stays
        } else {
            out.push_str(&name);
            name.clear();
            out.push(c);
        }
    }
    out + &name
}

// ---------- the probe serializer ----------

#[derive(Debug)]
enum ProbeError {
    Compound,
    Invalid(String),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Compound => f.write_str("compound"),
            ProbeError::Invalid(m) => f.write_str(m),
        }
    }
}
impl std::error::Error for ProbeError {}
impl ser::Error for ProbeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ProbeError::Invalid(format!("the value cannot be written: {msg}"))
    }
}

struct Probe;

macro_rules! compound {
    ($($name:ident ( $($arg:ty),* ) -> $ret:ty;)*) => {$(
        fn $name(self, $(_: $arg),*) -> Result<$ret, ProbeError> {
            Err(ProbeError::Compound)
        }
    )*};
}

impl ser::Serializer for Probe {
    type Ok = Raw;
    type Error = ProbeError;
    type SerializeSeq = Impossible<Raw, ProbeError>;
    type SerializeTuple = Impossible<Raw, ProbeError>;
    type SerializeTupleStruct = Impossible<Raw, ProbeError>;
    type SerializeTupleVariant = Impossible<Raw, ProbeError>;
    type SerializeMap = Impossible<Raw, ProbeError>;
    type SerializeStruct = Impossible<Raw, ProbeError>;
    type SerializeStructVariant = Impossible<Raw, ProbeError>;

    fn serialize_bool(self, v: bool) -> Result<Raw, ProbeError> {
        Ok(Raw::Int(v as i64))
    }
    fn serialize_i8(self, v: i8) -> Result<Raw, ProbeError> {
        Ok(Raw::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Raw, ProbeError> {
        Ok(Raw::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Raw, ProbeError> {
        Ok(Raw::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Raw, ProbeError> {
        Ok(Raw::Int(v))
    }
    fn serialize_i128(self, v: i128) -> Result<Raw, ProbeError> {
        i64::try_from(v)
            .map(Raw::Int)
            .map_err(|_| ProbeError::Invalid(format!("the integer {v} is outside int64")))
    }
    fn serialize_u8(self, v: u8) -> Result<Raw, ProbeError> {
        Ok(Raw::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Raw, ProbeError> {
        Ok(Raw::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Raw, ProbeError> {
        Ok(Raw::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Raw, ProbeError> {
        Ok(Raw::Bytes(v.to_be_bytes().to_vec()))
    }
    fn serialize_u128(self, v: u128) -> Result<Raw, ProbeError> {
        u64::try_from(v)
            .map(|v| Raw::Bytes(v.to_be_bytes().to_vec()))
            .map_err(|_| ProbeError::Invalid(format!("the integer {v} is outside uint64")))
    }
    fn serialize_f32(self, v: f32) -> Result<Raw, ProbeError> {
        Ok(Raw::Bytes(v.to_bits().to_be_bytes().to_vec()))
    }
    fn serialize_f64(self, v: f64) -> Result<Raw, ProbeError> {
        Ok(Raw::Bytes(v.to_bits().to_be_bytes().to_vec()))
    }
    fn serialize_char(self, v: char) -> Result<Raw, ProbeError> {
        Ok(Raw::Bytes(v.to_string().into_bytes()))
    }
    fn serialize_str(self, v: &str) -> Result<Raw, ProbeError> {
        Ok(Raw::Bytes(v.as_bytes().to_vec()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Raw, ProbeError> {
        Ok(Raw::Bytes(v.to_vec()))
    }
    fn serialize_unit(self) -> Result<Raw, ProbeError> {
        Ok(Raw::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Raw, ProbeError> {
        Ok(Raw::Null)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<Raw, ProbeError> {
        value.serialize(self)
    }
    fn serialize_none(self) -> Result<Raw, ProbeError> {
        Err(ProbeError::Compound)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Raw, ProbeError> {
        Err(ProbeError::Compound)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<Raw, ProbeError> {
        Err(ProbeError::Compound)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Raw, ProbeError> {
        Err(ProbeError::Compound)
    }
    compound! {
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant;
        serialize_map(Option<usize>) -> Self::SerializeMap;
        serialize_struct(&'static str, usize) -> Self::SerializeStruct;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant;
    }
}

// ---------- refusing what JSON cannot write ----------

/// serde_json writes NaN and infinities as `null`, which would read back as
/// something else. Like Go's encoding/json, we refuse them instead.
struct FiniteCheck;

#[derive(Debug)]
struct CheckError(String);
impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CheckError {}
impl ser::Error for CheckError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        CheckError(format!("{NO_JSON}: {msg}"))
    }
}

fn finite(v: f64) -> Result<(), CheckError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(CheckError(format!(
            "{NO_JSON}: it holds the float {v}, which JSON has no way to write"
        )))
    }
}

macro_rules! check_ok {
    ($($name:ident($t:ty);)*) => {$(
        fn $name(self, _: $t) -> Result<(), CheckError> { Ok(()) }
    )*};
}

macro_rules! check_compound {
    ($tr:ident, $method:ident $(, $key:ident)?) => {
        impl ser::$tr for FiniteCheck {
            type Ok = ();
            type Error = CheckError;
            $(fn $key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CheckError> {
                key.serialize(FiniteCheck)
            })?
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
                value.serialize(FiniteCheck)
            }
            fn end(self) -> Result<(), CheckError> { Ok(()) }
        }
    };
}
check_compound!(SerializeSeq, serialize_element);
check_compound!(SerializeTuple, serialize_element);
check_compound!(SerializeTupleStruct, serialize_field);
check_compound!(SerializeTupleVariant, serialize_field);
check_compound!(SerializeMap, serialize_value, serialize_key);

impl ser::SerializeStruct for FiniteCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, v: &T) -> Result<(), CheckError> {
        v.serialize(FiniteCheck)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}
impl ser::SerializeStructVariant for FiniteCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, v: &T) -> Result<(), CheckError> {
        v.serialize(FiniteCheck)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::Serializer for FiniteCheck {
    type Ok = ();
    type Error = CheckError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    check_ok! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_i128(i128); serialize_u8(u8); serialize_u16(u16);
        serialize_u32(u32); serialize_u64(u64); serialize_u128(u128); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_unit_struct(&'static str);
    }
    fn serialize_f32(self, v: f32) -> Result<(), CheckError> {
        finite(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), CheckError> {
        finite(v)
    }
    fn serialize_unit(self) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), CheckError> {
        v.serialize(self)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), CheckError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        v: &T,
    ) -> Result<(), CheckError> {
        v.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self, CheckError> {
        Ok(self)
    }
}

// ---------- rows back into values ----------

#[derive(Debug)]
struct DeError(String);
impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for DeError {}
impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError(msg.to_string())
    }
}

struct RowDe<'a>(&'a Raw);

impl<'a> RowDe<'a> {
    fn wrong(&self, want: &str) -> DeError {
        DeError(format!("expected {want}"))
    }
    fn int(&self) -> Result<i64, DeError> {
        match self.0 {
            Raw::Int(i) => Ok(*i),
            _ => Err(self.wrong("an integer row")),
        }
    }
    fn bytes(&self) -> Result<&'a [u8], DeError> {
        match self.0 {
            Raw::Bytes(b) => Ok(b),
            _ => Err(self.wrong("a byte row")),
        }
    }
    /// Reads a JSON row through `run`, its structs finding their fields by
    /// name or JSON name (`crate::json_fields`).
    fn json<V: Visitor<'a>>(
        &self,
        run: impl FnOnce(crate::json_fields::Parsed) -> Result<V::Value, serde_json::Error>,
    ) -> Result<V::Value, DeError> {
        let b = self.bytes().map_err(|_| self.wrong("a JSON row"))?;
        let parsed = crate::json_fields::Parsed::from_slice(b).map_err(|e| DeError(format!("JSON: {e}")))?;
        run(parsed).map_err(|e| DeError(format!("JSON: {e}")))
    }
}

macro_rules! de_int {
    ($($name:ident),*) => {$(
        fn $name<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
            v.visit_i64(self.int()?)
        }
    )*};
}

macro_rules! de_json {
    ($($name:ident),*) => {$(
        fn $name<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
            self.json::<V>(|de| de::Deserializer::$name(de, v))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for RowDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.0 {
            Raw::Null => v.visit_unit(),
            Raw::Int(i) => v.visit_i64(*i),
            Raw::Bytes(_) => self.json::<V>(|de| de::Deserializer::deserialize_any(de, v)),
        }
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.int()? {
            0 => v.visit_bool(false),
            1 => v.visit_bool(true),
            n => Err(DeError(format!("expected a bool, found the integer {n}"))),
        }
    }
    de_int!(
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32
    );
    fn deserialize_i128<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        v.visit_i64(self.int()?)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.0 {
            Raw::Int(i) if *i >= 0 => v.visit_u64(*i as u64),
            Raw::Bytes(b) if b.len() == 8 => v.visit_u64(u64::from_be_bytes(b[..].try_into().unwrap())),
            _ => Err(self.wrong("eight bytes of an unsigned integer")),
        }
    }
    fn deserialize_u128<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        self.deserialize_u64(v)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.bytes()? {
            b if b.len() == 4 => v.visit_f32(f32::from_bits(u32::from_be_bytes(b.try_into().unwrap()))),
            b if b.len() == 8 => v.visit_f64(f64::from_bits(u64::from_be_bytes(b.try_into().unwrap()))),
            _ => Err(self.wrong("the bits of a float")),
        }
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.bytes()? {
            b if b.len() == 8 => v.visit_f64(f64::from_bits(u64::from_be_bytes(b.try_into().unwrap()))),
            b if b.len() == 4 => v.visit_f64(f32::from_bits(u32::from_be_bytes(b.try_into().unwrap())).into()),
            _ => Err(self.wrong("the bits of a float")),
        }
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        self.deserialize_str(v)
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        let b = self.bytes()?;
        let s = std::str::from_utf8(b).map_err(|_| DeError("the bytes are not UTF-8 text".into()))?;
        v.visit_str(s)
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        self.deserialize_str(v)
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        v.visit_bytes(self.bytes()?)
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        v.visit_byte_buf(self.bytes()?.to_vec())
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.0 {
            Raw::Null => v.visit_unit(),
            _ => Err(self.wrong("a set member (no value)")),
        }
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, DeError> {
        self.deserialize_unit(v)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, DeError> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        self.json::<V>(|de| de::Deserializer::deserialize_struct(de, name, fields, v))
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        self.json::<V>(|de| de::Deserializer::deserialize_enum(de, name, variants, v))
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, DeError> {
        self.json::<V>(|de| de::Deserializer::deserialize_tuple(de, len, v))
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, DeError> {
        self.json::<V>(|de| de::Deserializer::deserialize_tuple_struct(de, name, len, v))
    }
    de_json!(
        deserialize_option,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any
    );
}

impl<'de> IntoDeserializer<'de, DeError> for RowDe<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Session {
        user_id: i64,
        device: String,
    }

    #[test]
    fn kv03_values_kept_by_type() {
        assert_eq!(encode("héllo").unwrap(), Raw::Bytes("héllo".as_bytes().to_vec()));
        assert_eq!(encode("").unwrap(), Raw::Bytes(vec![]));
        assert_eq!(encode(&true).unwrap(), Raw::Int(1));
        assert_eq!(encode(&i64::MIN).unwrap(), Raw::Int(i64::MIN));
        assert_eq!(encode(&u32::MAX).unwrap(), Raw::Int(u32::MAX as i64));
        assert_eq!(encode(&u64::MAX).unwrap(), Raw::Bytes(vec![0xFF; 8]));
        assert_eq!(encode(&()).unwrap(), Raw::Null);
        assert_eq!(
            encode(&-0.0f64).unwrap(),
            Raw::Bytes((-0.0f64).to_bits().to_be_bytes().to_vec())
        );
        let s = Session {
            user_id: 7,
            device: "web".into(),
        };
        assert_eq!(
            encode(&s).unwrap(),
            Raw::Bytes(br#"{"userId":7,"device":"web"}"#.to_vec())
        );
        assert_eq!(decode::<Session>(&encode(&s).unwrap()).unwrap(), s);
        assert_eq!(decode::<u64>(&encode(&u64::MAX).unwrap()).unwrap(), u64::MAX);
        assert_eq!(decode::<Option<i64>>(&encode(&Some(5i64)).unwrap()).unwrap(), Some(5));
    }

    #[test]
    fn kv03_float_bits_round_trip() {
        for bits in [
            0x7FF8_0000_0000_0001u64,
            0x7FF0_0000_0000_0001,
            0x8000_0000_0000_0000,
            f64::INFINITY.to_bits(),
        ] {
            let v = f64::from_bits(bits);
            assert_eq!(decode::<f64>(&encode(&v).unwrap()).unwrap().to_bits(), bits);
        }
    }

    #[test]
    fn kv03_json_cannot_write_nan() {
        let e = encode(&vec![1.0, f64::NAN]).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Invalid);
        assert!(e.message().contains("NaN"), "{e}");
    }

    #[test]
    fn kv03_wrong_type_is_corrupt() {
        let e = decode::<i64>(&encode("7").unwrap()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
        assert_eq!(
            decode::<String>(&Raw::Int(3)).unwrap_err().kind(),
            crate::ErrorKind::Corrupt
        );
        assert_eq!(
            decode::<Session>(&Raw::Bytes(b"{".to_vec())).unwrap_err().kind(),
            crate::ErrorKind::Corrupt
        );
    }

    #[test]
    fn a_row_of_another_type_names_the_type_as_code_spells_it() {
        let e = decode::<Vec<String>>(&Raw::Int(3)).unwrap_err();
        assert!(e.message().starts_with("the row does not read as Vec<String>: "), "{e}");
        let e = decode::<Option<std::collections::BTreeMap<String, u8>>>(&Raw::Int(3)).unwrap_err();
        assert!(
            e.message()
                .starts_with("the row does not read as Option<BTreeMap<String, u8>>: "),
            "{e}"
        );
        assert_eq!(
            decode::<Vec<u8>>(&Raw::Int(3)).unwrap_err().message(),
            "the row does not read as Vec<u8>: it is an integer row, and bytes are kept as a bytes row"
        );
    }
}
