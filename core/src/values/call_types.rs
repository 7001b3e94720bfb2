//! The types a bucket's calls take and give: versions, entries, expiries,
//! the options of a write and of a listing, pages and what `create` found.
//! Kept apart from the code that fills them so that the public shapes of
//! the API read in one place.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use crate::clock::{duration_millis, to_millis};
use crate::error::{Error, Result};
use crate::key::Key;

/// The revision of the file that wrote a value. Versions never repeat, and
/// compare only for equality; as text they are the decimal revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Version(pub(crate) i64);

impl Version {
    /// The revision as a number, for bindings that carry it across.
    pub fn get(self) -> i64 {
        self.0
    }

    /// A version from the number [`Version::get`] gave.
    pub fn from_raw(v: i64) -> Version {
        Version(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Version {
    type Err = Error;
    /// The text [`Version`]'s `Display` wrote: a revision of the file, which
    /// counts from 1, so no other number is one (KV-10).
    fn from_str(s: &str) -> Result<Version> {
        match s.parse::<i64>() {
            Ok(n) if n >= 1 => Ok(Version(n)),
            _ => Err(Error::invalid(format!("{s:?} is not a version"))),
        }
    }
}

/// A key with its value, version and expiry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry<T> {
    /// The key, without its owners.
    pub key: Key,
    /// The value.
    pub value: T,
    /// The revision that wrote the value.
    pub version: Version,
    /// When the key expires, if it does.
    pub expires_at: Option<SystemTime>,
}

/// When a key expires: a span from now or a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// This long from now.
    In(Duration),
    /// At this time; a time in the past makes the key absent at once.
    At(SystemTime),
}

impl From<Duration> for Expiry {
    fn from(d: Duration) -> Expiry {
        Expiry::In(d)
    }
}

impl From<SystemTime> for Expiry {
    fn from(t: SystemTime) -> Expiry {
        Expiry::At(t)
    }
}

impl Expiry {
    pub(super) fn at(self, now: i64) -> i64 {
        match self {
            Expiry::In(d) => now.saturating_add(duration_millis(d)),
            Expiry::At(t) => to_millis(t),
        }
    }
}

/// A write's own options: its expiry and the version it expects.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// The key's new expiry, replacing the bucket's `ttl` and a live key's own.
    pub expiry: Option<Expiry>,
    /// Apply only to a live key at this version; otherwise `Conflict`.
    pub if_version: Option<Version>,
}

const EXPIRE_NEEDS: &str = "expire needs a ttl or an expiry time";

/// The call a write's options are given to: each takes its own shape of
/// them, and a binding that spells them as separate arguments (a ttl, an
/// expiry time, a version) checks the shape with [`WriteOptions::of_call`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteCall {
    /// `set`: an expiry and a version, each optional.
    Set,
    /// `create`: an expiry; no version, since it writes only an absent key.
    Create,
    /// `take`: a version; no expiry, since the key is gone after it.
    Take,
    /// `delete`: a version; no expiry, since the key is gone after it.
    Delete,
    /// `expire`: an expiry, which it needs, and a version.
    Expire,
}

impl WriteCall {
    fn name(self) -> &'static str {
        match self {
            WriteCall::Set => "set",
            WriteCall::Create => "create",
            WriteCall::Take => "take",
            WriteCall::Delete => "delete",
            WriteCall::Expire => "expire",
        }
    }
}

impl WriteOptions {
    /// The options of `call` from the arguments a binding got: a ttl or an
    /// expiry time (not both) and a version, checked against what the call
    /// takes, with one message per shape in every language.
    pub fn of_call(
        call: WriteCall,
        ttl: Option<Duration>,
        at: Option<SystemTime>,
        if_version: Option<Version>,
    ) -> Result<WriteOptions> {
        let expiry = match (ttl, at) {
            (Some(_), Some(_)) => return Err(Error::invalid("a write takes a ttl or an expiry time, not both")),
            (Some(d), None) => Some(Expiry::In(d)),
            (None, Some(t)) => Some(Expiry::At(t)),
            (None, None) => None,
        };
        let opts = WriteOptions { expiry, if_version };
        opts.check(call)?;
        Ok(opts)
    }

    /// The expiry and version of an `expire` from a binding's arguments,
    /// checked as [`WriteOptions::of_call`] checks them.
    pub fn of_expire(
        ttl: Option<Duration>,
        at: Option<SystemTime>,
        if_version: Option<Version>,
    ) -> Result<(Expiry, Option<Version>)> {
        let opts = WriteOptions::of_call(WriteCall::Expire, ttl, at, if_version)?;
        let expiry = opts.expiry.ok_or_else(|| Error::invalid(EXPIRE_NEEDS))?;
        Ok((expiry, opts.if_version))
    }

    /// Checks that these options are a shape `call` takes.
    pub fn check(&self, call: WriteCall) -> Result<()> {
        match call {
            WriteCall::Take | WriteCall::Delete if self.expiry.is_some() => {
                Err(Error::invalid(format!("{} takes no expiry", call.name())))
            }
            WriteCall::Expire if self.expiry.is_none() => Err(Error::invalid(EXPIRE_NEEDS)),
            WriteCall::Create if self.if_version.is_some() => {
                Err(Error::invalid("create takes no version: it writes only an absent key"))
            }
            _ => Ok(()),
        }
    }
}

/// Where a listing starts and how much a page holds.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Start after this key (the `next` of the page before).
    pub after: Option<Key>,
    /// Keys a page holds, 1 to 1000 (100 when not given).
    pub limit: Option<usize>,
}

/// One page of a listing.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    /// The entries, in the byte order of their keys.
    pub entries: Vec<Entry<T>>,
    /// The cursor of the next page, when there may be one.
    pub next: Option<Key>,
}

/// What `create` did: the entry it wrote, or the live one it found. Its
/// [`version`](Created::version) is the one an `if_version` of the key
/// takes next, whichever it was (the claim of a key, then a `set` bound to
/// that claim).
#[derive(Clone, Debug, PartialEq)]
pub enum Created<T> {
    /// The key was absent and now holds the value given, at this version and
    /// expiry (the value is the caller's own, so it is not carried back).
    Written {
        /// The revision that wrote the value.
        version: Version,
        /// When the key expires, if it does.
        expires_at: Option<SystemTime>,
    },
    /// The key was there: its entry, unchanged.
    Found(Entry<T>),
}

impl<T> Created<T> {
    /// Whether `create` wrote the value.
    pub fn written(&self) -> bool {
        matches!(self, Created::Written { .. })
    }

    /// The version of the key's entry: the one written, or the one found.
    pub fn version(&self) -> Version {
        match self {
            Created::Written { version, .. } => *version,
            Created::Found(e) => e.version,
        }
    }

    /// When the key's entry expires, if it does: written or found.
    pub fn expires_at(&self) -> Option<SystemTime> {
        match self {
            Created::Written { expires_at, .. } => *expires_at,
            Created::Found(e) => e.expires_at,
        }
    }

    /// The same answer with a found entry's value converted by `f` (a
    /// written one carries none).
    pub(crate) fn try_map<U>(self, f: impl FnOnce(Entry<T>) -> Result<Entry<U>>) -> Result<Created<U>> {
        Ok(match self {
            Created::Written { version, expires_at } => Created::Written { version, expires_at },
            Created::Found(e) => Created::Found(f(e)?),
        })
    }
}
