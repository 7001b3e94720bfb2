//! The names of a struct's fields in the JSON of a value (KV-3).
//!
//! JSON is written for every language to read, and the handbook's
//! TypeScript and Go declarations name a session's fields `userId` and
//! `device` (Go by its `json:"userId"` tag), while its Python dataclass and
//! Rust struct name them `user_id` and `device`. So a field named in
//! snake_case is written in lowerCamelCase (`user_id` as `userId`), and a
//! struct reads a key by its field's name or by that name in camelCase. A
//! name that is not plain snake_case (`userId`, `ID`, `_x`) is kept as it
//! is, so a field serde renames to `userID` keeps that name (one renamed
//! to a snake_case name is written in camelCase too). The rename is of a
//! struct's own fields, and of a struct variant's: the keys of a map are
//! data, and are kept.
//!
//! A struct serde reads through its buffered content (inside an enum tagged
//! `#[serde(tag = ...)]` or `#[serde(untagged)]`) finds its fields by their
//! own names only, so such a struct names them in camelCase itself
//! (`#[serde(rename_all = "camelCase")]`), which is kept as it is.

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::ser::{self, Serialize, SerializeMap};
use serde_json::Value;
use std::borrow::Cow;

/// The JSON name of a struct's field: `user_id` as `userId`; a name that is
/// not lowercase snake_case with inner underscores is kept as it is.
pub fn json_field_name(name: &str) -> Cow<'_, str> {
    let plain = name.contains('_')
        && !name.starts_with('_')
        && !name.ends_with('_')
        && !name.contains("__")
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !plain {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The JSON text of `value`, its structs' fields named by [`json_field_name`].
pub(crate) fn to_json(value: &(impl Serialize + ?Sized)) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Fields(value))
}

/// `T` from JSON text whose keys name its structs' fields either way.
#[cfg(test)]
fn from_json<T: de::DeserializeOwned>(text: &[u8]) -> serde_json::Result<T> {
    T::deserialize(Parsed::from_slice(text)?)
}

/// Parsed JSON text, which deserializes as a type whose structs find each
/// field by its name or by its JSON name.
pub(crate) struct Parsed(Value);

impl Parsed {
    /// Parses JSON text (all of it).
    pub(crate) fn from_slice(text: &[u8]) -> serde_json::Result<Parsed> {
        serde_json::from_slice(text).map(Parsed)
    }
}

impl<'de> de::Deserializer<'de> for Parsed {
    type Error = serde_json::Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> serde_json::Result<V::Value> {
        Named(self.0).deserialize_any(v)
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> serde_json::Result<V::Value> {
        Named(self.0).deserialize_option(v)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, v: V) -> serde_json::Result<V::Value> {
        Named(self.0).deserialize_newtype_struct(name, v)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> serde_json::Result<V::Value> {
        Named(self.0).deserialize_struct(name, fields, v)
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> serde_json::Result<V::Value> {
        Named(self.0).deserialize_enum(name, variants, v)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

// ---------- writing: a serializer that renames struct fields ----------

/// A value whose structs serialize with their fields' JSON names.
struct Fields<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for Fields<'_, T> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Renaming(s))
    }
}

/// A serializer that passes everything to `S`, but writes a struct as a map
/// keyed by its fields' JSON names.
struct Renaming<S>(S);

/// A compound being written, its elements wrapped in turn.
struct Each<C>(C);

/// A struct variant being written: its fields gathered, then written as
/// `{ variant: { fields } }`, as serde_json writes one.
struct FieldsOfVariant<M> {
    map: M,
    variant: &'static str,
    fields: serde_json::Map<String, Value>,
}

impl<S: ser::Serializer> ser::Serializer for Renaming<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Each<S::SerializeSeq>;
    type SerializeTuple = Each<S::SerializeTuple>;
    type SerializeTupleStruct = Each<S::SerializeTupleStruct>;
    type SerializeTupleVariant = Each<S::SerializeTupleVariant>;
    type SerializeMap = Each<S::SerializeMap>;
    type SerializeStruct = Each<S::SerializeMap>;
    type SerializeStructVariant = FieldsOfVariant<S::SerializeMap>;

    fn serialize_bool(self, v: bool) -> Result<S::Ok, S::Error> {
        self.0.serialize_bool(v)
    }
    fn serialize_i8(self, v: i8) -> Result<S::Ok, S::Error> {
        self.0.serialize_i8(v)
    }
    fn serialize_i16(self, v: i16) -> Result<S::Ok, S::Error> {
        self.0.serialize_i16(v)
    }
    fn serialize_i32(self, v: i32) -> Result<S::Ok, S::Error> {
        self.0.serialize_i32(v)
    }
    fn serialize_i64(self, v: i64) -> Result<S::Ok, S::Error> {
        self.0.serialize_i64(v)
    }
    fn serialize_i128(self, v: i128) -> Result<S::Ok, S::Error> {
        self.0.serialize_i128(v)
    }
    fn serialize_u8(self, v: u8) -> Result<S::Ok, S::Error> {
        self.0.serialize_u8(v)
    }
    fn serialize_u16(self, v: u16) -> Result<S::Ok, S::Error> {
        self.0.serialize_u16(v)
    }
    fn serialize_u32(self, v: u32) -> Result<S::Ok, S::Error> {
        self.0.serialize_u32(v)
    }
    fn serialize_u64(self, v: u64) -> Result<S::Ok, S::Error> {
        self.0.serialize_u64(v)
    }
    fn serialize_u128(self, v: u128) -> Result<S::Ok, S::Error> {
        self.0.serialize_u128(v)
    }
    fn serialize_f32(self, v: f32) -> Result<S::Ok, S::Error> {
        self.0.serialize_f32(v)
    }
    fn serialize_f64(self, v: f64) -> Result<S::Ok, S::Error> {
        self.0.serialize_f64(v)
    }
    fn serialize_char(self, v: char) -> Result<S::Ok, S::Error> {
        self.0.serialize_char(v)
    }
    fn serialize_str(self, v: &str) -> Result<S::Ok, S::Error> {
        self.0.serialize_str(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<S::Ok, S::Error> {
        self.0.serialize_bytes(v)
    }
    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_none()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&Fields(v))
    }
    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit()
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_struct(name)
    }
    fn serialize_unit_variant(self, name: &'static str, i: u32, variant: &'static str) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_variant(name, i, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, name: &'static str, v: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(name, &Fields(v))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        i: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_variant(name, i, variant, &Fields(v))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(Each)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(Each)
    }
    fn serialize_tuple_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(name, len).map(Each)
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0.serialize_tuple_variant(name, i, variant, len).map(Each)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(Each)
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Self::SerializeStruct, S::Error> {
        self.0.serialize_map(Some(len)).map(Each)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        Ok(FieldsOfVariant {
            map: self.0.serialize_map(Some(1))?,
            variant,
            fields: serde_json::Map::new(),
        })
    }
}

macro_rules! each {
    ($trait:ident, $method:ident) => {
        impl<C: ser::$trait> ser::$trait for Each<C> {
            type Ok = C::Ok;
            type Error = C::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
                self.0.$method(&Fields(v))
            }
            fn end(self) -> Result<C::Ok, C::Error> {
                self.0.end()
            }
        }
    };
}
each!(SerializeSeq, serialize_element);
each!(SerializeTuple, serialize_element);
each!(SerializeTupleStruct, serialize_field);
each!(SerializeTupleVariant, serialize_field);

impl<M: SerializeMap> SerializeMap for Each<M> {
    type Ok = M::Ok;
    type Error = M::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), M::Error> {
        self.0.serialize_key(&Fields(k))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), M::Error> {
        self.0.serialize_value(&Fields(v))
    }
    fn end(self) -> Result<M::Ok, M::Error> {
        self.0.end()
    }
}

impl<M: SerializeMap> ser::SerializeStruct for Each<M> {
    type Ok = M::Ok;
    type Error = M::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), M::Error> {
        self.0.serialize_entry(json_field_name(key).as_ref(), &Fields(v))
    }
    fn end(self) -> Result<M::Ok, M::Error> {
        self.0.end()
    }
}

impl<M: SerializeMap> ser::SerializeStructVariant for FieldsOfVariant<M> {
    type Ok = M::Ok;
    type Error = M::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), M::Error> {
        let v = serde_json::to_value(Fields(v)).map_err(ser::Error::custom)?;
        self.fields.insert(json_field_name(key).into_owned(), v);
        Ok(())
    }
    fn end(mut self) -> Result<M::Ok, M::Error> {
        self.map.serialize_entry(self.variant, &self.fields)?;
        self.map.end()
    }
}

// ---------- reading: a deserializer over parsed JSON that finds fields either way ----------

/// Parsed JSON, read into a type whose structs find each field by its name
/// or its JSON name.
struct Named(Value);

impl<'de> IntoDeserializer<'de, serde_json::Error> for Named {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

/// The keys of a JSON object and their values, for a map or a struct.
struct Entries {
    iter: serde_json::map::IntoIter,
    value: Option<Value>,
    /// A struct's fields, to find a key given by its JSON name.
    fields: &'static [&'static str],
}

impl Entries {
    fn new(map: serde_json::Map<String, Value>, fields: &'static [&'static str]) -> Entries {
        Entries {
            iter: map.into_iter(),
            value: None,
            fields,
        }
    }
}

impl<'de> MapAccess<'de> for Entries {
    type Error = serde_json::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        let field = if self.fields.contains(&key.as_str()) {
            None
        } else {
            self.fields.iter().find(|f| json_field_name(f) == key.as_str()).copied()
        };
        match field {
            Some(field) => seed.deserialize(de::value::StrDeserializer::new(field)).map(Some),
            None => seed.deserialize(de::value::StringDeserializer::new(key)).map(Some),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a value before its key"))?;
        seed.deserialize(Named(value))
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An enum's variant as JSON keeps it, `{ "Variant": content }`, its
/// content read as `Named` (so a struct variant finds its fields either way).
struct Variant {
    variant: String,
    value: Value,
}

impl<'de> de::EnumAccess<'de> for Variant {
    type Error = serde_json::Error;
    type Variant = Named;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> serde_json::Result<(S::Value, Named)> {
        let variant = seed.deserialize(de::value::StringDeserializer::new(self.variant))?;
        Ok((variant, Named(self.value)))
    }
}

impl<'de> de::VariantAccess<'de> for Named {
    type Error = serde_json::Error;
    fn unit_variant(self) -> serde_json::Result<()> {
        de::Deserialize::deserialize(self)
    }
    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> serde_json::Result<S::Value> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, v: V) -> serde_json::Result<V::Value> {
        de::Deserializer::deserialize_any(self, v)
    }
    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], v: V) -> serde_json::Result<V::Value> {
        de::Deserializer::deserialize_struct(self, "", fields, v)
    }
}

impl<'de> de::Deserializer<'de> for Named {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> serde_json::Result<V::Value> {
        match self.0 {
            Value::Null => v.visit_unit(),
            Value::Bool(b) => v.visit_bool(b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    v.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    v.visit_i64(i)
                } else {
                    v.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => v.visit_string(s),
            Value::Array(items) => {
                let mut seq = de::value::SeqDeserializer::new(items.into_iter().map(Named));
                let out = v.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(out)
            }
            Value::Object(map) => v.visit_map(Entries::new(map, &[])),
        }
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> serde_json::Result<V::Value> {
        match self.0 {
            Value::Null => v.visit_none(),
            _ => v.visit_some(self),
        }
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> serde_json::Result<V::Value> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> serde_json::Result<V::Value> {
        match self.0 {
            Value::Object(map) => v.visit_map(Entries::new(map, fields)),
            other => Named(other).deserialize_any(v),
        }
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> serde_json::Result<V::Value> {
        match self.0 {
            Value::Object(map) if map.len() == 1 => {
                let (variant, value) = map.into_iter().next().expect("one entry");
                v.visit_enum(Variant { variant, value })
            }
            other => de::Deserializer::deserialize_enum(other, name, variants, v),
        }
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;

    #[test]
    fn kv03_a_snake_case_field_is_named_in_camel_case() {
        assert_eq!(json_field_name("user_id"), "userId");
        assert_eq!(json_field_name("last_seen_at2"), "lastSeenAt2");
        for kept in ["device", "userId", "ID", "_hidden", "trailing_", "a__b", "User_id"] {
            assert_eq!(json_field_name(kept), kept);
        }
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Session {
        user_id: i64,
        device: String,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum Event {
        SignedIn { user_id: i64 },
        Left(Vec<Session>),
        Quiet,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Outer {
        last_session: Option<Session>,
        all_sessions: Vec<Session>,
        by_name: BTreeMap<String, i64>,
        events: Vec<Event>,
        #[serde(rename = "kept_as_given")]
        renamed: u8,
    }

    #[test]
    fn kv03_struct_fields_round_trip_under_their_json_names() {
        let s = Session {
            user_id: 7,
            device: "web".into(),
        };
        assert_eq!(to_json(&s).unwrap(), br#"{"userId":7,"device":"web"}"#);
        assert_eq!(from_json::<Session>(br#"{"userId":7,"device":"web"}"#).unwrap(), s);
        assert_eq!(from_json::<Session>(br#"{"user_id":7,"device":"web"}"#).unwrap(), s);

        let outer = Outer {
            last_session: Some(Session {
                user_id: 1,
                device: "a".into(),
            }),
            all_sessions: vec![Session {
                user_id: 2,
                device: "b".into(),
            }],
            by_name: BTreeMap::from([("snake_key".to_string(), 3)]),
            events: vec![Event::SignedIn { user_id: 4 }, Event::Left(vec![]), Event::Quiet],
            renamed: 5,
        };
        let text = String::from_utf8(to_json(&outer).unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"lastSession":{"userId":1,"device":"a"},"allSessions":[{"userId":2,"device":"b"}],"byName":{"snake_key":3},"events":[{"SignedIn":{"userId":4}},{"Left":[]},"Quiet"],"keptAsGiven":5}"#
        );
        assert_eq!(from_json::<Outer>(text.as_bytes()).unwrap(), outer);
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct CamelSession {
        user_id: i64,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(tag = "kind")]
    enum Tagged {
        Session(CamelSession),
    }

    #[test]
    fn kv03_a_struct_in_a_tagged_enum_round_trips_when_it_names_its_fields_in_camel_case() {
        let t = Tagged::Session(CamelSession { user_id: 3 });
        assert_eq!(to_json(&t).unwrap(), br#"{"kind":"Session","userId":3}"#);
        assert_eq!(from_json::<Tagged>(&to_json(&t).unwrap()).unwrap(), t);
    }

    #[test]
    fn kv03_a_struct_missing_a_field_under_either_name_does_not_read() {
        let e = from_json::<Session>(br#"{"userID":7,"device":"web"}"#).unwrap_err();
        assert!(e.to_string().contains("user_id"), "{e}");
    }
}
