//! What every keyed handle has (KV-1): a name, which its errors carry, and
//! branches of owners under it. A binding walks a branch path, and names a
//! key in an error, through this one trait rather than a copy of each per
//! kind of handle.

use crate::{Counters, Error, Quota, RateLimit, RawBucket, RawOnce, show_path};

/// A handle with branches: a raw bucket, counters, a rate limit, a quota
/// or a raw once.
pub trait Branches: Clone {
    /// The handle's name.
    fn name(&self) -> &str;

    /// The branch of `owner` under this one.
    fn under(&self, owner: &[u8]) -> Self;

    /// `e`, naming this handle and `key` of its branch unless it names a
    /// key already: how a binding names an error it found in a call's
    /// arguments or in a value it read.
    fn named(&self, key: &[u8], e: Error) -> Error;
}

macro_rules! branches {
    ($($handle:ident => $named:expr),*) => {$(
        impl Branches for $handle {
            fn name(&self) -> &str {
                $handle::name(self)
            }

            fn under(&self, owner: &[u8]) -> Self {
                $handle::under(self, owner)
            }

            fn named(&self, key: &[u8], e: Error) -> Error {
                $named(self, key, e)
            }
        }
    )*};
}

branches!(
    RawBucket => RawBucket::named,
    RateLimit => RateLimit::named,
    Quota => Quota::named,
    Counters => |c: &Counters, key, e| name_key(c.name(), c.owners(), key, e),
    RawOnce => |o: &RawOnce, key, e| name_key(o.name(), o.owners(), key, e)
);

fn name_key(name: &str, owners: &[Vec<u8>], key: &[u8], e: Error) -> Error {
    if e.path().is_some() {
        return e;
    }
    e.at(name, show_path(owners, Some(key)))
}
