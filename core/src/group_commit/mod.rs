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

mod blocking;
mod bursts;
mod checkpoints;
mod commit;
mod exclusive_tx;
mod job;
mod submit;
mod writer_thread;

#[cfg(test)]
pub(crate) mod submit_together_tests;

use std::cell::Cell as StdCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use crate::clock::Clock;
use crate::error::Result;
use crate::storage::direct_statements::WriteConn;
use crate::storage::write_lock_turns::Turns;

use bursts::OpenBursts;
pub(crate) use bursts::submit_held_now;
pub use bursts::{Burst, submit_together};
pub(crate) use commit::WriteCtx;

pub(crate) use job::Isolation;
use job::WriteOp;
pub use submit::{Ticket, submit_waited};
pub use writer_thread::after_answers;
use writer_thread::run;

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
/// very writes it waited for. The writer bench's event-loop contender
/// (`bench/src/bin/writer.rs`) measures it.
const BURST_SPIN: Duration = Duration::from_micros(50);

thread_local! {
    /// Set on the writer thread: a blocking write from a completion would
    /// wait for itself.
    static ON_WRITER: StdCell<bool> = const { StdCell::new(false) };
    /// On the writer thread, its store's [`crate::Store::log_id`], for the
    /// records it writes about that store.
    static WRITER_LOG_ID: StdCell<u64> = const { StdCell::new(0) };
    /// The writers whose connection this thread holds in a `tx`.
    static IN_TX: StdCell<usize> = const { StdCell::new(0) };
    /// The binding transactions ([`crate::BindingTx`]) this thread holds:
    /// each writer's id, with the flag its session clears when it ends.
    static HELD: std::cell::RefCell<Vec<(usize, Arc<AtomicBool>)>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Set inside [`submit_together`]: the writers this thread's burst
    /// writes to, each counting it among its open bursts.
    static BURST: std::cell::RefCell<OpenBursts> = const { std::cell::RefCell::new(OpenBursts(None)) };
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
    /// The context of `conn`'s WAL hook: declared after it, so it outlives it.
    checkpoints: Arc<checkpoints::Checkpoints>,
    clock: Clock,
    /// Binding transactions ([`crate::BindingTx`]) being served: while
    /// none is, no caller can be inside one, and a binding need not ask.
    sessions: AtomicUsize,
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
    /// `log_id` tags the thread's log records with their store.
    pub fn start(conn: Connection, turns: Turns, clock: Clock, log_id: u64) -> Result<Writer> {
        let checkpoints = Arc::new(checkpoints::Checkpoints::default());
        checkpoints.install(&conn);
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
            checkpoints,
            clock,
            last_group: AtomicUsize::new(0),
            sessions: AtomicUsize::new(0),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("tinystore-writer".into())
            .spawn(move || {
                WRITER_LOG_ID.with(|id| id.set(log_id));
                run(s)
            })?;
        Ok(Writer {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A writer that takes no writes: every call is `Closed`. The writer of
    /// a store whose rows are not in kv.db (a PostgreSQL store), so that a
    /// path not carried to that store fails instead of writing elsewhere.
    pub fn refusing(clock: Clock) -> Writer {
        let lease = crate::read_locks::Lease::of(std::path::Path::new(""));
        Writer {
            shared: Arc::new(Shared {
                stats: GroupStats::default(),
                queue: Mutex::new(Queue {
                    ops: VecDeque::new(),
                    closed: true,
                    idle: false,
                    bursts: 0,
                    gathering: false,
                }),
                wake: Condvar::new(),
                pushes: AtomicU64::new(0),
                conn: Mutex::new(None),
                turns: Mutex::new(Turns::open(std::path::Path::new(""), lease)),
                checkpoints: Arc::new(checkpoints::Checkpoints::default()),
                clock,
                last_group: AtomicUsize::new(0),
                sessions: AtomicUsize::new(0),
            }),
            thread: Mutex::new(None),
        }
    }

    fn id(&self) -> usize {
        Arc::as_ptr(&self.shared) as usize
    }

    /// Counts a binding transaction served from now until [`Writer::binding_tx_ended`].
    pub(crate) fn binding_tx_began(&self) {
        self.shared.sessions.fetch_add(1, Ordering::AcqRel);
    }

    /// The end of a transaction [`Writer::binding_tx_began`] counted.
    pub(crate) fn binding_tx_ended(&self) {
        self.shared.sessions.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether a binding transaction holds the writer now.
    pub(crate) fn sessions_open(&self) -> bool {
        self.shared.sessions.load(Ordering::Acquire) > 0
    }

    /// Marks the calling thread as holding a binding transaction of this
    /// writer while `open` is set: a blocking write from it outside the
    /// transaction is refused ([`crate::inside_tx_error`]) instead of waiting.
    pub(crate) fn hold_thread(&self, open: &Arc<AtomicBool>) {
        let id = self.id();
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            h.retain(|(_, o)| o.load(Ordering::Acquire));
            if !h.iter().any(|(_, o)| Arc::ptr_eq(o, open)) {
                h.push((id, open.clone()));
            }
        });
    }

    /// Whether this thread holds a transaction of this writer: a `tx`, or
    /// a binding's transaction it marked with [`Writer::hold_thread`].
    pub(crate) fn held_here(&self) -> bool {
        let id = self.id();
        IN_TX.with(|t| t.get()) == id
            // With no binding transaction open, no thread holds one: the
            // common write skips the list.
            || self.sessions_open() && HELD.with(|h| {
                let mut h = h.borrow_mut();
                h.retain(|(_, o)| o.load(Ordering::Acquire));
                h.iter().any(|(w, _)| *w == id)
            })
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

/// After a commit, with the connection let go of: take turns with other
/// processes' writers, and have the writer thread run a checkpoint that
/// fell short again when it is due ([`checkpoints`]).
fn after_commit(shared: &Shared) {
    lock(&shared.turns).after_commit();
    if shared.checkpoints.due().is_some() && !ON_WRITER.with(|w| w.get()) {
        shared.wake.notify_one();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in a completion must not wedge the store: the state behind
    // these locks stays consistent because every update is a single push,
    // pop or flag.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
