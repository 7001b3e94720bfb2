//! What every keyed handle has (KV-1): a name, which its errors carry, and
//! branches of owners under it. A binding walks a branch path through this
//! one trait rather than a copy of the walk per kind of handle.

use crate::{Counters, Quota, RateLimit, RawBucket, RawOnce};

/// A handle with branches: a raw bucket, counters, a rate limit, a quota
/// or a raw once.
pub trait Branches: Clone {
    /// The handle's name.
    fn name(&self) -> &str;

    /// The branch of `owner` under this one.
    fn under(&self, owner: &[u8]) -> Self;
}

macro_rules! branches {
    ($($handle:ident),*) => {$(
        impl Branches for $handle {
            fn name(&self) -> &str {
                $handle::name(self)
            }

            fn under(&self, owner: &[u8]) -> Self {
                $handle::under(self, owner)
            }
        }
    )*};
}

branches!(RawBucket, Counters, RateLimit, Quota, RawOnce);
