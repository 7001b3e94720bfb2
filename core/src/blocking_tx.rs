//! A binding's transaction held by a caller that may block its thread
//! (Python's sync API, Go through the C ABI): the [`BindingTx`] and the
//! answer of its end, which the caller waits for.
//!
//! Invariants:
//! - The end's answer is taken once: the first `commit_wait` or
//!   `rollback_wait` waits for it, and every end after that is
//!   [`crate::tx_ended`] or nothing.
//! - A commit the transaction can no longer take (the writer rolled it back
//!   past [`crate::TX_LIMIT`]) still answers with why, from the writer's
//!   own answer, not with the refusal of the late commit.

use std::ops::Deref;
use std::sync::Mutex;
use std::sync::mpsc::Receiver;

use crate::binding_tx::{BindingTx, ended};
use crate::cancel::Cancel;
use crate::error::Result;

/// An open transaction and the answer of its end.
pub struct BlockingTx {
    binding: BindingTx,
    done: Mutex<Option<Receiver<Result<()>>>>,
}

impl BlockingTx {
    /// The transaction `binding`, whose end answers on `done` (as
    /// [`crate::Store::transaction_then`]'s `done` does); `None` when the
    /// caller takes that answer elsewhere and ends it with `commit`.
    pub fn new(binding: BindingTx, done: Option<Receiver<Result<()>>>) -> BlockingTx {
        BlockingTx {
            binding,
            done: Mutex::new(done),
        }
    }

    fn take_done(&self) -> Option<Receiver<Result<()>>> {
        self.done.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Commits and waits until what the transaction wrote is durable, or
    /// answers why nothing was. A second end is `Closed`.
    pub fn commit_wait(&self) -> Result<()> {
        self.commit_wait_unless(None)
    }

    /// As [`BlockingTx::commit_wait`], but a `cancel` that has fired rolls the
    /// transaction back instead, as [`BindingTx::commit_unless`] does, and
    /// answers `Cancelled` once the writer has let go.
    pub fn commit_wait_unless(&self, cancel: Option<&Cancel>) -> Result<()> {
        let done = self.take_done().ok_or_else(ended)?;
        let sent = self.binding.commit_unless(cancel);
        match done.recv() {
            Ok(r) => r.and(sent),
            Err(_) => sent.and(Err(ended())),
        }
    }

    /// Rolls back, writing nothing, and waits until the writer has let go.
    /// Ending twice is fine.
    pub fn rollback_wait(&self) {
        let done = self.take_done();
        let _ = self.binding.rollback();
        if let Some(done) = done {
            let _ = done.recv();
        }
    }
}

impl Deref for BlockingTx {
    type Target = BindingTx;

    fn deref(&self) -> &BindingTx {
        &self.binding
    }
}

#[cfg(test)]
mod tests {
    use crate::{ErrorKind, Raw, RawBucket, Store, WriteOptions};

    use super::BlockingTx;

    /// A held transaction of `store` that has set `a` in the bucket `codes`.
    fn held_with_a_set(store: &Store) -> (RawBucket, BlockingTx) {
        let b = RawBucket::open(store, "codes", None, None).unwrap();
        let (binding, done) = store.transaction().unwrap();
        let tx = BlockingTx::new(binding, Some(done));
        crate::Scope::Tx(&tx)
            .set(&b, b"a", Raw::text("1"), WriteOptions::default())
            .unwrap();
        (b, tx)
    }

    #[test]
    fn commit_waits_for_durability_and_ends_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (b, tx) = held_with_a_set(&store);
        tx.commit_wait().unwrap();
        assert!(
            b.entry(b"a").unwrap().is_some(),
            "committed before commit_wait returned"
        );
        assert_eq!(tx.commit_wait().unwrap_err().kind(), ErrorKind::Closed);
        tx.rollback_wait();
    }

    #[test]
    fn rollback_writes_nothing_and_a_commit_after_it_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (b, tx) = held_with_a_set(&store);
        tx.rollback_wait();
        assert!(b.entry(b"a").unwrap().is_none());
        assert_eq!(tx.commit_wait().unwrap_err().kind(), ErrorKind::Closed);
    }

    #[test]
    fn a_commit_given_up_rolls_back_in_the_one_text() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (b, tx) = held_with_a_set(&store);
        let cancel = crate::Cancel::new();
        cancel.fire();
        let e = tx.commit_wait_unless(Some(&cancel)).unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::Cancelled, crate::cancel::cancelled_before_commit().message())
        );
        assert!(b.entry(b"a").unwrap().is_none(), "a commit given up wrote");
    }
}
