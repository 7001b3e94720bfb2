//! Who runs a key of `once` (KV-11): one run at a time in this store, and
//! across processes on the same file.
//!
//! Within a store, a map of the keys being run holds, for each, the waiters
//! to call when the run ends; a waiter then reads the kept answer or claims
//! the key itself. Across processes, the holder of a key's run writes a
//! row in `runs` with its holder id and a lease in real time (process death
//! is real even under a test clock). The lease is renewed by a heartbeat
//! every [`ONCE_HEARTBEAT`] while the store holds any run; a holder that
//! stops renewing, because its process died, loses the key when the lease
//! ends. A run waiting for another process polls the file every
//! [`ONCE_POLL`] on the store's one timer thread.
//!
//! The bound: if the process running a key dies, another process runs it
//! within [`ONCE_LEASE`] plus one poll (about 5.1 s) of the death, and the
//! test `kv11_killed_process_lets_another_run` checks it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::timer::Timer;
use super::{lock, real_millis};
use crate::clock::duration_millis;
use crate::error::Result;
use crate::group_commit::WriteCtx;
use crate::raw::Raw;
use crate::storage;
use crate::store::StoreInner;
use crate::values::Target;

/// How long a claim on a key's run lasts in the file without a heartbeat:
/// a run whose process died is runnable again this long after its last
/// heartbeat, plus one poll.
pub const ONCE_LEASE: Duration = Duration::from_secs(5);
/// How often a store renews the leases of the runs it holds.
pub const ONCE_HEARTBEAT: Duration = Duration::from_secs(1);
/// How often a run waiting for another process looks at the file.
pub const ONCE_POLL: Duration = Duration::from_millis(100);

/// Called when the run of a key ends in this store.
pub(crate) type Waiter = Box<dyn FnOnce() + Send>;

/// A key of once: the name's id and the path.
pub(crate) type RunKey = (i64, Vec<u8>);

/// The runs of one store.
pub(crate) struct Runs {
    /// This store's id in the `runs` table: unique to the process and the open.
    pub holder: String,
    /// Keys being run through this store, with their waiters.
    held: Mutex<HashMap<RunKey, Vec<Waiter>>>,
    /// Runs claimed in the file and not yet let go.
    in_file: AtomicUsize,
    /// Looks at the file that found another process running the key: what
    /// a test waits on to know a waiter is behind another process's run.
    busy_polls: AtomicUsize,
    beating: AtomicBool,
    pub timer: Arc<Timer>,
    store: Weak<StoreInner>,
}

/// What a claim in the file found.
pub(crate) enum FileClaim {
    /// The key is this store's to run.
    Claimed,
    /// An answer is kept: no run needed.
    Kept(Raw),
    /// Another process runs the key.
    Busy,
}

impl Runs {
    pub(crate) fn new(store: Weak<StoreInner>) -> Arc<Runs> {
        static OPENS: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let holder = format!(
            "{}-{nanos:x}-{}",
            std::process::id(),
            OPENS.fetch_add(1, Ordering::Relaxed)
        );
        Arc::new(Runs {
            holder,
            held: Mutex::new(HashMap::new()),
            in_file: AtomicUsize::new(0),
            busy_polls: AtomicUsize::new(0),
            beating: AtomicBool::new(false),
            timer: Arc::new(Timer::new(store.upgrade().map_or(0, |s| s.log_id))),
            store,
        })
    }

    /// Counts a look at the file that found another process running a key.
    pub(crate) fn polled_busy(&self) {
        self.busy_polls.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn busy_polls(&self) -> usize {
        self.busy_polls.load(Ordering::Relaxed)
    }

    /// Claims `key` in this store; if a run holds it, queues `wait` for
    /// when it ends and says so.
    pub(crate) fn try_claim(&self, key: RunKey, wait: Waiter) -> bool {
        let mut held = lock(&self.held);
        match held.get_mut(&key) {
            Some(waiters) => {
                waiters.push(wait);
                false
            }
            None => {
                held.insert(key, Vec::new());
                true
            }
        }
    }

    /// Ends this store's run of `key` and calls its waiters.
    pub(crate) fn release(&self, key: &RunKey) {
        let waiters = lock(&self.held).remove(key).unwrap_or_default();
        for w in waiters {
            w();
        }
    }

    /// Counts a run claimed in the file, and keeps its lease renewed.
    pub(crate) fn claimed_in_file(self: &Arc<Self>) {
        self.in_file.fetch_add(1, Ordering::AcqRel);
        if !self.beating.swap(true, Ordering::AcqRel) {
            let me = self.clone();
            self.timer.at(Instant::now() + ONCE_HEARTBEAT, move || me.beat());
        }
    }

    /// Counts a run let go in the file.
    pub(crate) fn released_in_file(&self) {
        self.in_file.fetch_sub(1, Ordering::AcqRel);
    }

    /// Renews the leases of every run this store holds, and forgets runs
    /// whose holders stopped renewing. Stops when no run is held.
    fn beat(self: Arc<Self>) {
        self.beating.store(false, Ordering::Release);
        if self.in_file.load(Ordering::Acquire) == 0 || self.beating.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(store) = self.store.upgrade() else { return };
        let holder = self.holder.clone();
        let lease = duration_millis(ONCE_LEASE);
        let log_id = store.log_id;
        let queued = store.writer.submit(
            0,
            move |w: &mut WriteCtx<'_>| {
                let now = real_millis();
                storage::runs_renew(w.conn, &holder, now + lease)?;
                storage::runs_sweep(w.conn, now)?;
                Ok(())
            },
            move |r: Result<()>| {
                if let Err(e) = r {
                    log::warn!(store = log_id; "tinystore: renewing the leases of once failed: {e}");
                }
            },
        );
        if queued.is_err() {
            self.beating.store(false, Ordering::Release);
            return; // the store closed
        }
        let me = self.clone();
        self.timer.at(Instant::now() + ONCE_HEARTBEAT, move || me.beat());
    }
}

/// Claims the run of `t` in the file for `holder`, inside a group: unless
/// an answer is kept, or another live holder has it.
pub(crate) fn op_claim(t: &Target, w: &mut WriteCtx<'_>, holder: &str) -> Result<FileClaim> {
    let run = || {
        if let Some(cell) = t.read(w.conn, w.now)? {
            return Ok(FileClaim::Kept(cell.value));
        }
        let now = real_millis();
        if let Some((h, until)) = storage::run_holder(w.conn, t.core.id, t.path())?
            && h != holder
            && until > now
        {
            return Ok(FileClaim::Busy);
        }
        storage::run_claim(w.conn, t.core.id, t.path(), holder, now + duration_millis(ONCE_LEASE))?;
        Ok(FileClaim::Claimed)
    };
    run().map_err(|e| t.name(e))
}

/// What a poll sees on a reader: a kept answer, a live holder, or `None`
/// when the key looks free and a claim should be tried in a write.
pub(crate) fn peek_claim(t: &Target, conn: &rusqlite::Connection, now: i64, holder: &str) -> Result<Option<FileClaim>> {
    if let Some(cell) = t.read(conn, now)? {
        return Ok(Some(FileClaim::Kept(cell.value)));
    }
    match storage::run_holder(conn, t.core.id, t.path()).map_err(|e| t.name(e))? {
        Some((h, until)) if h != holder && until > real_millis() => Ok(Some(FileClaim::Busy)),
        _ => Ok(None),
    }
}

/// Keeps the answer of a run for `keep_ms` on the store's clock and lets
/// go of its claim, in one write.
pub(crate) fn op_keep(t: &Target, w: &mut WriteCtx<'_>, value: &Raw, keep_ms: i64, holder: &str) -> Result<()> {
    let mut run = || {
        let old = storage::meta(w.conn, t.core.id, t.path(), w.now)?;
        let version = w.next_version();
        let expires = w.now.saturating_add(keep_ms);
        storage::put(
            w.conn,
            t.core.id,
            t.path(),
            version,
            Some(expires),
            value,
            old.and_then(|m| m.spill),
        )?;
        storage::run_release(w.conn, t.core.id, t.path(), holder)
    };
    run().map_err(|e| t.name(e))
}
