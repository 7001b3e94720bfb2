//! What a binding's bucket is opened with besides its expiry: a type of
//! values, or a codec of the caller's own whose bytes are the values. The
//! codec decides what a value is, so a type given beside it would be
//! ignored in silence; every language refuses the pair with one text.

use crate::error::{Error, Result};

/// Refuses a bucket given both a type of values and a codec of its own.
pub fn type_or_codec(has_type: bool, has_codec: bool) -> Result<()> {
    if has_type && has_codec {
        return Err(Error::invalid("a bucket takes a type or a codec, not both"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_and_a_codec_together_are_invalid() {
        for one in [(false, false), (true, false), (false, true)] {
            assert!(type_or_codec(one.0, one.1).is_ok(), "{one:?}");
        }
        let e = type_or_codec(true, true).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Invalid);
        assert_eq!(e.message(), "a bucket takes a type or a codec, not both");
    }
}
