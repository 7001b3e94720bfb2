//! Transactions and snapshots for the bindings, whose callers cannot hand
//! the engine a closure to run: an event loop awaits between calls, and Go
//! calls arrive on any thread. Their calls go through [`crate::Scope`].
//!
//! A [`BindingTx`] is one write of the group-commit writer that stays open:
//! when its turn comes, the writer thread lends the transaction its write
//! context (the connection inside that write's savepoint) and waits until
//! the binding commits or rolls back, as it waits for a Rust `tx`. Each call
//! then runs on the caller's own thread under the transaction's lock: a call
//! crosses no thread, so it costs what the same call costs in a Rust `tx`.
//! Committing ends the write successfully, so the group commits it with one
//! fsync like any other write; rolling back ends it with an error, so its
//! savepoint rolls back alone. All-or-nothing comes from the same mechanism
//! as every other write.
//!
//! On a PostgreSQL store a binding transaction is a transaction of its own connection
//! instead ([`crate::postgres::tx`]): it begins when it is asked for, its
//! calls run on the caller's thread under the transaction's lock, and nothing
//! else waits for it. Counters, quotas and once's answers join it as on
//! kv.db.
//!
//! Invariants:
//! - While a binding transaction is open the writer runs nothing else, so a binding transaction
//!   that is never finished is rolled back after [`TX_LIMIT`].
//! - The writer thread touches the connection only before it lends the
//!   context and after it took it back; in between, only a call holding the
//!   transaction's lock does. Taking it back waits for a call under way.
//! - A call that panics ends the transaction with a rollback and answers an
//!   error; the store goes on writing.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::binding_refusals::Refusal;
use crate::error::{Error, ErrorKind, Result};
use crate::group_commit::{Ticket, WriteCtx};
use crate::in_tx::InTx;
use crate::open_views::{view_expired, view_past_limit};
use crate::postgres::tx::PgTx;
use crate::row_codec::panic_text;
use crate::storage;
use crate::store::{FILE_NAME, Store};
use crate::values::{RawBucket, Target};

/// The longest a binding's transaction may hold the writer before it is
/// rolled back, so that a forgotten one cannot stop every write for good.
/// On PostgreSQL, the longest it stays open on the store's clock, holding
/// a connection and its rows' locks.
pub const TX_LIMIT: Duration = Duration::from_secs(10);

/// The writer's context of an open transaction, lent to its callers.
struct LentCtx(*mut WriteCtx<'static>);

// SAFETY: the context is used by one thread at a time: by a caller only
// while it holds the transaction's lock and the context is lent, by the writer
// thread only before it lends it and after it took it back (under the same
// lock). The connection inside is `Send`; what is not `Sync` about it (its
// statement cache) is never touched by two threads at once.
unsafe impl Send for LentCtx {}

/// How the caller ended the transaction, for the writer thread.
enum End {
    Commit,
    /// Ended without a commit: the error `done` answers.
    Rollback(Error),
}

struct State {
    /// Lent while the writer waits for the end; `None` before and after.
    ctx: Option<LentCtx>,
    end: Option<End>,
    /// Why the transaction ended without its caller ending it (held past
    /// [`TX_LIMIT`], a call that panicked, an I/O failure): what later
    /// calls answer in place of `Closed`.
    why: Option<Error>,
}

struct Lent {
    state: Mutex<State>,
    /// Rung when the caller ends the transaction.
    ended: Condvar,
}

thread_local! {
    /// The binding transactions whose call this thread is running: a call of one of
    /// them from inside it is refused rather than a wait for itself.
    static CALLING: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Calls run inside `catch_unwind`, so the state behind this lock is
    // never left half-changed by a panic.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A call on a transaction that has ended: one text for every language.
pub fn ended() -> Error {
    Refusal::TxEnded.error()
}

/// An open transaction of a binding: see [`Store::transaction_then`].
/// Dropping it without [`BindingTx::commit`] rolls it back.
pub struct BindingTx {
    store: Store,
    lent: Arc<Lent>,
    /// Set while the writer serves the transaction; threads marked with
    /// [`BindingTx::hold_thread`], and callers' contexts
    /// ([`crate::CallerContext::inside_tx`]), are inside it while it is.
    pub(crate) open: Arc<AtomicBool>,
    /// On a PostgreSQL store, the transaction itself.
    pg: Option<Arc<PgSession>>,
}

/// Where `done` of a binding's transaction answers.
type Done = Box<dyn FnOnce(Result<()>) + Send>;

/// A binding's transaction on PostgreSQL: the transaction until it ends,
/// and where its end answers. Nothing waits for it as kv.db's writer does,
/// so its bound, [`TX_LIMIT`] on the store's clock, is judged at each of its
/// calls and by the store's maintenance ([`crate::postgres::held`]).
struct PgSession {
    store: Store,
    tx: Mutex<Option<PgTx>>,
    done: Mutex<Option<Done>>,
    /// The transaction's `open`, cleared when it ends.
    open: Arc<AtomicBool>,
    /// When it began, in ms on the store's clock.
    began: i64,
    /// Why it ended without its caller ending it: held past [`TX_LIMIT`].
    why: Mutex<Option<Error>>,
}

impl PgSession {
    /// What a call answers once the transaction has ended.
    fn gone(&self) -> Error {
        lock(&self.why).clone().unwrap_or_else(ended)
    }

    /// Ends the transaction (committing it or not) and answers `done`.
    fn end(&self, commit: bool, why: Error) -> Result<()> {
        let Some(tx) = lock(&self.tx).take() else {
            return Err(self.gone());
        };
        self.finish(tx, commit, why);
        Ok(())
    }

    fn finish(&self, tx: PgTx, commit: bool, why: Error) {
        if self.open.swap(false, Ordering::AcqRel) {
            self.store.inner.writer.binding_tx_ended();
        }
        let r = match commit {
            true => tx.commit(),
            false => {
                tx.rollback();
                Err(why)
            }
        };
        if let Some(done) = lock(&self.done).take() {
            done(r);
        }
    }
}

impl crate::postgres::held::Bounded for PgSession {
    fn end_if_past(&self, now: i64) -> bool {
        if now.saturating_sub(self.began) <= TX_LIMIT.as_millis() as i64 {
            return false;
        }
        let tx = {
            let mut g = lock(&self.tx);
            let Some(tx) = g.take() else { return false };
            // Set before the lock goes, so that no call finds it ended without why.
            *lock(&self.why) = Some(held_too_long());
            tx
        };
        log::warn!(store = self.store.inner.log_id; "tinystore: a transaction on PostgreSQL was open longer than {TX_LIMIT:?} and was rolled back");
        self.finish(tx, false, held_too_long());
        true
    }
}

/// What a binding's transaction held past [`TX_LIMIT`] answers: its `done`
/// and every call after.
fn held_too_long() -> Error {
    Error::limit(format!(
        "the transaction was open longer than {TX_LIMIT:?} and was rolled back; nothing was written"
    ))
}

impl Store {
    /// Opens a transaction for a caller that sends its calls one at a time.
    ///
    /// When the writer reaches it, `ready` gets the transaction (on the writer
    /// thread: it must not block). Calls on the transaction then run inside the
    /// transaction, on the caller's thread, and see its own writes. After
    /// [`BindingTx::commit`], `done` gets `Ok` once everything is durable;
    /// after a rollback, a drop, a panic in a call, or [`TX_LIMIT`], it gets
    /// the error and nothing was written. A thread that holds a transaction
    /// of the store is refused one inside it ([`crate::nested_tx_error`]); a
    /// binding whose callers move between threads asks [`Store::refuse_tx`]
    /// with their context first.
    pub fn transaction_then(
        &self,
        ready: impl FnOnce(Result<BindingTx>) + Send + 'static,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<Ticket> {
        self.inner.check_open()?;
        if self.inner.postgres().is_some() {
            self.refuse_tx(&crate::CallerContext::new(), 0)?;
            let clock = &self.inner.clock;
            let began = clock.now_millis();
            let tx = PgTx::begin(self, clock.is_manual().then_some(began), false)?;
            // Counted as open, as on kv.db, so that the guards see it.
            self.inner.writer.binding_tx_began();
            let open = Arc::new(AtomicBool::new(true));
            let pg = Arc::new(PgSession {
                store: self.clone(),
                tx: Mutex::new(Some(tx)),
                done: Mutex::new(Some(Box::new(done))),
                open: open.clone(),
                began,
                why: Mutex::new(None),
            });
            let bounded: Arc<dyn crate::postgres::held::Bounded> = pg.clone();
            if let Some(store) = self.inner.postgres() {
                store.held.add(Arc::downgrade(&bounded));
            }
            ready(Ok(BindingTx {
                store: self.clone(),
                lent: Arc::new(Lent {
                    state: Mutex::new(State {
                        ctx: None,
                        end: None,
                        why: None,
                    }),
                    ended: Condvar::new(),
                }),
                open,
                pg: Some(pg),
            }));
            return Ok(Ticket::finished());
        }
        self.refuse_tx(&crate::CallerContext::new(), 0)?;
        let store = self.clone();
        let ready = Arc::new(Mutex::new(Some(ready)));
        let unanswered = ready.clone();
        self.inner.writer.submit(
            0,
            move |w: &mut WriteCtx<'_>| {
                let lent = Arc::new(Lent {
                    state: Mutex::new(State {
                        ctx: None,
                        end: None,
                        why: None,
                    }),
                    ended: Condvar::new(),
                });
                let open = Arc::new(AtomicBool::new(true));
                let writer = store.clone();
                let log_id = store.inner.log_id;
                let tx = BindingTx {
                    store,
                    pg: None,
                    lent: lent.clone(),
                    open: open.clone(),
                };
                writer.inner.writer.binding_tx_began();
                /// Ends the transaction's marks however `serve` ends.
                struct Served(Store, Arc<AtomicBool>);
                impl Drop for Served {
                    fn drop(&mut self) {
                        self.1.store(false, Ordering::Release);
                        self.0.inner.writer.binding_tx_ended();
                    }
                }
                let _served = Served(writer, open);
                serve(w, &lent, log_id, || {
                    if let Some(ready) = lock(&ready).take() {
                        ready(Ok(tx));
                    }
                })
            },
            move |r: Result<()>| {
                // A transaction that never started (cancelled, store closed)
                // still answers `ready`, so no caller waits forever.
                if let (Err(e), Some(ready)) = (&r, lock(&unanswered).take()) {
                    ready(Err(e.clone()));
                }
                done(r)
            },
        )
    }

    /// The blocking form of [`Store::transaction_then`]: waits for the
    /// writer's turn and returns the transaction; `commit` then waits for the
    /// commit. For callers that may block their thread (Go).
    pub fn transaction(&self) -> Result<(BindingTx, Receiver<Result<()>>)> {
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
        let tx = rrx.recv().map_err(|_| Error::closed())??;
        Ok((tx, drx))
    }
}

/// On the writer thread: lends `w` to the transaction, hands the transaction out
/// (`ready`), and waits until the caller ends it or [`TX_LIMIT`] passes.
/// Returns with the context taken back, so `w` is the writer's again.
fn serve(w: &mut WriteCtx<'_>, lent: &Lent, log_id: u64, ready: impl FnOnce()) -> Result<()> {
    let deadline = Instant::now() + TX_LIMIT;
    lock(&lent.state).ctx = Some(LentCtx(std::ptr::from_mut(w).cast::<WriteCtx<'static>>()));
    ready();
    let mut st = lock(&lent.state);
    loop {
        if let Some(end) = st.end.take() {
            st.ctx = None;
            return match end {
                End::Commit => Ok(()),
                End::Rollback(e) => Err(e),
            };
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            st.ctx = None;
            log::warn!(store = log_id; "tinystore: a transaction held the writer for {TX_LIMIT:?} and was rolled back");
            let e = held_too_long();
            st.why = Some(e.clone());
            return Err(e);
        }
        st = lent.ended.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0;
    }
}

impl BindingTx {
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

    /// Runs `f` on what the transaction runs on (kv.db's write context, as
    /// [`BindingTx::run`], or the PostgreSQL transaction, as
    /// [`BindingTx::pg`]): the other kinds' calls take this.
    pub(crate) fn run_kind<T>(&self, f: impl FnOnce(InTx<'_, '_>) -> Result<T>) -> Result<T> {
        if self.pg.is_some() {
            return self.pg(|p| f(InTx::Postgres(p))).unwrap_or_else(|| Err(ended()));
        }
        self.run(|w| f(InTx::Sqlite(w)))
    }

    /// Runs `f` inside the transaction, on this thread, under the transaction's
    /// lock. After the end it is `Closed`, or the reason the writer ended it.
    /// For kv.db: a bucket's call on PostgreSQL takes [`BindingTx::pg`].
    pub(crate) fn run<T>(&self, f: impl FnOnce(&mut WriteCtx<'_>) -> Result<T>) -> Result<T> {
        if self.pg.is_some() {
            return Err(crate::postgres::unsupported("this call inside a transaction"));
        }
        let id = Arc::as_ptr(&self.lent) as usize;
        if CALLING.with(|c| c.borrow().contains(&id)) {
            // A call made from inside one of the transaction's own calls (a
            // codec's decode during a take) would wait for itself.
            return Err(Error::invalid(
                "a call of the transaction was made from inside another of its calls (a codec's function): \
                 call the transaction after that call returns",
            ));
        }
        let mut st = lock(&self.lent.state);
        let ptr = match (&st.end, &st.ctx) {
            (None, Some(c)) => c.0,
            _ => return Err(st.why.clone().unwrap_or_else(ended)),
        };
        // SAFETY: the context is lent (the writer thread waits in `serve`
        // and takes it back only under this lock, which this call holds),
        // and the write it belongs to lives until `serve` returns.
        let w = unsafe { &mut *ptr };
        CALLING.with(|c| c.borrow_mut().push(id));
        let out = catch_unwind(AssertUnwindSafe(|| f(w)));
        CALLING.with(|c| c.borrow_mut().retain(|&x| x != id));
        let failed = match &out {
            Err(p) => Some(Error::invalid(format!(
                "a call inside the transaction panicked ({}); the transaction was rolled back and nothing was written",
                panic_text(p.as_ref())
            ))),
            // SQLite ended the transaction under us (an I/O error): later
            // calls must not run outside it.
            Ok(_) if w.conn.is_autocommit() => Some(Error::new(
                ErrorKind::Io,
                "SQLite rolled the transaction back after an I/O failure",
            )),
            Ok(_) => None,
        };
        if let Some(e) = failed {
            st.end = Some(End::Rollback(e.clone()));
            st.why = Some(e.clone());
            self.open.store(false, Ordering::Release);
            self.lent.ended.notify_one();
            if out.is_err() {
                return Err(e);
            }
        }
        out.unwrap_or_else(|_| Err(ended()))
    }

    /// Runs `f` on the PostgreSQL transaction, on this thread, under the
    /// transaction's lock; `None` on kv.db. After the end it is `Closed`.
    pub(crate) fn pg<T>(&self, f: impl FnOnce(&PgTx) -> Result<T>) -> Option<Result<T>> {
        let pg = self.pg.as_ref()?;
        let id = Arc::as_ptr(&self.lent) as usize;
        if CALLING.with(|c| c.borrow().contains(&id)) {
            return Some(Err(Error::invalid(
                "a call of the transaction was made from inside another of its calls (a codec's function): \
                 call the transaction after that call returns",
            )));
        }
        // Past its bound, it ends here if maintenance has not ended it yet.
        crate::postgres::held::Bounded::end_if_past(&**pg, self.store.inner.clock.now_millis());
        let g = lock(&pg.tx);
        let Some(tx) = g.as_ref() else {
            return Some(Err(pg.gone()));
        };
        CALLING.with(|c| c.borrow_mut().push(id));
        let out = f(tx);
        CALLING.with(|c| c.borrow_mut().retain(|&x| x != id));
        Some(out)
    }

    fn end(&self, end: End) -> Result<()> {
        if let Some(pg) = &self.pg {
            crate::postgres::held::Bounded::end_if_past(&**pg, self.store.inner.clock.now_millis());
            return match end {
                End::Commit => pg.end(true, ended()),
                End::Rollback(why) => pg.end(false, why),
            };
        }
        // Ended by its caller: the threads it marked write as any other from
        // now on (their writes queue behind the end), even before the
        // writer thread has finished with it.
        self.open.store(false, Ordering::Release);
        let mut st = lock(&self.lent.state);
        if st.end.is_some() || st.ctx.is_none() {
            return Err(st.why.clone().unwrap_or_else(ended));
        }
        st.end = Some(end);
        self.lent.ended.notify_one();
        Ok(())
    }

    /// Ends the transaction and commits it; the `done` of
    /// [`Store::transaction_then`] says when it is durable. A call on the
    /// transaction after this is `Closed`.
    pub fn commit(&self) -> Result<()> {
        self.end(End::Commit)
    }

    /// [`BindingTx::commit`], unless `cancel` has fired: then it rolls
    /// back, writing nothing, and `done` answers `Cancelled`. A transaction
    /// whose function ran is never cut short; the caller who gave up meanwhile
    /// learns that nothing of it was written.
    pub fn commit_unless(&self, cancel: Option<&crate::Cancel>) -> Result<()> {
        if cancel.is_some_and(crate::Cancel::fired) {
            return self.end(End::Rollback(crate::cancel::cancelled_before_commit()));
        }
        self.commit()
    }

    /// Ends the transaction and writes nothing of it.
    pub fn rollback(&self) -> Result<()> {
        self.end(End::Rollback(Error::new(
            ErrorKind::Cancelled,
            "the transaction was rolled back; nothing was written",
        )))
    }

    /// The target of `key` in `bucket`, which must be of this store.
    pub(crate) fn target(&self, bucket: &RawBucket, key: &[u8]) -> Result<Target> {
        self.same_store(bucket)?;
        Target::new(&bucket.core, &bucket.branch, key)
    }

    pub(crate) fn same_store(&self, bucket: &RawBucket) -> Result<()> {
        crate::in_tx::same_store(&self.store, bucket.store(), bucket.name())
    }
}

impl Drop for BindingTx {
    fn drop(&mut self) {
        let _ = self.end(End::Rollback(Error::new(
            ErrorKind::Cancelled,
            "the transaction was dropped without a commit; nothing was written",
        )));
    }
}

/// A read snapshot for a binding: every read sees the file as it was at the
/// snapshot's first read, for at most [`crate::VIEW_LIMIT`]. Its connection comes
/// from the store's spare snapshot connections and goes back there when it
/// ends. It has no writes.
pub struct Snapshot {
    store: Store,
    /// Its read transaction, which the store's maintenance ends once the
    /// view is past its bound, read or not ([`crate::open_views`]).
    /// `None` on PostgreSQL.
    held: Option<Arc<crate::open_views::ViewConn>>,
    /// On PostgreSQL, its read-only transaction until it ends, which the
    /// store's maintenance also ends once it is past its bound.
    pg: Option<Arc<PgView>>,
    now: i64,
}

impl Store {
    /// Opens a read snapshot: see [`Snapshot`]. Close it (or drop it) soon,
    /// since the file keeps every page it may still read.
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.inner.check_open()?;
        let now = self.inner.clock.now_millis();
        if self.inner.postgres().is_some() {
            let clock = &self.inner.clock;
            let tx = PgTx::begin(self, clock.is_manual().then_some(now), true)?;
            let view = Arc::new(PgView {
                tx: Mutex::new(Some(tx)),
                opened: now,
            });
            let bounded: Arc<dyn crate::postgres::held::Bounded> = view.clone();
            if let Some(store) = self.inner.postgres() {
                store.held.add(Arc::downgrade(&bounded));
            }
            return Ok(Snapshot {
                store: self.clone(),
                held: None,
                pg: Some(view),
                now,
            });
        }
        let conn = self
            .inner
            .readers
            .take_spare(&self.inner.dir.join(FILE_NAME), self.inner.mmap_size)?;
        storage::run_tx_statement(&conn, storage::sql::BEGIN_READ)?;
        Ok(Snapshot {
            store: self.clone(),
            held: Some(self.inner.views.add(conn, now)),
            pg: None,
            now,
        })
    }
}

impl Snapshot {
    /// The store of this snapshot.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Runs `f` on the snapshot's connection with the snapshot's time, for
    /// a read of `bucket`, which must be of this store. A read past
    /// [`crate::VIEW_LIMIT`] ends the snapshot and is `Limit`.
    pub(crate) fn read<T>(&self, bucket: &RawBucket, f: impl FnOnce(&Connection, i64) -> Result<T>) -> Result<T> {
        self.check(bucket)?;
        let Some(held) = &self.held else {
            return Err(crate::postgres::unsupported("this read in a snapshot"));
        };
        let g = held.conn();
        let conn = g.as_ref().ok_or_else(|| Refusal::ViewEnded.error())?;
        f(conn, self.now)
    }

    /// Refuses a read of another store's bucket, or past [`crate::VIEW_LIMIT`]
    /// (which ends the snapshot).
    fn check(&self, bucket: &RawBucket) -> Result<()> {
        crate::in_tx::same_store(&self.store, bucket.store(), bucket.name())?;
        if view_past_limit(self.now, self.store.inner.clock.now_millis()) {
            self.close();
            return Err(view_expired().in_bucket(bucket.name()));
        }
        Ok(())
    }

    /// Runs `f` on the PostgreSQL snapshot, for a read of `bucket`; `None`
    /// on kv.db.
    pub(crate) fn pg<T>(&self, bucket: &RawBucket, f: impl FnOnce(&PgTx) -> Result<T>) -> Option<Result<T>> {
        let pg = self.pg.as_ref()?;
        Some(self.check(bucket).and_then(|()| {
            let g = lock(&pg.tx);
            let tx = g.as_ref().ok_or_else(|| Refusal::ViewEnded.error())?;
            f(tx)
        }))
    }

    /// Ends the snapshot; a read after this is `Closed`. Its connection
    /// goes back to the store for the next snapshot.
    pub fn close(&self) {
        if let Some(held) = &self.held {
            held.end(&self.store.inner.readers);
        }
        if let Some(tx) = self.pg.as_ref().and_then(|pg| lock(&pg.tx).take()) {
            tx.rollback();
        }
    }
}

/// A binding's snapshot on PostgreSQL: its read-only transaction, which
/// holds one of the store's held connections and the database's oldest
/// snapshot back, until it ends.
struct PgView {
    tx: Mutex<Option<PgTx>>,
    /// When it opened, in ms on the store's clock.
    opened: i64,
}

impl crate::postgres::held::Bounded for PgView {
    fn end_if_past(&self, now: i64) -> bool {
        if !view_past_limit(self.opened, now) {
            return false;
        }
        let Some(tx) = lock(&self.tx).take() else { return false };
        tx.rollback();
        true
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.close();
    }
}
