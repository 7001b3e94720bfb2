//! What a limit store is opened with, as a language gives it: the bound on
//! entries, in one text for every language (Python's `max_entries`,
//! JavaScript's `maxEntries`, Rust's builder), since each holds the number
//! signed or wider than the core's.

use crate::Signed;

/// The bound on entries, when it is one: 1 or more, and no more than the
/// count of entries, an int64, can hold.
pub(super) fn max_entries(n: &Signed) -> Option<usize> {
    n.fits::<usize>().filter(|&n| n >= 1 && n as u64 <= i64::MAX as u64)
}

/// The refusal of a bound that is not one.
pub(super) fn max_entries_refused(n: &Signed) -> String {
    format!("max_entries (maxEntries) is {n}: a limit store holds a whole number of entries from 1 to 2^63-1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_is_from_1_to_2_63() {
        assert_eq!(max_entries(&1i64.into()), Some(1));
        assert_eq!(max_entries(&i64::MAX.into()), usize::try_from(i64::MAX).ok());
        for n in [0, -1, i128::from(i64::MAX) + 1, i128::MAX, i128::MIN] {
            assert_eq!(max_entries(&n.into()), None, "{n}");
        }
        assert_eq!(max_entries(&1.5.into()), None);
        assert!(max_entries_refused(&1.5.into()).starts_with("max_entries (maxEntries) is 1.5: "));
        assert_eq!(
            max_entries_refused(&0i64.into()),
            "max_entries (maxEntries) is 0: a limit store holds a whole number of entries from 1 to 2^63-1"
        );
    }
}
