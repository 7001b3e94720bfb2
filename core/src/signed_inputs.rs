//! Numbers a caller's language holds signed (Go's `int` and `int64`, C's
//! `int64_t`) or wider (Python's int, JavaScript's bigint) where the core
//! takes them unsigned or as int64: a store's sizes, a rate's count and
//! burst, a window's limit, a counter's step. The core refuses one out of
//! range, naming it, so that every language that can pass one says the same.

use crate::error::{Error, Result};
use crate::store::Options;

/// A number as a caller's language gave it, for the core's checks of
/// counts and sizes: a whole number that fits i128, or any other (a
/// JavaScript number with a fraction, NaN or an infinity; a Python int or
/// a bigint past 128 bits) kept as its text, so that a refusal shows the
/// number the caller gave and every check refuses it.
#[derive(Clone, Debug, PartialEq)]
pub enum Signed {
    Whole(i128),
    Other(Box<str>),
}

impl Signed {
    /// The whole number, when it is one that fits i128.
    pub fn whole(&self) -> Option<i128> {
        match self {
            Signed::Whole(n) => Some(*n),
            Signed::Other(_) => None,
        }
    }

    /// The number as a `T`, when it is a whole number a `T` holds.
    pub fn fits<T: TryFrom<i128>>(&self) -> Option<T> {
        self.whole().and_then(|n| T::try_from(n).ok())
    }
}

impl From<i128> for Signed {
    fn from(n: i128) -> Self {
        Signed::Whole(n)
    }
}

macro_rules! whole_from {
    ($($t:ty)*) => {$(
        impl From<$t> for Signed {
            fn from(n: $t) -> Self {
                Signed::Whole(n as i128)
            }
        }
    )*};
}
whole_from!(i32 i64 u32 u64 usize);

impl From<f64> for Signed {
    fn from(n: f64) -> Self {
        // Past 2^127 a float64 is still whole, but no longer an i128.
        const END: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
        match n.fract() == 0.0 && n.abs() < END {
            true => Signed::Whole(n as i128),
            false => Signed::Other(n.to_string().into()),
        }
    }
}

impl std::fmt::Display for Signed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signed::Whole(n) => write!(f, "{n}"),
            Signed::Other(text) => f.write_str(text),
        }
    }
}

/// `mmap_size` for a store whose readers map nothing.
pub const MMAP_NONE: i64 = -1;

/// `n`, refused as `Invalid` naming `what` when it is negative.
pub fn not_negative(n: i64, what: &str) -> Result<u64> {
    u64::try_from(n).map_err(|_| Error::invalid(format!("{what} is {n}: it cannot be negative")))
}

/// An integer argument that must fit int64 (a counter's step, a count
/// before [`not_negative`] reads it), from a language whose integers are
/// wider (Python's int, JavaScript's bigint). Another is `Invalid` naming
/// `what`.
pub fn int64_arg(n: impl Into<Signed>, what: &str) -> Result<i64> {
    let n = n.into();
    n.fits::<i64>()
        .ok_or_else(|| Error::invalid(format!("{what} is {n}: it must fit int64, from -2^63 to 2^63-1")))
}

/// A store's size in bytes (`memory`, `mmap_size`), `option` as the
/// caller's language spells it: a whole number from 0 to 2^64-1. Another
/// is `Invalid` naming the option, and the caller opens nothing. What 0
/// means is each option's and each language's own.
pub fn store_size(option: &str, n: impl Into<Signed>) -> Result<u64> {
    let n = n.into();
    n.fits::<u64>().ok_or_else(|| {
        Error::invalid(format!(
            "the store option {option} is {n}: a size in bytes is a whole number from 0 to 2^64-1; nothing was opened"
        ))
    })
}

/// `o` with the sizes a caller gave as signed numbers, 0 keeping each one's
/// default: `readers` connections, a `memory` budget in bytes, and the
/// bytes of kv.db each reader maps (`mmap_size`; [`MMAP_NONE`] for none).
/// Another negative number is `Invalid` naming its option, and the caller
/// opens nothing; the sizes in the words of [`store_size`].
pub fn sized_options(mut o: Options, readers: i64, memory: i64, mmap_size: i64) -> Result<Options> {
    match readers {
        0 => {}
        n if n > 0 => o = o.readers(usize::try_from(n).unwrap_or(usize::MAX)),
        n => {
            return Err(Error::invalid(format!(
                "the store option readers is {n}: reader connections to keep, 0 for the default; nothing was opened"
            )));
        }
    }
    if memory != 0 {
        o = o.memory(usize::try_from(store_size("memory", memory)?).unwrap_or(usize::MAX));
    }
    match mmap_size {
        0 => {}
        MMAP_NONE => o = o.mmap_size(0),
        n => o = o.mmap_size(store_size("mmap_size", n)?),
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negative_number_is_invalid_naming_it_and_the_store_option() {
        assert_eq!(not_negative(7, "a burst").unwrap(), 7);
        let e = not_negative(-1, "a burst").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Invalid);
        assert_eq!(e.message(), "a burst is -1: it cannot be negative");
        for (readers, memory, mmap, named) in [
            (-1, 0, 0, "readers is -1"),
            (0, -5, 0, "memory is -5"),
            (0, 0, -2, "mmap_size is -2"),
        ] {
            let Err(e) = sized_options(Options::new(), readers, memory, mmap) else {
                panic!("{named}: accepted");
            };
            assert_eq!(e.kind(), crate::ErrorKind::Invalid);
            assert!(
                e.message().starts_with(&format!("the store option {named}: ")),
                "{}",
                e.message()
            );
        }
        assert!(sized_options(Options::new(), 2, 1 << 20, MMAP_NONE).is_ok());
    }

    #[test]
    fn an_int64_argument_is_one_text_past_either_end() {
        assert_eq!(int64_arg(i64::MIN, "a counter's step").unwrap(), i64::MIN);
        for n in [i128::from(i64::MAX) + 1, i128::from(i64::MIN) - 1] {
            let e = int64_arg(n, "a counter's step").unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Invalid);
            assert_eq!(
                e.message(),
                format!("a counter's step is {n}: it must fit int64, from -2^63 to 2^63-1")
            );
        }
    }

    #[test]
    fn a_store_size_is_a_whole_number_of_bytes_from_0_to_2_64() {
        assert_eq!(store_size("memory", 0i64).unwrap(), 0);
        assert_eq!(store_size("mmapSize", i128::from(u64::MAX)).unwrap(), u64::MAX);
        for n in [-1, i128::from(u64::MAX) + 1] {
            let e = store_size("mmapSize", n).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Invalid);
            assert_eq!(
                e.message(),
                format!(
                    "the store option mmapSize is {n}: a size in bytes is a whole number from 0 to 2^64-1; nothing was opened"
                )
            );
        }
    }

    #[test]
    fn a_refusal_shows_the_number_given_even_when_it_is_no_i128() {
        let past_i128 = "-340282366920938463463374607431768211456";
        for (n, shown) in [
            (Signed::from(2.5), "2.5"),
            (Signed::from(f64::NAN), "NaN"),
            (Signed::from(2f64.powi(130)), "1361129467683754000000000000000000000000"),
            (Signed::Other(past_i128.into()), past_i128),
        ] {
            let e = int64_arg(n.clone(), "a counter's step").unwrap_err();
            assert_eq!(
                e.message(),
                format!("a counter's step is {shown}: it must fit int64, from -2^63 to 2^63-1")
            );
            let e = store_size("memory", n.clone()).unwrap_err();
            assert!(
                e.message()
                    .starts_with(&format!("the store option memory is {shown}: ")),
                "{e}"
            );
            let e = crate::page_size(n).unwrap_err();
            assert_eq!(e.message(), format!("a page (limit) holds 1 to 1000 keys, not {shown}"));
        }
        assert_eq!(store_size("memory", 4096.0).unwrap(), 4096);
        assert_eq!(
            crate::page_size(-0.0).unwrap_err().message(),
            "a page (limit) holds 1 to 1000 keys, not 0"
        );
    }
}
