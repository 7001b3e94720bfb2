//! Values whose type is known only at run time, kept by their kind (KV-3).
//!
//! A JavaScript bucket opened without a type has no declared type to go by:
//! `store.bucket<number>(...)` is a plain bucket once TypeScript is erased.
//! Its values still say what they are, and each kind keeps the row the
//! typed buckets of every language keep for it: a safe integer as an
//! integer, any other number as its float bits, text and bytes as bytes, a
//! bool as 1 or 0, nothing as nothing, anything else as JSON. A read goes
//! by the row's kind alone: nothing, an integer, or bytes read as JSON
//! (which is how a Rust `serde_json::Value` reads a row too). Bytes that
//! are not JSON hold text, bytes or float bits, which only a reader of that
//! type can tell apart.

use crate::error::{Error, Result};
use crate::raw::Raw;
use crate::signed_inputs::Signed;

/// The largest integer a float64 holds exactly, 2^53 - 1 (JavaScript's
/// `Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// A number a binding got as a float64 (JavaScript's only number), read as
/// the whole number it must be: finite, without a fraction, and within
/// `range`, which lies inside the safe integers (where a float64 is exact).
/// NaN, an infinity, a fraction or a number outside `range` is `Invalid`,
/// with one message naming `what`.
pub fn whole_number(n: f64, what: &str, range: std::ops::RangeInclusive<i64>) -> Result<i64> {
    // `as` saturates and takes NaN to 0, so the round trip holds only for a
    // whole number, checked without a call to trunc (an allow's hot path).
    let i = n as i64;
    if i as f64 == n && (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) && range.contains(&i) {
        return Ok(i);
    }
    let bound = |b: i64| match b {
        MAX_SAFE_INTEGER => "2^53-1".to_owned(),
        b if b == -MAX_SAFE_INTEGER => "-(2^53-1)".to_owned(),
        b => b.to_string(),
    };
    Err(Error::invalid(format!(
        "{what} must be a whole number from {} to {}, not {n}",
        bound(*range.start()),
        bound(*range.end())
    )))
}

/// A row as a reader without a declared type reads it: by its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByKind<'a> {
    /// A row of nothing (a set member, a `None`).
    Nothing,
    /// An integer row.
    Integer(i64),
    /// A byte row that holds JSON text.
    Json(&'a [u8]),
}

impl Raw {
    /// A float64 by its value: an integer row when it is a safe integer
    /// (`|n| <= 2^53 - 1`, and not `-0`), the eight bytes of its bits
    /// otherwise (`-0`, fractions, NaN, infinities, and integers past 2^53,
    /// which a float64 no longer holds exactly).
    pub fn number(n: f64) -> Raw {
        let integral = n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER as f64;
        if integral && !(n == 0.0 && n.is_sign_negative()) {
            Raw::int(n as i64)
        } else {
            Raw::float(n)
        }
    }

    /// An integer of any width (a JavaScript `bigint`): an integer row in
    /// int64's range, eight bytes in uint64's beyond it (as a `u64` is kept),
    /// `Invalid` past both, showing the number given.
    pub fn integer(n: impl Into<Signed>) -> Result<Raw> {
        let n = n.into();
        match (n.fits::<i64>(), n.fits::<u64>()) {
            (Some(i), _) => Ok(Raw::int(i)),
            (None, Some(u)) => Ok(Raw::uint64(u)),
            _ => Err(Error::invalid(format!("the integer {n} is outside int64 and uint64"))),
        }
    }

    /// An integer kept as an integer row (a Python `int`, a raw bucket's
    /// `bigint`): `Invalid` past int64's range, showing the number given.
    pub fn int64_of(n: impl Into<Signed>) -> Result<Raw> {
        let n = n.into();
        n.fits::<i64>()
            .map(Raw::int)
            .ok_or_else(|| Error::invalid(format!("the integer {n} is outside int64, the integers a row keeps")))
    }

    /// The row as an integer a float64 holds exactly: an integer row within
    /// `±(2^53 - 1)`; a larger one is `Corrupt` rather than rounded.
    pub fn as_safe_integer(&self) -> Result<i64> {
        let i = self.as_int()?;
        if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) {
            return Err(Error::corrupt(format!(
                "the integer {i} is past 2^53 - 1, where a float64 no longer holds every integer"
            )));
        }
        Ok(i)
    }

    /// The row by its kind alone: nothing, an integer, or JSON text. A byte
    /// row that is not JSON is `Corrupt`: it holds text, bytes or a float,
    /// and only a reader of that type reads it.
    pub fn by_kind(&self) -> Result<ByKind<'_>> {
        match self {
            Raw::Null => Ok(ByKind::Nothing),
            Raw::Int(i) => Ok(ByKind::Integer(*i)),
            Raw::Bytes(b) => match serde_json::from_slice::<serde::de::IgnoredAny>(b) {
                Ok(_) => Ok(ByKind::Json(b)),
                Err(e) => Err(Error::corrupt(format!(
                    "a bytes row that is not JSON ({e}) holds text, bytes or a float, which a read by kind cannot tell apart"
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv18_a_whole_number_is_finite_exact_and_in_range() {
        assert_eq!(whole_number(42.0, "n", 1..=100), Ok(42));
        assert_eq!(whole_number(-0.0, "n", 0..=1), Ok(0));
        for bad in [1.5, f64::NAN, f64::INFINITY, 0.0, 101.0, 2f64.powi(53), -2f64.powi(63)] {
            let e = whole_number(bad, "a count", 1..=100).unwrap_err();
            assert_eq!(
                e.message(),
                format!("a count must be a whole number from 1 to 100, not {bad}")
            );
        }
        let e = whole_number(2f64.powi(53), "a step", -MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).unwrap_err();
        assert_eq!(
            e.message(),
            "a step must be a whole number from -(2^53-1) to 2^53-1, not 9007199254740992"
        );
    }

    #[test]
    fn kv03_a_number_is_an_integer_only_when_a_float64_holds_it_exactly() {
        assert_eq!(Raw::number(42.0), Raw::Int(42));
        assert_eq!(Raw::number(-7.0), Raw::Int(-7));
        assert_eq!(Raw::number(0.0), Raw::Int(0));
        assert_eq!(Raw::number(MAX_SAFE_INTEGER as f64), Raw::Int(MAX_SAFE_INTEGER));
        assert_eq!(Raw::number(-(MAX_SAFE_INTEGER as f64)), Raw::Int(-MAX_SAFE_INTEGER));
        for f in [-0.0, 1.5, 2f64.powi(53), f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(Raw::number(f), Raw::float(f), "{f}");
        }
    }

    #[test]
    fn kv03_an_integer_of_any_width_keeps_the_row_of_its_range() {
        assert_eq!(Raw::integer(-1).unwrap(), Raw::Int(-1));
        assert_eq!(Raw::integer(i64::MIN).unwrap(), Raw::Int(i64::MIN));
        assert_eq!(Raw::integer(u64::MAX).unwrap(), Raw::uint64(u64::MAX));
        assert_eq!(
            Raw::integer(i128::from(u64::MAX) + 1).unwrap_err().message(),
            "the integer 18446744073709551616 is outside int64 and uint64"
        );
        assert!(Raw::integer(i128::from(i64::MIN) - 1).is_err());
        let past_128_bits = Signed::Other("1".repeat(40).into());
        assert_eq!(
            Raw::integer(past_128_bits.clone()).unwrap_err().message(),
            format!("the integer {} is outside int64 and uint64", "1".repeat(40))
        );
        assert_eq!(Raw::int64_of(i64::MIN).unwrap(), Raw::Int(i64::MIN));
        assert_eq!(
            Raw::int64_of(u64::MAX).unwrap_err().message(),
            "the integer 18446744073709551615 is outside int64, the integers a row keeps"
        );
        assert!(Raw::int64_of(past_128_bits).is_err());
    }

    #[test]
    fn kv03_a_row_read_by_kind() {
        assert_eq!(Raw::Null.by_kind().unwrap(), ByKind::Nothing);
        assert_eq!(Raw::Int(7).by_kind().unwrap(), ByKind::Integer(7));
        let json = Raw::json(br#"{"userId":7}"#.to_vec());
        assert_eq!(json.by_kind().unwrap(), ByKind::Json(br#"{"userId":7}"#));
        for not_json in [Raw::text("hello"), Raw::float(1.5), Raw::Bytes(vec![])] {
            let e = not_json.by_kind().unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{not_json:?}");
            assert!(e.message().contains("not JSON"), "{e}");
        }
    }

    #[test]
    fn kv03_an_integer_row_read_as_a_float64_is_exact_or_corrupt() {
        assert_eq!(Raw::Int(MAX_SAFE_INTEGER).as_safe_integer().unwrap(), MAX_SAFE_INTEGER);
        let e = Raw::Int(MAX_SAFE_INTEGER + 1).as_safe_integer().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
        assert!(Raw::Int(i64::MIN).as_safe_integer().is_err());
        assert!(Raw::text("7").as_safe_integer().is_err());
    }
}
