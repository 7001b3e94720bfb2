//! What a bucket's own codec, or a JSON bucket, did wrong, and a value or
//! row not of a typed handle's type: one error each, with one text in every
//! language. The bindings name a fault by a word, so that a codec written in
//! Python, TypeScript or Go fails in the core's words.

use crate::error::Error;

/// The start of every refusal of a value JSON cannot write, in every
/// language (the JSON faults below, and the checks of `crate::codec`).
pub(crate) const NO_JSON: &str = "the value cannot be written as JSON";

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
