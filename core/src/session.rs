//! Transactions and snapshots for the bindings, whose callers cannot hand
//! the engine a closure to run: an event loop awaits between calls, and Go
//! calls arrive on any thread.
//!
//! A [`TxSession`] is one write of the group-commit writer that stays open:
//! when its turn comes, the writer thread hands out the session and then runs
//! the calls the binding sends it, inside that write's savepoint, until the
//! binding commits or rolls back. Committing ends the write successfully, so
//! the group commits it with one fsync like any other write; rolling back
//! ends it with an error, so its savepoint rolls back alone. All-or-nothing
//! comes from the same mechanism as every other write.
//!
//! Invariant: while a session is open the writer runs nothing else, so a
//! session that is never finished is rolled back after [`TX_LIMIT`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{Error, ErrorKind, Result};
use crate::group_commit::{Ticket, WriteCtx};
use crate::raw::{MAX_VALUE, Raw};
use crate::storage;
use crate::store::{FILE_NAME, Store};
use crate::values::{
    self, Created, Entry, Expiry, ListOptions, PAGE_HOLD, Page, RawBucket, Target, Version, WriteOptions,
};

/// The longest a binding's transaction may hold the writer before it is
/// rolled back, so that a forgotten one cannot stop every write for good.
pub const TX_LIMIT: Duration = Duration::from_secs(10);

type Call = Box<dyn FnOnce(&mut WriteCtx<'_>) + Send>;

enum Cmd {
    Call(Call),
    Commit,
    Rollback,
}

/// An open transaction of a binding: see [`Store::transaction_then`].
/// Dropping it without [`TxSession::commit`] rolls it back.
pub struct TxSession {
    store: Store,
    cmds: Mutex<Option<SyncSender<Cmd>>>,
    /// Set while the writer serves the session; threads marked with
    /// [`TxSession::hold_thread`], and callers' contexts
    /// ([`crate::CallerContext::inside_tx`]), are inside it while it is.
    pub(crate) open: Arc<AtomicBool>,
}

impl Store {
    /// Opens a transaction for a caller that sends its calls one at a time.
    ///
    /// When the writer reaches it, `ready` gets the session (on the writer
    /// thread: it must not block). Calls on the session then run inside the
    /// transaction and see its own writes. After [`TxSession::commit`], `done`
    /// gets `Ok` once everything is durable; after a rollback, a drop, or
    /// [`TX_LIMIT`], it gets the error and nothing was written. A thread
    /// that holds a transaction of the store is refused one inside it
    /// ([`crate::nested_tx_error`]); a binding whose callers move between
    /// threads asks [`Store::refuse_tx`] with their context first.
    pub fn transaction_then(
        &self,
        ready: impl FnOnce(Result<TxSession>) + Send + 'static,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<Ticket> {
        self.inner.check_open()?;
        self.inner.refuse_on_postgres("a transaction")?;
        self.refuse_tx(&crate::CallerContext::new(), 0)?;
        let store = self.clone();
        let ready = Mutex::new(Some(ready));
        let ready2 = Arc::new(ready);
        let r3 = ready2.clone();
        self.inner.writer.submit(
            0,
            move |w: &mut WriteCtx<'_>| {
                let (tx, rx) = mpsc::sync_channel::<Cmd>(1);
                let open = Arc::new(AtomicBool::new(true));
                let writer = store.clone();
                let session = TxSession {
                    store,
                    cmds: Mutex::new(Some(tx)),
                    open: open.clone(),
                };
                writer.inner.writer.session_began();
                /// Ends the session's marks however `serve` ends.
                struct Served(Store, Arc<AtomicBool>);
                impl Drop for Served {
                    fn drop(&mut self) {
                        self.1.store(false, Ordering::Release);
                        self.0.inner.writer.session_ended();
                    }
                }
                let _served = Served(writer, open);
                if let Some(ready) = r3.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    ready(Ok(session));
                }
                serve(w, rx)
            },
            move |r: Result<()>| {
                // A transaction that never started (cancelled, store closed)
                // still answers `ready`, so no caller waits forever.
                if let (Err(e), Some(ready)) = (&r, ready2.lock().unwrap_or_else(|p| p.into_inner()).take()) {
                    ready(Err(e.clone()));
                }
                done(r)
            },
        )
    }

    /// The blocking form of [`Store::transaction_then`]: waits for the
    /// writer's turn and returns the session; `commit` then waits for the
    /// commit. For callers that may block their thread (Go).
    pub fn transaction(&self) -> Result<(TxSession, Receiver<Result<()>>)> {
        let (rtx, rrx) = mpsc::sync_channel(1);
        let (dtx, drx) = mpsc::sync_channel(1);
        self.transaction_then(
            move |s| {
                let _ = rtx.send(s);
            },
            move |r| {
                let _ = dtx.send(r);
            },
        )?;
        let session = rrx.recv().map_err(|_| Error::closed())??;
        Ok((session, drx))
    }
}

/// Runs the session's calls on the writer thread until it ends.
fn serve(w: &mut WriteCtx<'_>, rx: Receiver<Cmd>) -> Result<()> {
    let deadline = Instant::now() + TX_LIMIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Cmd::Call(f)) => {
                f(w);
                if w.conn.is_autocommit() {
                    // SQLite ended the transaction under us (an I/O error):
                    // later calls must not run outside it.
                    return Err(Error::new(
                        ErrorKind::Io,
                        "SQLite rolled the transaction back after an I/O failure",
                    ));
                }
            }
            Ok(Cmd::Commit) => return Ok(()),
            Ok(Cmd::Rollback) => {
                return Err(Error::new(
                    ErrorKind::Cancelled,
                    "the transaction was rolled back; nothing was written",
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::new(
                    ErrorKind::Cancelled,
                    "the transaction was dropped without a commit; nothing was written",
                ));
            }
            Err(RecvTimeoutError::Timeout) => {
                log::warn!("tinystore: a transaction held the writer for {TX_LIMIT:?} and was rolled back");
                return Err(Error::limit(format!(
                    "the transaction was open longer than {TX_LIMIT:?} and was rolled back; nothing was written"
                )));
            }
        }
    }
}

impl TxSession {
    /// Marks the calling thread as inside this transaction until it ends: a
    /// blocking write from this thread through a handle outside it is then
    /// `Invalid` at once ([`crate::inside_tx_error`]) instead of a wait for the
    /// writer the transaction holds. For a binding whose transaction's work
    /// stays on one thread (Python's sync API, Go's locked goroutine).
    pub fn hold_thread(&self) {
        self.store.inner.writer.hold_thread(&self.open);
    }

    /// The store of this transaction.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Runs `f` inside the transaction, on the writer thread, and waits for it.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut WriteCtx<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        let call: Call = Box::new(move |w| {
            let _ = tx.send(f(w));
        });
        let ended = || Error::new(ErrorKind::Closed, "the transaction has ended");
        {
            let cmds = self.cmds.lock().unwrap_or_else(|p| p.into_inner());
            cmds.as_ref()
                .ok_or_else(ended)?
                .send(Cmd::Call(call))
                .map_err(|_| ended())?;
        }
        rx.recv().map_err(|_| ended())?
    }

    fn end(&self, cmd: Cmd) -> Result<()> {
        // Ended by its caller: the threads it marked write as any other from
        // now on (their writes queue behind the end), even before the
        // writer thread has finished with it.
        self.open.store(false, Ordering::Release);
        let sender = self.cmds.lock().unwrap_or_else(|p| p.into_inner()).take();
        let sender = sender.ok_or_else(|| Error::new(ErrorKind::Closed, "the transaction has ended"))?;
        sender
            .send(cmd)
            .map_err(|_| Error::new(ErrorKind::Closed, "the transaction has ended"))
    }

    /// Ends the transaction and commits it; the `done` of
    /// [`Store::transaction_then`] says when it is durable. A call on the
    /// session after this is `Closed`.
    pub fn commit(&self) -> Result<()> {
        self.end(Cmd::Commit)
    }

    /// Ends the transaction and writes nothing of it.
    pub fn rollback(&self) -> Result<()> {
        self.end(Cmd::Rollback)
    }

    fn target(&self, bucket: &RawBucket, key: &[u8]) -> Result<Target> {
        if !Arc::ptr_eq(&self.store.inner, &bucket.core.store.inner) {
            return Err(
                Error::invalid("a handle of another store was used in this transaction").in_bucket(bucket.name())
            );
        }
        Target::new(&bucket.core, &bucket.branch, key)
    }

    /// Reads a live key as the transaction sees it.
    pub fn entry(&self, bucket: &RawBucket, key: &[u8]) -> Result<Option<Entry<Raw>>> {
        let t = self.target(bucket, key)?;
        let _held = t.hold_now(MAX_VALUE, "a read")?;
        self.run(move |w| Ok(t.read(w.conn, w.now)?.map(|c| t.entry(c))))
    }

    /// Writes a value inside the transaction.
    pub fn set(&self, bucket: &RawBucket, key: &[u8], value: Raw, opts: WriteOptions) -> Result<Version> {
        let t = self.target(bucket, key)?;
        let _held = t.hold_now(value.encoded_len(), "a write")?;
        self.run(move |w| t.op_set(w, &value, opts))
    }

    /// Writes a value if the key is absent.
    pub fn create(&self, bucket: &RawBucket, key: &[u8], value: Raw, expiry: Option<Expiry>) -> Result<Created<Raw>> {
        let t = self.target(bucket, key)?;
        let _held = t.hold_now(value.encoded_len() + MAX_VALUE, "a create")?;
        self.run(move |w| t.op_create(w, &value, expiry))
    }

    /// Reads and deletes a key inside the transaction.
    pub fn take(&self, bucket: &RawBucket, key: &[u8], if_version: Option<Version>) -> Result<Option<Entry<Raw>>> {
        let t = self.target(bucket, key)?;
        let _held = t.hold_now(MAX_VALUE, "a take")?;
        self.run(move |w| t.op_take(w, if_version, Ok))
    }

    /// Reads a key, runs `check` on what it holds, and deletes it only if
    /// the check passes: the take of a binding whose values must read as the
    /// bucket's type or codec, so that a value that does not is never taken.
    ///
    /// `check` runs on the calling thread, between the read and the delete
    /// (so it may call back into the binding's language); the transaction
    /// holds the writer, so nothing changes the key in between. An error
    /// from `check` comes back named with the bucket and key, and the value
    /// stays. A key at another version than `if_version` is `Conflict`
    /// before any check.
    pub fn take_checked(
        &self,
        bucket: &RawBucket,
        key: &[u8],
        if_version: Option<Version>,
        check: impl FnOnce(&Entry<Raw>) -> Result<()>,
    ) -> Result<Option<Entry<Raw>>> {
        let t = self.target(bucket, key)?;
        let version = match self.entry(bucket, key)? {
            // The take names the conflict of an absent key at a version.
            None if if_version.is_none() => return Ok(None),
            Some(found) if if_version.is_none_or(|v| v == found.version) => {
                check(&found).map_err(|e| t.name(e))?;
                Some(found.version)
            }
            _ => if_version,
        };
        self.take(bucket, key, version)
    }

    /// Deletes a key inside the transaction.
    pub fn delete(&self, bucket: &RawBucket, key: &[u8], if_version: Option<Version>) -> Result<bool> {
        let t = self.target(bucket, key)?;
        self.run(move |w| t.op_delete(w, if_version))
    }

    /// Gives a live key a new expiry inside the transaction.
    pub fn expire(&self, bucket: &RawBucket, key: &[u8], expiry: Expiry, if_version: Option<Version>) -> Result<bool> {
        let t = self.target(bucket, key)?;
        self.run(move |w| t.op_expire(w, expiry, if_version))
    }

    /// Clears a branch inside the transaction (at most 10,000 keys).
    pub fn clear(&self, bucket: &RawBucket) -> Result<()> {
        self.target(bucket, b"-")?;
        let (core, branch) = (bucket.core.clone(), bucket.branch.clone());
        self.run(move |w| values::op_clear(&core, &branch, w, true))
    }

    /// A page of a branch as the transaction sees it.
    pub fn list(&self, bucket: &RawBucket, opts: &ListOptions) -> Result<Page<Raw>> {
        self.target(bucket, b"-")?;
        let _held = bucket.hold_now(PAGE_HOLD)?;
        let (core, branch, opts) = (bucket.core.clone(), bucket.branch.clone(), opts.clone());
        self.run(move |w| values::list_on(&core, &branch, w.conn, w.now, &opts))
    }
}

impl Drop for TxSession {
    fn drop(&mut self) {
        self.open.store(false, Ordering::Release);
        // Dropping the sender ends the serve loop with a rollback.
        self.cmds.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// The longest a view holds its snapshot (KV-16): a read after it is
/// `Limit`, and the snapshot has ended. The file keeps every page a
/// snapshot may still read, so a forgotten one must not hold them for good.
pub const VIEW_LIMIT: Duration = Duration::from_secs(5);

/// The refusal of a read of a view held past [`VIEW_LIMIT`].
pub(crate) fn view_expired() -> Error {
    Error::limit(format!(
        "the view was open longer than {VIEW_LIMIT:?}, so its snapshot has ended; read in a new view"
    ))
}

/// Whether a view opened at `opened` (ms on the store's clock) is past
/// [`VIEW_LIMIT`] at `now`.
pub(crate) fn view_past_limit(opened: i64, now: i64) -> bool {
    now.saturating_sub(opened) > VIEW_LIMIT.as_millis() as i64
}

/// A read snapshot for a binding: every read sees the file as it was at the
/// snapshot's first read, for at most [`VIEW_LIMIT`]. Its connection comes
/// from the store's spare snapshot connections and goes back there when it
/// ends. It has no writes.
pub struct Snapshot {
    store: Store,
    /// Its read transaction, which the store's maintenance ends once the
    /// view is past its bound, read or not ([`crate::open_views`]).
    held: Arc<crate::open_views::ViewConn>,
    now: i64,
}

impl Store {
    /// Opens a read snapshot: see [`Snapshot`]. Close it (or drop it) soon,
    /// since the file keeps every page it may still read.
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.inner.check_open()?;
        self.inner.refuse_on_postgres("a view (snapshot)")?;
        let conn = self
            .inner
            .readers
            .take_spare(&self.inner.dir.join(FILE_NAME), self.inner.mmap_size)?;
        storage::run_tx_statement(&conn, storage::sql::BEGIN_READ)?;
        let now = self.inner.clock.now_millis();
        Ok(Snapshot {
            store: self.clone(),
            held: self.inner.views.add(conn, now),
            now,
        })
    }
}

impl Snapshot {
    fn with<T>(&self, bucket: &RawBucket, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        if !Arc::ptr_eq(&self.store.inner, &bucket.core.store.inner) {
            return Err(Error::invalid("a handle of another store was used in this snapshot").in_bucket(bucket.name()));
        }
        if view_past_limit(self.now, self.store.inner.clock.now_millis()) {
            self.close();
            return Err(view_expired().in_bucket(bucket.name()));
        }
        let g = self.held.conn();
        f(g.as_ref()
            .ok_or_else(|| Error::new(ErrorKind::Closed, "the snapshot is closed"))?)
    }

    /// Reads a live key in the snapshot. Renews nothing.
    pub fn entry(&self, bucket: &RawBucket, key: &[u8]) -> Result<Option<Entry<Raw>>> {
        let t = Target::new(&bucket.core, &bucket.branch, key)?;
        let _held = t.hold_now(MAX_VALUE, "a read")?;
        self.with(bucket, |c| Ok(t.read(c, self.now)?.map(|cell| t.entry(cell))))
    }

    /// A page of a branch in the snapshot.
    pub fn list(&self, bucket: &RawBucket, opts: &ListOptions) -> Result<Page<Raw>> {
        let _held = bucket.hold_now(PAGE_HOLD)?;
        self.with(bucket, |c| {
            values::list_on(&bucket.core, &bucket.branch, c, self.now, opts)
        })
    }

    /// Ends the snapshot; a read after this is `Closed`. Its connection
    /// goes back to the store for the next snapshot.
    pub fn close(&self) {
        self.held.end(&self.store.inner.readers);
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.close();
    }
}
