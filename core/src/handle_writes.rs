//! A binding's writes as data: one enum per kind of handle (a bucket's,
//! counters', a quota's, a once's), each variant one core call with its
//! arguments converted. A binding turns its arguments into a variant and
//! hands it to [`HandleWrite::in_scope`] (inside a transaction, on the
//! caller's thread; refused in a snapshot) or [`HandleWrite::to_writer`]
//! (on the store, answered by the writer), so each operation's two forms
//! are written here once rather than in every binding.
//!
//! Whatever the handle, the answer is a [`Written`]: a binding converts it
//! to its language in one place.

use crate::error::{Error, ErrorKind, Result};
use crate::group_commit::Ticket;
use crate::in_tx::store_only_refused;
use crate::limits::{Allowance, Counters, Quota, RawOnce};
use crate::raw::Raw;
use crate::scope::Scope;
use crate::values::{Created, Entry, Expiry, RawBucket, Version, WriteOptions};

/// What a write answers, whichever handle made it.
pub enum Written {
    /// A set's version.
    Version(Version),
    /// A create's outcome: written, or the live entry found.
    Created(Created<Raw>),
    /// A take's entry, when a live key was there.
    Taken(Option<Entry<Raw>>),
    /// Whether a live key (or kept answer) was there.
    Found(bool),
    /// A counter's new value.
    Count(i64),
    /// A quota's answer.
    Allowance(Allowance),
    /// A clear's or a reset's: nothing.
    Nothing,
}

/// A take's check of the value inside the write: an error keeps the value
/// (see [`Scope::take`]).
pub type TakeCheck = Box<dyn FnOnce(&Entry<Raw>) -> Result<()> + Send>;

/// What a take answers when its check (a binding's own decode, which says
/// only yes or no) refuses the value: `Corrupt`, and the value stays. One
/// text for every language.
pub fn undecodable_take() -> Error {
    Error::new(
        ErrorKind::Corrupt,
        "the value does not decode as the bucket's type or codec; it stays",
    )
}

/// A write of the handle `On`: the same core call inside a transaction and
/// on the store.
pub trait HandleWrite: Sized + Send + 'static {
    /// The handle the write is of.
    type On: Clone + Send + Sync + 'static;
    /// Runs it in `scope` on this thread: inside a transaction, or directly
    /// as a blocking write; the core refuses it in a snapshot.
    fn in_scope(self, scope: Scope<'_>, on: &Self::On) -> Result<Written>;
    /// Hands it to the store's writer, which answers through `done`.
    fn to_writer(self, on: &Self::On, done: impl FnOnce(Result<Written>) + Send + 'static) -> Result<Ticket>;
}

/// A write of a bucket: the key, then the arguments of the core's call.
pub enum BucketWrite {
    Set(Vec<u8>, Raw, WriteOptions),
    Create(Vec<u8>, Raw, Option<Expiry>),
    Take(Vec<u8>, Option<Version>, TakeCheck),
    Delete(Vec<u8>, Option<Version>),
    Expire(Vec<u8>, Expiry, Option<Version>),
    Clear,
}

impl HandleWrite for BucketWrite {
    type On = RawBucket;

    fn in_scope(self, s: Scope<'_>, b: &RawBucket) -> Result<Written> {
        match self {
            BucketWrite::Set(k, v, opts) => s.set(b, &k, v, opts).map(Written::Version),
            BucketWrite::Create(k, v, expiry) => s.create(b, &k, v, expiry).map(Written::Created),
            BucketWrite::Take(k, v, check) => s.take(b, &k, v, check).map(Written::Taken),
            BucketWrite::Delete(k, v) => s.delete(b, &k, v).map(Written::Found),
            BucketWrite::Expire(k, expiry, v) => s.expire(b, &k, expiry, v).map(Written::Found),
            BucketWrite::Clear => s.clear(b).map(|()| Written::Nothing),
        }
    }

    fn to_writer(self, b: &RawBucket, done: impl FnOnce(Result<Written>) + Send + 'static) -> Result<Ticket> {
        match self {
            BucketWrite::Set(k, v, opts) => b.set_then(&k, v, opts, |r| done(r.map(Written::Version))),
            BucketWrite::Create(k, v, expiry) => b.create_then(&k, v, expiry, |r| done(r.map(Written::Created))),
            BucketWrite::Take(k, v, check) => b.take_then(&k, v, check, |r| done(r.map(Written::Taken))),
            BucketWrite::Delete(k, v) => b.delete_then(&k, v, |r| done(r.map(Written::Found))),
            BucketWrite::Expire(k, expiry, v) => b.expire_then(&k, expiry, v, |r| done(r.map(Written::Found))),
            BucketWrite::Clear => b.clear_then(|r| done(r.map(|()| Written::Nothing))),
        }
    }
}

/// A write of counters: the key and the step of `add` or `max`.
pub enum CounterWrite {
    Add(Vec<u8>, i64),
    Max(Vec<u8>, i64),
    Delete(Vec<u8>),
    /// Removes the branch and every branch under it: on the store only.
    Clear,
}

impl HandleWrite for CounterWrite {
    type On = Counters;

    fn in_scope(self, s: Scope<'_>, c: &Counters) -> Result<Written> {
        match self {
            CounterWrite::Add(k, n) => s.counter_add(c, &k, n).map(Written::Count),
            CounterWrite::Max(k, n) => s.counter_max(c, &k, n).map(Written::Count),
            CounterWrite::Delete(k) => s.counter_delete(c, &k).map(Written::Found),
            CounterWrite::Clear => match s {
                Scope::Direct => c.clear().map(|()| Written::Nothing),
                _ => Err(store_only_refused("clear", c.name())),
            },
        }
    }

    fn to_writer(self, c: &Counters, done: impl FnOnce(Result<Written>) + Send + 'static) -> Result<Ticket> {
        match self {
            CounterWrite::Add(k, n) => c.add_then(k, n, |r| done(r.map(Written::Count))),
            CounterWrite::Max(k, n) => c.max_then(k, n, |r| done(r.map(Written::Count))),
            CounterWrite::Delete(k) => c.delete_then(k, |r| done(r.map(Written::Found))),
            CounterWrite::Clear => c.clear_then(|r| done(r.map(|()| Written::Nothing))),
        }
    }
}

/// A write of a quota: the key and the count of uses.
pub enum QuotaWrite {
    Allow(Vec<u8>, u64),
    Refund(Vec<u8>, u64),
    Reset(Vec<u8>),
}

impl HandleWrite for QuotaWrite {
    type On = Quota;

    fn in_scope(self, s: Scope<'_>, q: &Quota) -> Result<Written> {
        match self {
            QuotaWrite::Allow(k, n) => s.quota_allow(q, &k, n).map(Written::Allowance),
            QuotaWrite::Refund(k, n) => s.quota_refund(q, &k, n).map(Written::Allowance),
            QuotaWrite::Reset(k) => s.quota_reset(q, &k).map(|()| Written::Nothing),
        }
    }

    fn to_writer(self, q: &Quota, done: impl FnOnce(Result<Written>) + Send + 'static) -> Result<Ticket> {
        match self {
            QuotaWrite::Allow(k, n) => q.allow_n_then(k, n, |r| done(r.map(Written::Allowance))),
            QuotaWrite::Refund(k, n) => q.refund_n_then(k, n, |r| done(r.map(Written::Allowance))),
            QuotaWrite::Reset(k) => q.reset_then(k, |r| done(r.map(|()| Written::Nothing))),
        }
    }
}

/// The one write of a once given a scope: forgetting a key's answer.
pub struct OnceDelete(pub Vec<u8>);

impl HandleWrite for OnceDelete {
    type On = RawOnce;

    fn in_scope(self, s: Scope<'_>, o: &RawOnce) -> Result<Written> {
        s.once_delete(o, &self.0).map(Written::Found)
    }

    fn to_writer(self, o: &RawOnce, done: impl FnOnce(Result<Written>) + Send + 'static) -> Result<Ticket> {
        o.delete_then(self.0, |r| done(r.map(Written::Found)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BindingTx, Store};

    fn open() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        (dir, store)
    }

    fn in_tx<T: Send + 'static>(store: &Store, f: impl FnOnce(&BindingTx) -> T) -> T {
        let (binding, done) = store.transaction().unwrap();
        let out = f(&binding);
        binding.commit().unwrap();
        done.recv().unwrap().unwrap();
        out
    }

    /// A take whose binding's check says no is `Corrupt` in the one text,
    /// and the value stays.
    #[test]
    fn a_take_its_check_refuses_leaves_the_value() {
        let (_dir, store) = open();
        let b = RawBucket::open(&store, "codes", None, None).unwrap();
        b.set(b"k", Raw::text("v"), WriteOptions::default()).unwrap();
        let check: TakeCheck = Box::new(|_| Err(undecodable_take()));
        let e = BucketWrite::Take(b"k".to_vec(), None, check)
            .in_scope(Scope::Direct, &b)
            .err()
            .unwrap();
        assert_eq!(
            (e.kind(), e.message()),
            (
                ErrorKind::Corrupt,
                "the value does not decode as the bucket's type or codec; it stays"
            )
        );
        assert!(b.entry(b"k").unwrap().is_some(), "a refused take took the value");
    }

    /// A write handed to the writer answers `done` with the same kind of
    /// answer as the same write in a transaction.
    #[test]
    fn both_forms_answer_alike() {
        let (_dir, store) = open();
        let b = RawBucket::open(&store, "codes", None, None).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let set = BucketWrite::Set(b"a".to_vec(), Raw::text("1"), WriteOptions::default());
        set.to_writer(&b, move |r| tx.send(r).unwrap()).unwrap();
        let Ok(Written::Version(v)) = rx.recv().unwrap() else {
            panic!("a set answers its version")
        };
        assert_eq!(b.entry(b"a").unwrap().unwrap().version, v);

        let taken = in_tx(&store, |t| {
            let take = BucketWrite::Take(b"a".to_vec(), None, Box::new(|_| Ok(())));
            take.in_scope(Scope::Tx(t), &b)
        });
        let Ok(Written::Taken(Some(e))) = taken else {
            panic!("a take answers the entry")
        };
        assert_eq!(e.value, Raw::text("1"));
        assert!(b.entry(b"a").unwrap().is_none(), "the take committed");
    }

    /// Counters are cleared on the store only; inside a transaction the
    /// clear is refused and nothing goes.
    #[test]
    fn counters_clear_only_on_the_store() {
        let (_dir, store) = open();
        let c = store.counters("hits").open().unwrap();
        c.add(b"k", 3).unwrap();
        let refused = in_tx(&store, |t| CounterWrite::Clear.in_scope(Scope::Tx(t), &c));
        let Err(e) = refused else {
            panic!("a clear inside a transaction is refused")
        };
        assert_eq!(e.kind(), crate::ErrorKind::Invalid);
        assert_eq!(c.get(b"k").unwrap(), 3);
        assert!(matches!(
            CounterWrite::Clear.in_scope(Scope::Direct, &c),
            Ok(Written::Nothing)
        ));
        assert_eq!(c.get(b"k").unwrap(), 0);
    }
}
