//! Numbers a caller's language holds signed (Go's `int` and `int64`, C's
//! `int64_t`) or wider (Python's int, JavaScript's bigint) where the core
//! takes them unsigned or as int64: a store's sizes, a rate's count and
//! burst, a window's limit, a counter's step. The core refuses one out of
//! range, naming it, so that every language that can pass one says the same.

use crate::error::{Error, Result};
use crate::store::Options;

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
pub fn int64_arg(n: i128, what: &str) -> Result<i64> {
    i64::try_from(n).map_err(|_| Error::invalid(format!("{what} is {n}: it must fit int64, from -2^63 to 2^63-1")))
}

/// A store's size in bytes (`memory`, `mmap_size`), `option` as the
/// caller's language spells it: a whole number from 0 to 2^64-1. Another
/// is `Invalid` naming the option, and the caller opens nothing. What 0
/// means is each option's and each language's own.
pub fn store_size(option: &str, n: i128) -> Result<u64> {
    u64::try_from(n).map_err(|_| {
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
        o = o.memory(usize::try_from(store_size("memory", memory.into())?).unwrap_or(usize::MAX));
    }
    match mmap_size {
        0 => {}
        MMAP_NONE => o = o.mmap_size(0),
        n => o = o.mmap_size(store_size("mmap_size", n.into())?),
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
        assert_eq!(int64_arg(i64::MIN.into(), "a counter's step").unwrap(), i64::MIN);
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
        assert_eq!(store_size("memory", 0).unwrap(), 0);
        assert_eq!(store_size("mmapSize", u64::MAX.into()).unwrap(), u64::MAX);
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
}
