//! The writer: one thread that owns kv.db's write connection and commits
//! every write waiting when it is free as one group.
//!
//! Invariants:
//! - A group is one `BEGIN IMMEDIATE` transaction, and a write that fails
//!   rolls back alone (KV-15): a write of several statements runs in its own
//!   savepoint; a write of one statement ([`Isolation::OneStatement`]) needs
//!   none, because SQLite undoes a failed statement by itself, and skipping
//!   the savepoint is a third of the cost of a small `set`.
//! - A write is answered only after the group's `COMMIT` returned, which with
//!   `synchronous=FULL` means synced. A failed commit answers
//!   `OutcomeUnknown` to every write of the group that had succeeded.
//! - Answers are given by completions (callbacks) on the writer thread, in
//!   queue order, so no caller parks a thread to wait: a binding resolves its
//!   Promise or Future from here. A blocking Rust call is the completion
//!   form plus a parked thread; the writer wakes only the first blocked
//!   caller of a group, and the callers wake each other as a tree. A
//!   blocking call that finds nothing queued and the connection free commits
//!   its write as a group of one on its own thread, the way `tx` does: two
//!   thread hand-offs less for a lone writer.
//! - A write cancelled before its group starts is never run.
//! - A group that a burst's write started ([`submit_together`], [`Burst`])
//!   takes the burst's later writes as they come, and commits when the
//!   burst ends, goes quiet for [`BURST_GAP_AT_MOST`], or has been open for
//!   [`BURST_WAIT_AT_MOST`]: a burst never holds a group for longer.
//! - `tx` takes the same connection in the caller's thread, so a transaction
//!   and a group never interleave.

use std::cell::Cell as StdCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::storage::file::BUSY_TIMEOUT;
use crate::storage::hot::{HotStatement, WriteConn};
use crate::storage::turns::Turns;
use crate::storage::{self, sql};

/// The most writes one group commits.
const GROUP_MAX_WRITES: usize = 1024;
/// The most bytes of values one group carries; a heavier write goes alone.
const GROUP_MAX_BYTES: usize = 8 << 20;
/// The longest a group waits, from its start, for the rest of an open
/// burst ([`submit_together`]) before it commits what it has.
const BURST_WAIT_AT_MOST: Duration = Duration::from_millis(2);
/// The longest a group waits for a burst's next write; a burst that went
/// quiet (its thread runs other work) does not hold the group.
const BURST_GAP_AT_MOST: Duration = Duration::from_micros(200);
/// How long the writer polls for a burst's next write before it sleeps:
/// waking a sleeping thread costs more than this on a virtual machine.
/// It polls with `sched_yield`, not a busy spin: the burst's thread is
/// often on the writer's own core (the scheduler puts a woken thread beside
/// its waker), and a busy spin there kept that thread from submitting the
/// very writes it waited for. Measured on the 2-core VM, `prof burst 64`,
/// 8 and 14 alternating rounds: yielding was 1.04 times the busy spin's
/// rate (paired medians), and the writer's wait for the burst fell from
/// about 40 to 18 µs a group.
const BURST_SPIN: Duration = Duration::from_micros(50);

thread_local! {
    /// Set on the writer thread: a blocking write from a completion would
    /// wait for itself.
    static ON_WRITER: StdCell<bool> = const { StdCell::new(false) };
    /// The writers whose connection this thread holds in a `tx`.
    static IN_TX: StdCell<usize> = const { StdCell::new(0) };
    /// Set inside [`submit_together`]: the writers this thread's burst
    /// writes to, each counting it among its open bursts.
    static BURST: std::cell::RefCell<Option<Vec<Arc<Shared>>>> = const { std::cell::RefCell::new(None) };
    /// On the writer thread: what [`after_answers`] put off until the group is answered.
    static AFTER: std::cell::RefCell<Vec<Box<dyn FnOnce()>>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Set inside [`submit_waited`]: this thread waits for what it submits.
    static WAITS: StdCell<bool> = const { StdCell::new(false) };
    /// On the writer thread: the blocking callers answered in this group,
    /// in order, still to be woken.
    static BLOCKED: std::cell::RefCell<Vec<Arc<dyn Blocked>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` once the writer has answered every write of the group it is
/// answering, when called from a write's completion on the writer thread;
/// elsewhere, at once. For bindings that wake another thread (an event loop)
/// to resolve answers: one wake-up per group instead of one for the first
/// answer, which would resolve the group's answers in several passes and
/// split the next burst of writes into several groups.
pub fn after_answers(f: impl FnOnce() + 'static) {
    if ON_WRITER.with(|w| w.get()) {
        AFTER.with(|a| a.borrow_mut().push(Box::new(f)));
    } else {
        f();
    }
}

/// A blocking caller whose answer is given, waiting to be woken.
trait Blocked {
    fn thread(&self) -> &Thread;
    /// Tells the caller its place in the group's wake-up tree, and that its
    /// answer is there.
    fn release(&self, tree: &Arc<[Thread]>, place: usize);
}

/// Where the writer leaves a blocking caller's answer.
///
/// The callers of a group are woken as a tree, not one by one by the
/// writer: the writer wakes the first, and each caller, once awake, wakes
/// the two after it (places 2i+1 and 2i+2). Waking a parked thread costs
/// the waker a system call and, on a virtual machine, an interrupt to an
/// idle core; 64 of them in a row kept the writer from its next group for
/// half a millisecond, a third of its time.
struct Answer<T> {
    out: Mutex<Option<Result<T>>>,
    tree: OnceLock<(Arc<[Thread]>, usize)>,
    /// Set after `out` and `tree`: the caller may take them.
    ready: AtomicBool,
    caller: Thread,
}

impl<T> Blocked for Answer<T> {
    fn thread(&self) -> &Thread {
        &self.caller
    }
    fn release(&self, tree: &Arc<[Thread]>, place: usize) {
        let _ = self.tree.set((tree.clone(), place));
        self.ready.store(true, Ordering::Release);
    }
}

impl<T> Answer<T> {
    /// Waits for the answer, then wakes this caller's part of the tree.
    fn wait(&self) -> Result<T> {
        while !self.ready.load(Ordering::Acquire) {
            std::thread::park();
        }
        if let Some((tree, place)) = self.tree.get() {
            for next in [2 * place + 1, 2 * place + 2] {
                if let Some(t) = tree.get(next) {
                    t.unpark();
                }
            }
        }
        lock(&self.out).take().unwrap_or_else(|| Err(Error::closed()))
    }

    /// Gives the answer: on the writer thread, to be woken with the rest of
    /// the group ([`wake_blocked`]); anywhere else, at once.
    fn give(self: Arc<Self>, out: Result<T>)
    where
        T: 'static,
    {
        *lock(&self.out) = Some(out);
        if ON_WRITER.with(|w| w.get()) {
            BLOCKED.with(|b| b.borrow_mut().push(self));
        } else {
            self.ready.store(true, Ordering::Release);
            self.caller.unpark();
        }
    }
}

/// The completion of a blocking call. Dropped unanswered (a write dropped
/// with its queue), it wakes its caller with `Closed`, as a channel whose
/// sender went away would.
struct GiveAnswer<T>(Option<Arc<Answer<T>>>);

impl<T> Drop for GiveAnswer<T> {
    fn drop(&mut self) {
        if let Some(a) = self.0.take() {
            a.ready.store(true, Ordering::Release);
            a.caller.unpark();
        }
    }
}

/// Wakes the blocking callers this group answered: the first, which wakes
/// the rest as a tree ([`Answer`]).
fn wake_blocked() {
    let blocked = BLOCKED.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let Some(first) = blocked.first() else { return };
    let first = first.thread().clone();
    let tree: Arc<[Thread]> = blocked.iter().map(|b| b.thread().clone()).collect();
    for (place, b) in blocked.iter().enumerate() {
        b.release(&tree, place);
    }
    first.unpark();
}

/// Runs what [`after_answers`] put off.
fn run_after_answers() {
    for f in AFTER.with(|a| std::mem::take(&mut *a.borrow_mut())) {
        f();
    }
}

/// Runs `f` as one burst of writes: every write it submits joins the
/// group the first one starts, which stays open while `f` runs (up to
/// [`BURST_WAIT_AT_MOST`], and [`BURST_GAP_AT_MOST`] between two writes).
/// The writer runs each write as it comes, while this thread makes the
/// next, and commits when `f` returns: one group, one fsync, and the two
/// threads working at once rather than in turn. For bindings that submit a
/// burst of writes (every `set` of one event-loop turn) from one thread.
pub fn submit_together<R>(f: impl FnOnce() -> R) -> R {
    let _burst = Burst::start();
    f()
}

/// Runs `f`, whose writes (the completion forms, `*_then`) the calling
/// thread then waits for: for a binding whose blocking calls are a submit
/// and a wait (the C ABI, so that a cancel can give up on a queued write).
/// Such a write commits on this thread, as a blocking call does, when
/// nothing is queued and the writer is free: two thread switches instead of
/// four. Never from an event loop, which must not wait out a commit.
pub fn submit_waited<R>(f: impl FnOnce() -> R) -> R {
    /// Clears the mark however `f` ends, a panic too.
    struct Waits(bool);
    impl Drop for Waits {
        fn drop(&mut self) {
            WAITS.with(|w| w.set(self.0));
        }
    }
    let _restore = Waits(WAITS.with(|w| w.replace(true)));
    f()
}

/// A burst of writes from this thread, open until the guard is dropped:
/// [`submit_together`] for a binding whose burst spans several calls into
/// it (every `set` of one event-loop turn, submitted as it is made, with
/// the guard dropped when the turn ends). A burst inside another is part
/// of it. Bound to its thread.
pub struct Burst {
    outer: bool,
    _thread: std::marker::PhantomData<*const ()>,
}

impl Burst {
    /// Opens a burst on this thread, or joins the one open.
    pub fn start() -> Burst {
        let nested = BURST.with(|b| {
            let mut b = b.borrow_mut();
            let nested = b.is_some();
            b.get_or_insert_with(Vec::new);
            nested
        });
        Burst {
            outer: !nested,
            _thread: std::marker::PhantomData,
        }
    }
}

impl Drop for Burst {
    fn drop(&mut self) {
        if self.outer {
            close_bursts(BURST.with(|b| b.borrow_mut().take()).unwrap_or_default());
        }
    }
}

/// Ends this thread's burst at each writer: a group waiting for it commits.
fn close_bursts(writers: Vec<Arc<Shared>>) {
    for shared in writers {
        let mut q = lock(&shared.queue);
        q.bursts -= 1;
        shared.pushes.fetch_add(1, Ordering::Release);
        let wake = q.bursts == 0 && q.gathering;
        drop(q);
        if wake {
            shared.wake.notify_one();
        }
    }
}

/// Ends this thread's burst now, inside [`submit_together`]: for a caller
/// about to wait for something only its writes can give back (the memory
/// budget), which would otherwise keep their group waiting for the burst.
/// Its later writes start a burst of their own.
pub(crate) fn submit_held_now() {
    let writers = BURST.with(|b| b.borrow_mut().as_mut().map(std::mem::take));
    if let Some(writers) = writers {
        close_bursts(writers);
    }
}

/// What a write sees while it runs: the connection inside the group's
/// transaction, the time, and the file's revision counter.
pub struct WriteCtx<'a> {
    pub(crate) conn: &'a Connection,
    /// The write connection, for its statement of the common `set`.
    write_conn: &'a WriteConn,
    /// The store's clock when the group started, in ms.
    pub(crate) now: i64,
    rev: i64,
    dirty: bool,
}

impl<'a> WriteCtx<'a> {
    fn new(conn: &'a WriteConn, now: i64, rev: i64) -> WriteCtx<'a> {
        WriteCtx {
            conn,
            write_conn: conn,
            now,
            rev,
            dirty: false,
        }
    }

    /// The statement of the common `set` ([`crate::sql::CELL_SET`]),
    /// prepared once for the connection's life.
    pub(crate) fn cell_set(&self) -> std::cell::RefMut<'a, HotStatement> {
        self.write_conn.cell_set()
    }

    /// A new revision of the file: the version of what this write writes.
    /// Versions never repeat because the counter lives in the file and
    /// moves inside the same transaction as the write.
    pub(crate) fn next_version(&mut self) -> i64 {
        self.rev += 1;
        self.dirty = true;
        self.rev
    }

    /// Runs `f` in a savepoint: when it fails, nothing it changed stays. For
    /// a write that runs without one ([`Isolation::OneStatement`]) and finds
    /// that it must change more than one row after all.
    pub(crate) fn savepoint<T>(&mut self, f: impl FnOnce(&mut WriteCtx<'a>) -> Result<T>) -> Result<T> {
        storage::run_tx_statement(self.conn, sql::INNER_SAVEPOINT)?;
        let out = f(self);
        if self.conn.is_autocommit() {
            return out; // SQLite ended the whole transaction (I/O failure)
        }
        let end = match out {
            Ok(_) => storage::run_tx_statement(self.conn, sql::INNER_RELEASE),
            Err(_) => storage::run_tx_statement(self.conn, sql::INNER_ROLLBACK)
                .and_then(|()| storage::run_tx_statement(self.conn, sql::INNER_RELEASE)),
        };
        end?;
        out
    }
}

/// How a write is kept apart from the other writes of its group, so that
/// when it fails nothing of it stays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isolation {
    /// In a savepoint of its own: a write that may change several rows.
    Savepoint,
    /// A write that changes the file with at most one statement, after any
    /// reads, and fails before that statement or in it: SQLite undoes a
    /// failed statement alone.
    OneStatement,
}

/// A write waiting for its group.
trait WriteOp: Send {
    fn cancelled(&self) -> bool;
    fn weight(&self) -> usize;
    fn isolation(&self) -> Isolation;
    /// Runs inside its savepoint; returns whether it failed (to roll back).
    fn run(&mut self, ctx: &mut WriteCtx<'_>) -> bool;
    /// Answers the caller. `commit` is the commit's failure, if any;
    /// `refused` answers a write that never ran.
    fn finish(self: Box<Self>, commit: Option<&Error>, refused: Option<Error>);
}

/// One write: `state` is what its work and its completion share (for a
/// bucket's write, the key it names in errors), kept in the write's one
/// allocation rather than behind an `Arc` of its own.
struct Job<S, T, F, C> {
    state: Option<S>,
    work: Option<F>,
    done: Option<C>,
    out: Option<Result<T>>,
    cancel: Option<Arc<AtomicBool>>,
    weight: usize,
    isolation: Isolation,
}

impl<S, T, F, C> WriteOp for Job<S, T, F, C>
where
    S: Send,
    T: Send,
    F: FnOnce(&S, &mut WriteCtx<'_>) -> Result<T> + Send,
    C: FnOnce(S, Result<T>) + Send,
{
    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.load(Ordering::Acquire))
    }
    fn weight(&self) -> usize {
        self.weight
    }
    fn isolation(&self) -> Isolation {
        self.isolation
    }
    fn run(&mut self, ctx: &mut WriteCtx<'_>) -> bool {
        let work = self.work.take().expect("a write runs once");
        let state = self.state.as_ref().expect("a write's state lives until it is answered");
        let out = work(state, ctx);
        let failed = out.is_err();
        self.out = Some(out);
        failed
    }
    fn finish(mut self: Box<Self>, commit: Option<&Error>, refused: Option<Error>) {
        let out = match (self.out.take(), commit, refused) {
            (_, _, Some(e)) => Err(e),
            (Some(Ok(_)), Some(e), _) => Err(Error::outcome_unknown(e)),
            (Some(r), _, _) => r,
            (None, _, None) => Err(Error::new(
                ErrorKind::Cancelled,
                "the write was cancelled before it started",
            )),
        };
        if let (Some(done), Some(state)) = (self.done.take(), self.state.take()) {
            done(state, out);
        }
    }
}

/// Counts of what the writer committed: how well writes group.
#[derive(Debug, Default)]
pub struct GroupStats {
    groups: AtomicU64,
    writes: AtomicU64,
    fail_next_commit: AtomicBool,
}

impl GroupStats {
    /// Groups committed and writes in them, since the store opened.
    pub fn snapshot(&self) -> (u64, u64) {
        (self.groups.load(Ordering::Relaxed), self.writes.load(Ordering::Relaxed))
    }
}

/// A handle that lets a caller give up on a write before it starts.
#[derive(Clone, Debug)]
pub struct Ticket(Arc<AtomicBool>);

impl Ticket {
    /// The ticket of a call that finished without waiting for the writer
    /// (a `flush_every` counter's change): cancelling it does nothing.
    #[allow(dead_code)] // until the counters land
    pub(crate) fn finished() -> Ticket {
        Ticket(Arc::new(AtomicBool::new(true)))
    }

    /// Gives up on the write: if its group has not started, it never runs
    /// and its completion gets `Cancelled`.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }
}

struct Queue {
    ops: VecDeque<Box<dyn WriteOp>>,
    closed: bool,
    /// The writer is waiting on `wake`. Changed and read under the queue's
    /// lock, so a push that sees it false needs no wake-up: the writer will
    /// look at the queue before it waits. Skipping the wake-up spares each
    /// caller a system call while the writer is busy with a group.
    idle: bool,
    /// Threads inside [`submit_together`] that wrote to this writer: while
    /// there are any, a group waits for more of their writes.
    bursts: usize,
    /// The writer is waiting on `wake` for a burst's next write.
    gathering: bool,
}

struct Shared {
    stats: GroupStats,
    queue: Mutex<Queue>,
    /// Moves at every push and at every burst's end, under the queue's
    /// lock: a writer gathering a burst polls it without taking the
    /// lock, which the burst's thread needs for each push.
    pushes: AtomicU64,
    wake: Condvar,
    conn: Mutex<Option<WriteConn>>,
    /// Taken after `conn`, never alone before it.
    turns: Mutex<Turns>,
    clock: Clock,
    /// Writes in the last group committed: while groups hold more than
    /// one, writers are many, and a blocking call queues its write to
    /// join them rather than commit it alone ([`Writer::run_here`]).
    last_group: AtomicUsize,
}

/// The writer of one store.
pub(crate) struct Writer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    /// Starts the writer thread on `conn`, taking turns at the write lock
    /// with the writers of other processes through `turns`.
    pub fn start(conn: Connection, turns: Turns, clock: Clock) -> Result<Writer> {
        let conn = WriteConn::new(conn)?;
        let shared = Arc::new(Shared {
            stats: GroupStats::default(),
            queue: Mutex::new(Queue {
                ops: VecDeque::new(),
                closed: false,
                idle: false,
                bursts: 0,
                gathering: false,
            }),
            wake: Condvar::new(),
            pushes: AtomicU64::new(0),
            conn: Mutex::new(Some(conn)),
            turns: Mutex::new(turns),
            clock,
            last_group: AtomicUsize::new(0),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("tinystore-writer".into())
            .spawn(move || run(s))?;
        Ok(Writer {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues `work` for the next group and returns at once; `done` gets its
    /// result on the writer thread once the group committed.
    pub fn submit<T, F, C>(&self, weight: usize, work: F, done: C) -> Result<Ticket>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        self.submit_as(weight, Isolation::Savepoint, work, done)
    }

    /// [`Writer::submit`] for a write that says how it must be isolated.
    pub fn submit_as<T, F, C>(&self, weight: usize, isolation: Isolation, work: F, done: C) -> Result<Ticket>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        self.submit_with(weight, isolation, (), move |(), w| work(w), move |(), r| done(r))
            .map_err(|(e, ())| e)
    }

    /// [`Writer::submit_as`] with `state` that the work borrows and the
    /// completion then owns. A write the writer refuses at once (it is
    /// closed) hands `state` back with the error.
    pub(crate) fn submit_with<S, T, F, C>(
        &self,
        weight: usize,
        isolation: Isolation,
        state: S,
        work: F,
        done: C,
    ) -> std::result::Result<Ticket, (Error, S)>
    where
        S: Send + 'static,
        T: Send + 'static,
        F: FnOnce(&S, &mut WriteCtx<'_>) -> Result<T> + Send + 'static,
        C: FnOnce(S, Result<T>) + Send + 'static,
    {
        let (mut job, cancel) = new_job(weight, isolation, state, work, done);
        let q = lock(&self.shared.queue);
        if q.closed {
            drop(q);
            let state = job.state.take().expect("the state was just put there");
            return Err((Error::closed(), state));
        }
        if WAITS.with(|w| w.get()) && !ON_WRITER.with(|w| w.get()) {
            self.run_here_or_push(q, job);
        } else {
            self.push(q, job);
        }
        Ok(Ticket(cancel))
    }

    /// Commits `job` on this thread when it would be alone, else queues it.
    /// Alone: nothing queued (so no earlier write of this thread), no burst
    /// open, no sign of other writers (else the first caller a group woke
    /// would commit alone, and split every group in two), and the
    /// connection free. The lock order is the writer's (connection, then
    /// queue) reversed, so only a try.
    fn run_here_or_push(&self, q: MutexGuard<'_, Queue>, job: Box<dyn WriteOp>) {
        let alone = q.ops.is_empty()
            && q.bursts == 0
            && BURST.with(|b| b.borrow().is_none())
            && self.shared.last_group.load(Ordering::Relaxed) <= 1;
        match self.shared.conn.try_lock() {
            Ok(conn) if alone => {
                drop(q);
                self.run_here(conn, job);
            }
            _ => self.push(q, job),
        }
    }

    /// Queues `job` for the next group, waking the writer when it waits.
    fn push(&self, mut q: MutexGuard<'_, Queue>, job: Box<dyn WriteOp>) {
        let joins_burst = BURST.with(|b| match b.borrow_mut().as_mut() {
            Some(writers) if !writers.iter().any(|w| Arc::ptr_eq(w, &self.shared)) => {
                writers.push(self.shared.clone());
                true
            }
            _ => false,
        });
        if joins_burst {
            q.bursts += 1;
        }
        q.ops.push_back(job);
        self.shared.pushes.fetch_add(1, Ordering::Release);
        let wake = q.idle || q.gathering;
        drop(q);
        if wake {
            self.shared.wake.notify_one();
        }
    }

    /// Commits `job` as a group of its own on this thread, holding the
    /// writer's connection: for a blocking call that finds no write queued
    /// and the connection free, which would otherwise wake the writer
    /// thread and wait to be woken in turn. Writes queued meanwhile wait
    /// for the connection and form the writer's next group.
    fn run_here(&self, guard: MutexGuard<'_, Option<WriteConn>>, job: Box<dyn WriteOp>) {
        let shared = &self.shared;
        let began = match guard.as_ref() {
            Some(conn) => lock(&shared.turns).begin(conn, BUSY_TIMEOUT),
            None => Err(Error::closed()),
        };
        let conn = match began {
            Ok(()) => guard.as_ref().expect("a transaction began on this connection"),
            Err(e) => {
                drop(guard);
                job.finish(None, Some(e));
                return;
            }
        };
        let leftover = commit_group(conn, shared, vec![job], false);
        drop(guard);
        lock(&shared.turns).after_commit();
        put_back(shared, leftover);
    }

    /// Runs `work` in the next group and waits for its commit.
    pub fn call<T, F>(&self, weight: usize, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T> + Send + 'static,
    {
        self.call_as(weight, Isolation::Savepoint, work)
    }

    /// [`Writer::call`] for a write that says how it must be isolated.
    pub fn call_as<T, F>(&self, weight: usize, isolation: Isolation, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T> + Send + 'static,
    {
        self.call_with(weight, isolation, (), move |(), w| work(w), |(), e| e)
    }

    /// [`Writer::call_as`] with `state` that the work borrows, and that
    /// `name` uses to add to every error of the call, the writer's own
    /// (closed, cancelled, outcome unknown) too.
    pub(crate) fn call_with<S, T, F>(
        &self,
        weight: usize,
        isolation: Isolation,
        state: S,
        work: F,
        name: fn(&S, Error) -> Error,
    ) -> Result<T>
    where
        S: Send + 'static,
        T: Send + 'static,
        F: FnOnce(&S, &mut WriteCtx<'_>) -> Result<T> + Send + 'static,
    {
        if ON_WRITER.with(|w| w.get()) {
            return Err(name(
                &state,
                Error::invalid("a blocking write was called from inside a write's completion; use the completion form"),
            ));
        }
        if IN_TX.with(|t| t.get()) == self.id() {
            return Err(name(
                &state,
                Error::invalid(
                    "a write outside the transaction was called from inside it; use the transaction's handles (tx.with)",
                ),
            ));
        }
        let answer = Arc::new(Answer {
            out: Mutex::new(None),
            tree: OnceLock::new(),
            ready: AtomicBool::new(false),
            caller: std::thread::current(),
        });
        let mut give = GiveAnswer(Some(answer.clone()));
        let (mut job, _cancel) = new_job(weight, isolation, state, work, move |s, r: Result<T>| {
            if let Some(a) = give.0.take() {
                a.give(r.map_err(|e| name(&s, e)));
            }
        });
        let q = lock(&self.shared.queue);
        if q.closed {
            drop(q);
            let state = job.state.take().expect("the state was just put there");
            return Err(name(&state, Error::closed()));
        }
        self.run_here_or_push(q, job);
        answer.wait()
    }

    fn id(&self) -> usize {
        Arc::as_ptr(&self.shared) as usize
    }

    /// Runs `work` alone in its own transaction, in this thread: the
    /// all-or-nothing `tx`. `Ok` commits, an error rolls everything back.
    pub fn exclusive<T>(&self, work: impl FnOnce(&mut WriteCtx<'_>) -> Result<T>) -> Result<T> {
        if IN_TX.with(|t| t.get()) == self.id() {
            return Err(Error::invalid(
                "a transaction was opened inside another on the same store",
            ));
        }
        if ON_WRITER.with(|w| w.get()) {
            return Err(Error::invalid(
                "a transaction was opened from inside a write's completion",
            ));
        }
        let guard = lock(&self.shared.conn);
        let conn = guard.as_ref().ok_or_else(Error::closed)?;
        let now = self.shared.clock.now_millis();
        lock(&self.shared.turns).begin(conn, BUSY_TIMEOUT)?;
        let mut ctx = WriteCtx::new(conn, now, 0);
        let out = conn.revisions().start(conn).and_then(|rev| {
            ctx.rev = rev;
            /// Clears the thread's mark however `work` ends, a panic too.
            struct InTx;
            impl Drop for InTx {
                fn drop(&mut self) {
                    IN_TX.with(|t| t.set(0));
                }
            }
            IN_TX.with(|t| t.set(self.id()));
            let _in_tx = InTx;
            work(&mut ctx)
        });
        let out = out.and_then(|v| {
            if ctx.dirty {
                conn.revisions()
                    .finish(conn, ctx.rev, true, self.shared.clock.mark_millis())?;
            }
            Ok(v)
        });
        let out = match out {
            Ok(v) => match storage::run_tx_statement(conn, sql::COMMIT) {
                Ok(()) => Ok(v),
                Err(e) => {
                    conn.revisions().forget();
                    let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
                    Err(Error::outcome_unknown(&e.into()))
                }
            },
            Err(e) => {
                conn.revisions().forget();
                if !conn.is_autocommit() {
                    let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
                }
                Err(e)
            }
        };
        // Let go of the connection before yielding the write lock to other
        // processes: the group loop and the next `tx` of this process need
        // not wait out another process's turn.
        drop(guard);
        if out.is_ok() {
            lock(&self.shared.turns).after_commit();
        }
        out
    }

    /// What the writer committed so far.
    pub fn stats(&self) -> &GroupStats {
        &self.shared.stats
    }

    /// Makes the next group's commit fail as a failed fsync would, for tests
    /// of what callers are told (KV-15).
    pub fn fail_next_commit(&self) {
        self.shared.stats.fail_next_commit.store(true, Ordering::Release);
    }

    /// Stops taking writes, commits those queued, and stops the thread.
    pub fn close(&self) {
        lock(&self.shared.queue).closed = true;
        self.shared.wake.notify_all();
        let Some(t) = lock(&self.thread).take() else { return };
        if t.thread().id() == std::thread::current().id() {
            // The last handle was dropped inside a completion, on the writer
            // thread itself: it cannot wait for itself. It holds the
            // connection, and lets go of it when it drains the queue and
            // returns; the connection closes with the last reference.
            return;
        }
        let _ = t.join();
        lock(&self.shared.conn).take();
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

/// A write and the ticket that cancels it.
#[allow(clippy::type_complexity)]
fn new_job<S, T, F, C>(
    weight: usize,
    isolation: Isolation,
    state: S,
    work: F,
    done: C,
) -> (Box<Job<S, T, F, C>>, Arc<AtomicBool>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let job = Box::new(Job {
        state: Some(state),
        work: Some(work),
        done: Some(done),
        out: None,
        cancel: Some(cancel.clone()),
        weight,
        isolation,
    });
    (job, cancel)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in a completion must not wedge the store: the state behind
    // these locks stays consistent because every update is a single push,
    // pop or flag.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The writer thread: take a group, commit it, answer it, repeat.
fn run(shared: Arc<Shared>) {
    ON_WRITER.with(|w| w.set(true));
    loop {
        wake_blocked();
        run_after_answers();
        {
            let mut q = lock(&shared.queue);
            while q.ops.is_empty() && !q.closed {
                q.idle = true;
                q = shared.wake.wait(q).unwrap_or_else(|p| p.into_inner());
                q.idle = false;
            }
            if q.ops.is_empty() {
                return; // closed and drained
            }
        }
        // Take the connection and the write lock first, then the group: every
        // write that arrived while a `tx`, another process or the last commit
        // held the file joins this group.
        let guard = lock(&shared.conn);
        let began = match guard.as_ref() {
            Some(conn) => lock(&shared.turns).begin(conn, BUSY_TIMEOUT),
            None => Err(Error::closed()),
        };
        let group = take_group(&mut lock(&shared.queue).ops);
        let (group, cancelled): (Vec<_>, Vec<_>) = group.into_iter().partition(|op| !op.cancelled());
        for op in cancelled {
            op.finish(None, None);
        }
        let conn = match began {
            Ok(()) => guard.as_ref().expect("a transaction began on this connection"),
            Err(e) => {
                drop(guard);
                for op in group {
                    op.finish(None, Some(e.clone()));
                }
                continue;
            }
        };
        if group.is_empty() {
            let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
            continue;
        }
        let leftover = commit_group(conn, &shared, group, true);
        drop(guard);
        lock(&shared.turns).after_commit();
        put_back(&shared, leftover);
    }
}

/// Puts writes that never ran (SQLite ended the transaction under them)
/// back in front of the queue, in their order, for the writer's next group.
fn put_back(shared: &Shared, leftover: Vec<Box<dyn WriteOp>>) {
    if leftover.is_empty() {
        return;
    }
    let mut q = lock(&shared.queue);
    for op in leftover.into_iter().rev() {
        q.ops.push_front(op);
    }
    drop(q);
    shared.wake.notify_one();
}

fn take_group(ops: &mut VecDeque<Box<dyn WriteOp>>) -> Vec<Box<dyn WriteOp>> {
    let mut group = Vec::new();
    take_into(ops, &mut group);
    group
}

/// Moves writes from the queue into `group` while it has room, by count
/// and by bytes; a write heavier than the room left waits for the next
/// group, unless the group is empty. Returns how many it moved.
fn take_into(ops: &mut VecDeque<Box<dyn WriteOp>>, group: &mut Vec<Box<dyn WriteOp>>) -> usize {
    let mut bytes: usize = group.iter().map(|op| op.weight()).sum();
    let before = group.len();
    while let Some(op) = ops.front() {
        if !group.is_empty() && (group.len() >= GROUP_MAX_WRITES || bytes + op.weight() > GROUP_MAX_BYTES) {
            break;
        }
        bytes += op.weight();
        group.push(ops.pop_front().expect("front was there"));
    }
    group.len() - before
}

/// While a burst is open ([`submit_together`]), waits for its next writes
/// and moves them into `group`: polling for [`BURST_SPIN`], then asleep
/// until a write or the burst's end wakes the writer. Returns false when
/// the group should commit: no burst is open, the group is full, or the
/// waits ran out. Writes cancelled meanwhile are answered here.
fn gather(shared: &Shared, group: &mut Vec<Box<dyn WriteOp>>, started: Instant) -> bool {
    let gap_from = Instant::now();
    let mut q = lock(&shared.queue);
    loop {
        if !q.ops.is_empty() {
            let at = group.len();
            let moved = take_into(&mut q.ops, group);
            drop(q);
            let mut i = at;
            while i < group.len() {
                if group[i].cancelled() {
                    group.remove(i).finish(None, None);
                } else {
                    i += 1;
                }
            }
            if moved == 0 {
                return false; // full
            }
            if group.len() > at {
                return true;
            }
            q = lock(&shared.queue); // all cancelled: wait on
            continue;
        }
        let waited = gap_from.elapsed();
        let total = started.elapsed();
        if q.bursts == 0 || q.closed || waited >= BURST_GAP_AT_MOST || total >= BURST_WAIT_AT_MOST {
            return false;
        }
        if waited < BURST_SPIN {
            let seen = shared.pushes.load(Ordering::Acquire);
            drop(q);
            while shared.pushes.load(Ordering::Acquire) == seen && gap_from.elapsed() < BURST_SPIN {
                std::thread::yield_now();
            }
            q = lock(&shared.queue);
            continue;
        }
        q.gathering = true;
        let left = (BURST_GAP_AT_MOST - waited).min(BURST_WAIT_AT_MOST - total);
        q = shared.wake.wait_timeout(q, left).unwrap_or_else(|p| p.into_inner()).0;
        q.gathering = false;
    }
}

/// Commits one group, inside the transaction the caller began, and answers
/// it; when it `gathers`, it takes an open burst's writes as they come.
/// Returns the writes that never ran because SQLite ended the transaction
/// under them; they go back in front of the queue.
fn commit_group(
    conn: &WriteConn,
    shared: &Shared,
    mut group: Vec<Box<dyn WriteOp>>,
    gathers: bool,
) -> Vec<Box<dyn WriteOp>> {
    let (clock, stats) = (&shared.clock, &shared.stats);
    let started = Instant::now();
    let now = clock.now_millis();
    let rev = match conn.revisions().start(conn) {
        Ok(r) => r,
        Err(e) => {
            let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
            for op in group {
                op.finish(None, Some(e.clone()));
            }
            return Vec::new();
        }
    };
    let mut ctx = WriteCtx::new(conn, now, rev);
    let mut ran = 0;
    let mut aborted: Option<Error> = None;
    while ran < group.len() || (gathers && aborted.is_none() && gather(shared, &mut group, started)) {
        let savepoint = group[ran].isolation() == Isolation::Savepoint;
        if savepoint && let Err(e) = storage::run_tx_statement(conn, sql::WRITE_SAVEPOINT) {
            aborted = Some(e.into());
            break;
        }
        let failed = group[ran].run(&mut ctx);
        ran += 1;
        if conn.is_autocommit() {
            // SQLite rolled the whole transaction back (a full disk, an I/O
            // error): nothing of this group is in the file.
            aborted = Some(Error::new(
                ErrorKind::Io,
                "SQLite rolled back the group's transaction after an I/O failure; nothing of it was written",
            ));
            break;
        }
        let end = match (savepoint, failed) {
            (false, _) => Ok(()),
            (true, true) => storage::run_tx_statement(conn, sql::WRITE_ROLLBACK)
                .and_then(|()| storage::run_tx_statement(conn, sql::WRITE_RELEASE)),
            (true, false) => storage::run_tx_statement(conn, sql::WRITE_RELEASE),
        };
        if let Err(e) = end {
            aborted = Some(e.into());
            break;
        }
    }
    let leftover = group.split_off(ran);
    let commit = match aborted {
        Some(e) => {
            if !conn.is_autocommit() {
                let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
            }
            // Nothing was written: answer each write that ran with the
            // sure failure, not OutcomeUnknown.
            for op in group {
                op.finish(None, Some(e.clone()));
            }
            return leftover;
        }
        None => {
            // A group raises the clock's mark once it is a second behind
            // (a sweep, which commits every minute, too), so the file
            // remembers how late it has been within a minute or so.
            let saved = conn.revisions().finish(conn, ctx.rev, ctx.dirty, clock.mark_millis());
            let commit = || {
                if stats.fail_next_commit.swap(false, Ordering::AcqRel) {
                    storage::run_tx_statement(conn, sql::ROLLBACK)?;
                    return Err(Error::new(ErrorKind::Io, "disk I/O error (injected by a test)"));
                }
                storage::run_tx_statement(conn, sql::COMMIT).map_err(Error::from)
            };
            match saved.and_then(|()| commit()) {
                Ok(()) => {
                    stats.groups.fetch_add(1, Ordering::Relaxed);
                    stats.writes.fetch_add(group.len() as u64, Ordering::Relaxed);
                    shared.last_group.store(group.len(), Ordering::Relaxed);
                    None
                }
                Err(e) => {
                    conn.revisions().forget();
                    if !conn.is_autocommit() {
                        let _ = storage::run_tx_statement(conn, sql::ROLLBACK);
                    }
                    Some(e)
                }
            }
        }
    };
    for op in group {
        op.finish(commit.as_ref(), None);
    }
    leftover
}

#[cfg(test)]
mod submit_together_tests {
    use std::time::{Duration, SystemTime};

    use crate::{Options, Raw, RawBucket, Store, WriteOptions};

    /// A store with a test clock, and its bucket "b".
    fn store_with_bucket() -> (tempfile::TempDir, Store, RawBucket) {
        let dir = tempfile::tempdir().unwrap();
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let store = Store::open_with(dir.path(), Options::new().test_clock(start)).unwrap();
        let b = RawBucket::open(&store, "b", None, None).unwrap();
        (dir, store, b)
    }

    /// Runs `during` while a `tx` on another thread holds the writer's
    /// connection, then lets the writer go: writes made in `during` wait.
    fn with_writer_held(store: &Store, during: impl FnOnce()) {
        let (held, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                store
                    .tx(|_| {
                        held.wait();
                        release.wait();
                        Ok(())
                    })
                    .unwrap()
            });
            held.wait();
            during();
            release.wait();
        });
    }

    #[test]
    fn kv15_writes_waiting_while_the_writer_is_busy_commit_as_one_group() {
        // The writer is held busy (a `tx` on another thread holds its
        // connection) while 64 writes are submitted, so all of them wait
        // when it is next free. Without the hold the count would depend on
        // scheduling: an open burst keeps a group open only while writes
        // keep coming, and a descheduled thread ends it (BURST_GAP_AT_MOST).
        let (_dir, store, b) = store_with_bucket();
        b.set(b"warm", Raw::int(0), WriteOptions::default()).unwrap();
        let (g0, w0) = store.group_stats();
        let (tx, rx) = std::sync::mpsc::channel();
        with_writer_held(&store, || {
            super::submit_together(|| {
                for i in 0..64 {
                    let tx = tx.clone();
                    let key = format!("k{i}");
                    b.set_then(key.as_bytes(), Raw::int(i), WriteOptions::default(), move |r| {
                        tx.send(r).unwrap()
                    })
                    .unwrap();
                }
            });
        });
        for _ in 0..64 {
            rx.recv().unwrap().unwrap();
        }
        let (g1, w1) = store.group_stats();
        assert_eq!(
            (g1 - g0, w1 - w0),
            (1, 64),
            "64 waiting writes are one group, one fsync"
        );
        for i in 0..64 {
            let key = format!("k{i}");
            assert_eq!(b.entry(key.as_bytes()).unwrap().map(|e| e.value), Some(Raw::int(i)));
        }
    }

    /// The thread a write's completion ran on, for a write submitted with
    /// `submit_waited` or without it.
    fn answered_on(b: &RawBucket, key: &[u8], waited: bool) -> std::thread::ThreadId {
        let (tx, rx) = std::sync::mpsc::channel();
        let submit = || {
            b.set_then(key, Raw::int(1), WriteOptions::default(), move |r| {
                r.unwrap();
                tx.send(std::thread::current().id()).unwrap()
            })
            .unwrap()
        };
        if waited {
            super::submit_waited(submit)
        } else {
            submit()
        };
        rx.recv().unwrap()
    }

    #[test]
    fn a_waited_write_alone_commits_on_its_callers_thread() {
        let (_dir, store, b) = store_with_bucket();
        let me = std::thread::current().id();
        assert_ne!(
            answered_on(&b, b"queued", false),
            me,
            "a completion form commits on the writer"
        );
        // Answered inside its group: wait until the writer lets go of the
        // connection (a `tx` takes it), so that it is free for the next.
        store.tx(|_| Ok(())).unwrap();
        assert_eq!(answered_on(&b, b"here", true), me, "a waited write alone commits here");
        assert_eq!(b.entry(b"here").unwrap().map(|e| e.value), Some(Raw::int(1)));
    }

    #[test]
    fn a_waited_write_joins_the_queue_while_the_writer_is_busy() {
        // A `tx` on another thread holds the connection: the write cannot
        // commit here, so it queues and is answered after the tx ends.
        let (_dir, store, b) = store_with_bucket();
        let me = std::thread::current().id();
        let (tx, rx) = std::sync::mpsc::channel();
        with_writer_held(&store, || {
            super::submit_waited(|| {
                b.set_then(b"k", Raw::int(1), WriteOptions::default(), move |r| {
                    tx.send((std::thread::current().id(), r.is_ok())).unwrap()
                })
                .unwrap()
            });
            assert!(rx.try_recv().is_err(), "not answered while the tx holds the writer");
        });
        let (on, ok) = rx.recv().unwrap();
        assert!(ok);
        assert_ne!(on, me, "the queued write committed on the writer thread");
    }

    #[test]
    fn kv15_a_write_awaited_inside_an_open_burst_is_answered() {
        let (_dir, _store, b) = store_with_bucket();
        let _burst = super::Burst::start();
        let (tx, rx) = std::sync::mpsc::channel();
        b.set_then(b"k", Raw::int(1), WriteOptions::default(), move |r| tx.send(r).unwrap())
            .unwrap();
        // The burst stays open: its group commits once the burst goes quiet.
        let answer = rx.recv_timeout(Duration::from_secs(10));
        assert!(
            matches!(answer, Ok(Ok(_))),
            "a write awaited inside its burst was answered: {answer:?}"
        );
    }
}
