//! Numbers a caller's language holds signed (Go's `int` and `int64`, C's
//! `int64_t`) where the core takes them unsigned: a store's sizes, a
//! rate's count and burst, a window's limit. The core refuses a negative
//! one, naming it, so that every language that can pass one says the same.

use crate::error::{Error, Result};
use crate::store::Options;

/// `mmap_size` for a store whose readers map nothing.
pub const MMAP_NONE: i64 = -1;

/// `n`, refused as `Invalid` naming `what` when it is negative.
pub fn not_negative(n: i64, what: &str) -> Result<u64> {
    u64::try_from(n).map_err(|_| Error::invalid(format!("{what} is {n}: it cannot be negative")))
}

/// `o` with the sizes a caller gave as signed numbers, 0 keeping each one's
/// default: `readers` connections, a `memory` budget in bytes, and the
/// bytes of kv.db each reader maps (`mmap_size`; [`MMAP_NONE`] for none).
/// Another negative number is `Invalid` naming its option, and the caller
/// opens nothing.
pub fn sized_options(mut o: Options, readers: i64, memory: i64, mmap_size: i64) -> Result<Options> {
    let refused = |option: &str, n: i64, meaning: &str| {
        Error::invalid(format!(
            "the store option {option} is {n}: {meaning}; nothing was opened"
        ))
    };
    match readers {
        0 => {}
        n if n > 0 => o = o.readers(usize::try_from(n).unwrap_or(usize::MAX)),
        n => return Err(refused("readers", n, "reader connections to keep, 0 for the default")),
    }
    match memory {
        0 => {}
        n if n > 0 => o = o.memory(usize::try_from(n).unwrap_or(usize::MAX)),
        n => return Err(refused("memory", n, "a budget in bytes, at least 1 MiB, or 0 for none")),
    }
    match mmap_size {
        0 => {}
        MMAP_NONE => o = o.mmap_size(0),
        n if n > 0 => o = o.mmap_size(n as u64),
        n => {
            return Err(refused(
                "mmap_size",
                n,
                "bytes of kv.db each reader maps, 0 for the default or -1 for none",
            ));
        }
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
}
