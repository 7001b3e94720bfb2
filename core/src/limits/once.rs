//! `once` (KV-11): a key's function runs once, and its answer is kept.
//!
//! [`RawOnce::begin`] is the whole machine, in completion form so that an
//! event loop never blocks: it answers [`Begun::Kept`] with an answer kept,
//! or [`Begun::Run`] with a [`Claim`] once the key is the caller's to run,
//! after waiting for a run of the key in this store (a callback when it
//! ends) or in another process (polls on the store's timer thread). The
//! claim keeps the answer and lets go in one write ([`Claim::keep`]), or
//! lets go keeping nothing ([`Claim::abandon`], or dropping it), and a
//! waiter then reads the answer or runs the key itself. [`Once::run`] is
//! `begin` plus the caller's function, blocking.
//!
//! Rules this keeps: an error or a panic keeps nothing; an answer handed to
//! `keep` is written even if its caller is gone; a run of a key inside its
//! own run on the same thread is `Invalid`, not a deadlock.
//!
//! On a PostgreSQL store the same machine runs, with the claim, the answer
//! and the release as statements ([`crate::postgres::once`]): a waiter
//! behind another server's run wakes at its notification or its poll.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::claims::{FileClaim, ONCE_POLL, RunKey, Runs, op_claim, op_keep, peek_claim};
use super::{lock, shared};
use crate::codec::{decode, encode};
use crate::error::rerun_error;
use crate::error::{Error, Result};
use crate::group_commit::{Ticket, WriteCtx};
use crate::guards::CallerContext;
use crate::key::{AsKey, Branch};
use crate::postgres::PgStore;
use crate::postgres::once::{self as pg_once, Claimed};
use crate::raw::Raw;
use crate::storage::{self, Kind};
use crate::store::Store;
use crate::values::{BucketCore, Target, clock_of};

/// How long an answer is kept when `keep` is not given: a day.
const DEFAULT_KEEP: Duration = Duration::from_secs(24 * 3600);

/// Opens a once: `store.once::<Sent>("sends").keep(Duration::from_secs(86400)).open()?`.
#[must_use = "a builder does nothing until .open()"]
pub struct OnceBuilder<T> {
    store: Store,
    name: String,
    keep: Option<Duration>,
    _t: PhantomData<fn() -> T>,
}

impl Store {
    /// A once by name, whose answers are of type `T`.
    pub fn once<T>(&self, name: &str) -> OnceBuilder<T> {
        OnceBuilder {
            store: self.clone(),
            name: name.to_owned(),
            keep: None,
            _t: PhantomData,
        }
    }
}

impl<T: Serialize + DeserializeOwned + Send + 'static> OnceBuilder<T> {
    /// How long an answer is kept after its run (a day when not given).
    pub fn keep(mut self, d: Duration) -> Self {
        self.keep = Some(d);
        self
    }

    /// Opens the once, creating the name in the file if it is new.
    pub fn open(self) -> Result<Once<T>> {
        Ok(Once {
            raw: RawOnce::open(&self.store, &self.name, self.keep)?,
            _t: PhantomData,
        })
    }
}

/// The identity of one once name, shared by its branches.
struct OnceCore {
    bucket: Arc<BucketCore>,
    keep_ms: i64,
    runs: Arc<Runs>,
}

/// A once with answers as [`Raw`] rows, for bindings: [`RawOnce::begin`]
/// waits by completion, never by blocking.
#[derive(Clone)]
pub struct RawOnce {
    core: Arc<OnceCore>,
    branch: Branch,
}

impl fmt::Debug for RawOnce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RawOnce({:?} under {:?})",
            self.core.bucket.name,
            self.branch.show_with(None)
        )
    }
}

/// What [`RawOnce::begin`] found.
#[derive(Debug)]
pub enum Begun {
    /// The answer kept for the key: nothing to run.
    Kept(Raw),
    /// The key is yours to run: keep the answer with [`Claim::keep`], or
    /// let go with [`Claim::abandon`] when the work failed.
    Run(Claim),
}

/// The run of one key, held until it keeps an answer or lets go. Dropping
/// it lets go keeping nothing, so a panic keeps nothing.
pub struct Claim {
    held: Option<(RawOnce, Target)>,
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.held {
            Some((once, t)) => write!(
                f,
                "Claim({:?}, {:?})",
                once.core.bucket.name,
                t.branch.show_with(Some(t.key()))
            ),
            None => f.write_str("Claim(let go)"),
        }
    }
}

fn run_key(t: &Target) -> RunKey {
    (t.core.id, t.path().to_vec())
}

impl RawOnce {
    /// Opens the once `name`, keeping answers for `keep` (a day when `None`).
    pub fn open(store: &Store, name: &str, keep: Option<Duration>) -> Result<RawOnce> {
        crate::store::check_name(name)?;
        let keep = keep.unwrap_or(DEFAULT_KEEP);
        if keep.is_zero() {
            return Err(Error::invalid("a keep of zero would keep no answer").in_bucket(name));
        }
        let bucket = BucketCore::open(store, name, Kind::Once, Some(keep), None)?;
        let keep_ms = bucket.ttl.unwrap_or(1);
        Ok(RawOnce {
            core: Arc::new(OnceCore {
                bucket,
                keep_ms,
                runs: shared(store).runs(),
            }),
            branch: Branch::root(),
        })
    }

    /// The once's name.
    pub fn name(&self) -> &str {
        &self.core.bucket.name
    }

    /// The owners of this branch, outermost first, for a binding to name a
    /// key in an error of its own.
    pub fn owners(&self) -> &[Vec<u8>] {
        self.branch.owners()
    }

    /// The store this handle belongs to (a binding checks a call against a
    /// transaction its thread holds on the same store).
    pub fn store(&self) -> &Store {
        &self.core.bucket.store
    }

    /// The branch of `owner`: its keys run apart from the others.
    pub fn under(&self, owner: impl AsKey) -> RawOnce {
        RawOnce {
            core: self.core.clone(),
            branch: self.branch.child(&owner.key_bytes()),
        }
    }

    /// The PostgreSQL store this once is on, if it is on one.
    fn pg(&self) -> Option<&PgStore> {
        self.core.bucket.store.inner.postgres()
    }

    pub(crate) fn target(&self, key: &[u8]) -> Result<Target> {
        self.core.bucket.store.inner.check_open()?;
        Target::new(&self.core.bucket, &self.branch, key)
    }

    /// The answer kept for the key, if any.
    pub fn get(&self, key: impl AsKey) -> Result<Option<Raw>> {
        let t = self.target(&key.key_bytes())?;
        let inner = &self.core.bucket.store.inner;
        if let Some(pg) = inner.postgres() {
            let now = clock_of(&t.core);
            let found = pg
                .block(async |pool, _| crate::postgres::cells::get(pool, t.core.id, t.path(), now).await)
                .map_err(|e| t.name(e))?;
            return Ok(found.map(|(cell, _)| cell.value));
        }
        let now = inner.clock.now_millis();
        Ok(inner.readers.with(|c| t.read(c, now))?.map(|c| c.value))
    }

    /// Forgets the answer kept for the key, so the next run runs again;
    /// says whether one was kept.
    pub fn delete(&self, key: impl AsKey) -> Result<bool> {
        let t = self.target(&key.key_bytes())?;
        if let Some(pg) = self.pg() {
            super::on_postgres::refuse_inside_tx(&t.core)?;
            return pg
                .block(async |pool, sent| crate::values::pg_delete(pool, sent, &t, None).await)
                .map_err(|e| t.name(e));
        }
        self.core
            .bucket
            .store
            .inner
            .writer
            .call(0, move |w: &mut WriteCtx<'_>| t.op_delete(w, None))
    }

    /// The completion form of [`RawOnce::delete`].
    pub fn delete_then(&self, key: impl AsKey, done: impl FnOnce(Result<bool>) + Send + 'static) -> Result<Ticket> {
        let t = self.target(&key.key_bytes())?;
        if let Some(pg) = self.pg() {
            let t2 = t.clone();
            let f = move |pool: Arc<crate::postgres::Pool>, sent: Arc<crate::postgres::SentFlag>| async move {
                crate::values::pg_delete(&pool, &sent, &t2, None).await
            };
            return crate::values::pg_then(pg, &t, crate::budget::Held::nothing(), f, done);
        }
        self.core
            .bucket
            .store
            .inner
            .writer
            .submit(0, move |w: &mut WriteCtx<'_>| t.op_delete(w, None), done)
    }

    /// Begins a run of the key: `on_ready` gets [`Begun::Kept`] with the
    /// answer kept, or [`Begun::Run`] once the key is the caller's to run,
    /// after any run of it in this store or another process has ended. It
    /// may be called before `begin` returns, on the caller's thread, or
    /// later on the writer or timer thread (on PostgreSQL, the store's answers
    /// thread or the timer thread); it must not block. A bad key, a
    /// caller inside a transaction of the store (this thread, or `caller`),
    /// or a caller inside a run of the same key (`caller`) is refused at
    /// once (`guards.rs`); a failure later goes to `on_ready`.
    pub fn begin(
        &self,
        key: impl AsKey,
        caller: &CallerContext,
        on_ready: impl FnOnce(Result<Begun>) + Send + 'static,
    ) -> Result<()> {
        let t = self.target(&key.key_bytes())?;
        self.refuse_run(&t, caller)?;
        self.begin_target(t, on_ready);
        Ok(())
    }

    /// Refuses a run that would wait for its own caller: one inside a
    /// transaction of the store (its claim and its answer are writes of
    /// their own), or inside a run of the same key.
    fn refuse_run(&self, t: &Target, caller: &CallerContext) -> Result<()> {
        let store = &self.core.bucket.store;
        if store.holds_writer(|| caller.clone()) {
            return Err(t.name(crate::in_tx::once_run_refused()));
        }
        if caller.runs(store, &run_key(t)) {
            return Err(t.name(rerun_error()));
        }
        Ok(())
    }

    /// Checks a run of `key` by this thread and begins it, answering
    /// `on_ready` as [`RawOnce::begin`] does: the start of [`Once::run`] in
    /// its blocking and its async form. Returns the key's target.
    pub(crate) fn begin_here(
        &self,
        key: &[u8],
        on_ready: impl FnOnce(Result<Begun>) + Send + 'static,
    ) -> Result<Target> {
        let t = self.target(key)?;
        RUNNING.with(|r| self.refuse_run(&t, &r.borrow()))?;
        self.begin_target(t.clone(), on_ready);
        Ok(t)
    }

    fn begin_target(&self, t: Target, on_ready: impl FnOnce(Result<Begun>) + Send + 'static) {
        let begin = Arc::new(Begin {
            once: self.clone(),
            t,
            ready: Mutex::new(Some(Box::new(on_ready))),
        });
        if let Some(cancel) = crate::cancel::current() {
            // The caller gave up: it stops waiting, and a claim that comes
            // later finds no one to answer and lets go (see `Begin::finish`).
            let waiting = Arc::downgrade(&begin);
            cancel.on_fire(move || {
                if let Some(b) = waiting.upgrade() {
                    b.finish(Err(b.t.name(waiter_gave_up())));
                }
            });
        }
        attempt(begin);
    }
}

/// A second end of one run (a keep or an abandon after either): the run
/// ends once, so a binding whose claim outlives its end refuses it.
pub fn claim_ended() -> Error {
    Error::new(
        crate::error::ErrorKind::Invalid,
        "this run already kept an answer or let go",
    )
}

/// A waiter for a run of a key that stopped waiting before the run ended:
/// nothing of it ran, and the run it waited for goes on.
pub fn waiter_gave_up() -> Error {
    Error::new(
        crate::error::ErrorKind::Cancelled,
        "the caller gave up waiting for a run of the key",
    )
}

/// Where a `begin` answers.
type Ready = Box<dyn FnOnce(Result<Begun>) + Send>;

/// One `begin` on its way to an answer.
struct Begin {
    once: RawOnce,
    t: Target,
    ready: Mutex<Option<Ready>>,
}

impl Begin {
    fn finish(&self, r: Result<Begun>) {
        let ready = lock(&self.ready).take();
        if let Some(f) = ready {
            f(r);
        }
    }

    fn runs(&self) -> &Arc<Runs> {
        &self.once.core.runs
    }
}

impl Drop for Begin {
    fn drop(&mut self) {
        // Never leave a waiter without an answer, even if a queued step was
        // dropped unrun because the store closed.
        if let Some(f) = self.ready.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            f(Err(Error::closed()));
        }
    }
}

/// Reads a kept answer, or claims the key in this store (or waits for the
/// run holding it), then claims it in the file.
fn attempt(job: Arc<Begin>) {
    let inner = &job.once.core.bucket.store.inner;
    if inner.postgres().is_some() {
        // The claim reads the kept answer in its transaction.
        let again = job.clone();
        if job.runs().try_claim(run_key(&job.t), Box::new(move || attempt(again))) {
            claim_in_file(job);
        }
        return;
    }
    let now = inner.clock.now_millis();
    match inner.readers.with(|c| job.t.read(c, now)) {
        Err(e) => return job.finish(Err(e)),
        Ok(Some(cell)) => return job.finish(Ok(Begun::Kept(cell.value))),
        Ok(None) => {}
    }
    let again = job.clone();
    if job.runs().try_claim(run_key(&job.t), Box::new(move || attempt(again))) {
        claim_in_file(job);
    }
}

/// Claims the key in the file, holding it in this store meanwhile.
fn claim_in_file(job: Arc<Begin>) {
    if let Some(pg) = job.once.pg() {
        return claim_in_postgres(pg, job.clone());
    }
    let inner = job.once.core.bucket.store.inner.clone();
    let (t, holder) = (job.t.clone(), job.runs().holder.clone());
    let j = job.clone();
    let queued = inner.writer.submit(
        0,
        move |w: &mut WriteCtx<'_>| op_claim(&t, w, &holder),
        move |r| settle(j, r),
    );
    if let Err(e) = queued {
        job.runs().release(&run_key(&job.t));
        job.finish(Err(e));
    }
}

fn settle(job: Arc<Begin>, r: Result<FileClaim>) {
    match r {
        Ok(FileClaim::Claimed) => {
            if job.once.pg().is_none() {
                // A claim in the file lasts while its lease is renewed; one
                // in PostgreSQL while the store's session lives.
                job.runs().claimed_in_file();
            }
            let claim = Claim {
                held: Some((job.once.clone(), job.t.clone())),
            };
            job.finish(Ok(Begun::Run(claim)));
        }
        Ok(FileClaim::Kept(v)) => {
            job.runs().release(&run_key(&job.t));
            job.finish(Ok(Begun::Kept(v)));
        }
        Ok(FileClaim::Busy) => poll_later(job),
        Err(e) => {
            job.runs().release(&run_key(&job.t));
            job.finish(Err(e));
        }
    }
}

/// Looks at the file again after a poll interval: another process runs the key.
fn poll_later(job: Arc<Begin>) {
    job.runs().polled_busy();
    let timer = job.runs().timer.clone();
    if let Some(claims) = job.once.pg().map(|pg| pg.claims.clone()) {
        return wait_in_postgres(&claims, &timer, job);
    }
    timer.at(Instant::now() + ONCE_POLL, move || poll(job));
}

fn poll(job: Arc<Begin>) {
    let inner = job.once.core.bucket.store.inner.clone();
    let now = inner.clock.now_millis();
    let holder = job.runs().holder.clone();
    match inner.readers.with(|c| peek_claim(&job.t, c, now, &holder)) {
        Ok(Some(FileClaim::Busy)) => poll_later(job),
        Ok(Some(FileClaim::Kept(v))) => {
            job.runs().release(&run_key(&job.t));
            job.finish(Ok(Begun::Kept(v)));
        }
        Ok(_) => claim_in_file(job),
        Err(e) => {
            job.runs().release(&run_key(&job.t));
            job.finish(Err(e));
        }
    }
}

/// Lets go of a run keeping nothing: in the file, then in this store, so
/// that a waiter's claim is written after the release.
fn let_go(once: &RawOnce, t: &Target) {
    if let Some(pg) = once.pg() {
        return let_go_in_postgres(pg, once, t);
    }
    let runs = &once.core.runs;
    runs.released_in_file();
    let (id, path, holder) = (t.core.id, t.path().to_vec(), runs.holder.clone());
    let inner = &once.core.bucket.store.inner;
    let log_id = inner.log_id;
    let _ = inner.writer.submit(
        0,
        move |w: &mut WriteCtx<'_>| storage::run_release(w.conn, id, &path, &holder),
        move |r: Result<()>| {
            if let Err(e) = r {
                // The lease ends on its own: the key is runnable again then.
                log::warn!(store = log_id; "tinystore: letting go of a run of once failed: {e}");
            }
        },
    );
    runs.release(&run_key(t));
}

/// Claims the key in PostgreSQL, holding it in this store meanwhile.
fn claim_in_postgres(pg: &PgStore, job: Arc<Begin>) {
    let (claims, now) = (pg.claims.clone(), clock_of(&job.t.core));
    let (id, path) = run_key(&job.t);
    let j = job.clone();
    let spawned = pg.spawn(
        move |pool, _| async move { pg_once::claim(&pool, &claims, id, &path, now).await },
        move |r| {
            let r = r
                .map(|c| match c {
                    Claimed::Run => FileClaim::Claimed,
                    Claimed::Kept(v) => FileClaim::Kept(v),
                    Claimed::Busy => FileClaim::Busy,
                })
                .map_err(|e| j.t.name(e));
            settle(j, r)
        },
    );
    if let Err(e) = spawned {
        job.runs().release(&run_key(&job.t));
        job.finish(Err(job.t.name(e)));
    }
}

/// Claims again when the holder's run ends (its notification) or after a
/// poll interval (a notification lost, or a holder that died), whichever
/// comes first.
fn wait_in_postgres(claims: &pg_once::Claims, timer: &Arc<super::timer::Timer>, job: Arc<Begin>) {
    let fired = Arc::new(AtomicBool::new(false));
    let go = |job: Arc<Begin>, fired: Arc<AtomicBool>| {
        move || {
            if !fired.swap(true, std::sync::atomic::Ordering::AcqRel) {
                claim_in_file(job);
            }
        }
    };
    let (id, path) = run_key(&job.t);
    claims.wait(id, &path, fired.clone(), Box::new(go(job.clone(), fired.clone())));
    timer.at(Instant::now() + pg_once::POLL, go(job, fired));
}

/// Lets go of a run keeping nothing: in PostgreSQL, then in this store once
/// the release is answered, so that a waiter here claims after it.
fn let_go_in_postgres(pg: &PgStore, once: &RawOnce, t: &Target) {
    let (claims, (id, path)) = (pg.claims.clone(), run_key(t));
    let (once2, t2) = (once.clone(), t.clone());
    let spawned = pg.spawn(
        move |pool, sent| async move { pg_once::release(&pool, &claims, &sent, id, &path).await },
        move |r: Result<()>| {
            if let Err(e) = r {
                // The claim goes with the store's session at the latest.
                let log_id = once2.core.bucket.store.inner.log_id;
                log::warn!(store = log_id; "tinystore: letting go of a run of once failed: {e}");
            }
            once2.core.runs.release(&run_key(&t2));
        },
    );
    if spawned.is_err() {
        once.core.runs.release(&run_key(t));
    }
}

/// [`Claim::keep`] on PostgreSQL: the answer, the release and the waiters'
/// notification in one statement.
fn keep_in_postgres(
    pg: &PgStore,
    once: &RawOnce,
    t: Target,
    value: Raw,
    done: impl FnOnce(Result<()>) + Send + 'static,
) {
    let (claims, (id, path)) = (pg.claims.clone(), run_key(&t));
    let (keep_ms, now) = (once.core.keep_ms, clock_of(&t.core));
    let (once2, t2) = (once.clone(), t.clone());
    let done = Arc::new(Mutex::new(Some(done)));
    let answer = done.clone();
    let spawned = pg.spawn(
        move |pool, sent| async move { pg_once::keep(&pool, &claims, &sent, (id, &path), &value, keep_ms, now).await },
        move |r: Result<()>| {
            match &r {
                Ok(()) => once2.core.runs.release(&run_key(&t2)),
                Err(_) => let_go(&once2, &t2),
            }
            if let Some(d) = lock(&answer).take() {
                d(r.map_err(|e| t2.name(e)));
            }
        },
    );
    if let Err(e) = spawned {
        let_go(once, &t);
        if let Some(d) = lock(&done).take() {
            d(Err(t.name(e)));
        }
    }
}

impl CallerContext {
    /// This context inside the run `claim` holds (one that kept or let go
    /// adds nothing).
    pub fn inside_run(&self, claim: &Claim) -> CallerContext {
        match claim.mark() {
            Some((store, mark)) => self.with_run(store, mark),
            None => self.clone(),
        }
    }
}

impl Claim {
    /// The store and key of this run while it is held: what a caller's
    /// context records to refuse a run of the key inside it.
    fn mark(&self) -> Option<(&Store, RunKey)> {
        self.held
            .as_ref()
            .map(|(once, t)| (&once.core.bucket.store, run_key(t)))
    }

    /// Keeps `value` as the key's answer and lets go, in one durable write;
    /// waiters then get it. `done` gets the outcome on the writer thread
    /// (on PostgreSQL, the store's answers thread).
    /// The write happens even if nobody waits for `done` any more. If it
    /// fails, nothing is kept and the key is let go.
    pub fn keep(mut self, value: Raw, done: impl FnOnce(Result<()>) + Send + 'static) {
        let Some((once, t)) = self.held.take() else {
            return done(Err(Error::invalid("this run was already let go")));
        };
        if let Err(e) = value.check_size() {
            let_go(&once, &t);
            return done(Err(t.name(e)));
        }
        if let Some(pg) = once.pg() {
            return keep_in_postgres(pg, &once, t, value, done);
        }
        let done = Arc::new(Mutex::new(Some(done)));
        let answer = done.clone();
        let (t2, t3, once2) = (t.clone(), t.clone(), once.clone());
        let (keep_ms, holder) = (once.core.keep_ms, once.core.runs.holder.clone());
        let weight = value.encoded_len();
        let queued = once.core.bucket.store.inner.writer.submit(
            weight,
            move |w: &mut WriteCtx<'_>| op_keep(&t2, w, &value, keep_ms, &holder),
            move |r: Result<()>| {
                match &r {
                    Ok(()) => {
                        once2.core.runs.released_in_file();
                        once2.core.runs.release(&run_key(&t3));
                    }
                    Err(_) => let_go(&once2, &t3),
                }
                if let Some(d) = lock(&answer).take() {
                    d(r);
                }
            },
        );
        if let Err(e) = queued {
            let_go(&once, &t);
            if let Some(d) = lock(&done).take() {
                d(Err(e));
            }
        }
    }

    /// [`Claim::keep`], waiting for the write.
    fn keep_blocking(self, value: Raw) -> Result<()> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.keep(value, move |r| {
            let _ = tx.send(r);
        });
        rx.recv().unwrap_or_else(|_| Err(Error::closed()))
    }

    /// Lets go keeping nothing (the work failed): the next run of the key,
    /// or a waiter, runs it again.
    pub fn abandon(mut self) {
        if let Some((once, t)) = self.held.take() {
            let_go(&once, &t);
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some((once, t)) = self.held.take() {
            let_go(&once, &t);
        }
    }
}

thread_local! {
    /// The runs this thread is inside with [`Once::run`]: a run of one of
    /// them would wait for itself.
    static RUNNING: RefCell<CallerContext> = RefCell::new(CallerContext::new());
}

/// Puts this thread inside a run while it lives.
struct Running(Option<CallerContext>);

impl Running {
    fn enter(claim: &Claim) -> Running {
        Running(Some(RUNNING.with(|r| {
            let inner = r.borrow().inside_run(claim);
            r.replace(inner)
        })))
    }
}

/// Runs `f` with this thread inside the run `claim` holds, so that a run of
/// the same key from inside it is refused instead of waiting for itself.
/// The async form calls it around each poll of the run's future.
pub(crate) fn inside_run<R>(claim: &Claim, f: impl FnOnce() -> R) -> R {
    let _running = Running::enter(claim);
    f()
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(outer) = self.0.take() {
            RUNNING.with(|r| r.replace(outer));
        }
    }
}

/// A once whose answers are of type `T`, or one branch of it.
pub struct Once<T> {
    raw: RawOnce,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Once<T> {
    fn clone(&self) -> Self {
        Once {
            raw: self.raw.clone(),
            _t: PhantomData,
        }
    }
}

impl<T> fmt::Debug for Once<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt(f)
    }
}

impl<T: Serialize + DeserializeOwned + Send + 'static> Once<T> {
    /// The once's name.
    pub fn name(&self) -> &str {
        self.raw.name()
    }

    /// The untyped once underneath, on the same branch.
    pub fn raw(&self) -> &RawOnce {
        &self.raw
    }

    /// The branch of `owner`: its keys run apart from the others.
    pub fn under(&self, owner: impl AsKey) -> Once<T> {
        Once {
            raw: self.raw.under(owner),
            _t: PhantomData,
        }
    }

    /// Returns the answer kept for the key, or runs `f` and keeps what it
    /// returns for the once's `keep`. A run of the key elsewhere, in this
    /// process or another, is waited for and its answer returned. An error
    /// or a panic of `f` keeps nothing, and the next run runs `f` again. A
    /// run of the key inside its own `f` is `Invalid`.
    pub fn run(&self, key: impl AsKey, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.run_waiting(key, None, f)
    }

    /// [`Once::run`], waiting at most `wait` for a run of the key elsewhere
    /// (a run that is alive but stuck holds its claim as long as it lives).
    /// A wait that runs out is `Cancelled`, [`waiter_gave_up`], and runs
    /// nothing; the kept answer or the key's own run is not waited for.
    pub fn run_within(&self, key: impl AsKey, wait: Duration, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.run_waiting(key, Some(wait), f)
    }

    fn run_waiting(&self, key: impl AsKey, wait: Option<Duration>, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        let t = self.raw.begin_here(&key.key_bytes(), move |r| {
            // A waiter that gave up has dropped `rx`: the claim sent to it is
            // dropped here, which lets go keeping nothing.
            let _ = tx.send(r);
        })?;
        let begun = match wait {
            None => rx.recv().unwrap_or_else(|_| Err(Error::closed())),
            Some(d) => match rx.recv_timeout(d) {
                Ok(r) => r,
                Err(mpsc::RecvTimeoutError::Timeout) => Err(t.name(waiter_gave_up())),
                Err(mpsc::RecvTimeoutError::Disconnected) => Err(Error::closed()),
            },
        };
        match begun? {
            Begun::Kept(raw) => decode(&raw).map_err(|e| t.name(e)),
            Begun::Run(claim) => {
                let value = inside_run(&claim, f)?; // dropping the claim lets go, keeping nothing
                let raw = encode(&value).map_err(|e| t.name(e))?;
                claim.keep_blocking(raw)?;
                Ok(value)
            }
        }
    }

    /// The answer kept for the key, if any.
    pub fn get(&self, key: impl AsKey) -> Result<Option<T>> {
        let k = key.key_bytes();
        match self.raw.get(&*k)? {
            None => Ok(None),
            Some(raw) => decode(&raw)
                .map(Some)
                .map_err(|e| e.at(self.raw.name(), self.raw.branch.show_with(Some(&k)))),
        }
    }

    /// Forgets the answer kept for the key; says whether one was kept.
    pub fn delete(&self, key: impl AsKey) -> Result<bool> {
        self.raw.delete(key)
    }
}
