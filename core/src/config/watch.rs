//! Telling every handle of a config about a change.
//!
//! Handles on one config of one store share a [`Shared`]: the kept rows as
//! last read, and a generation that grows with every change seen. A change
//! made in this process reloads the rows once it is durable, so every
//! handle sees it at once. A change made by another process on the same
//! file is found by a watcher thread that reads the config's stamp row
//! (one indexed read) every [`POLL`], so it is seen within a second.
//!
//! A program watches through a [`ConfigWatch`]: its rules (how long one
//! step waits, when a change is reported, when the watch ends) are here,
//! and a binding only steps it on its runtime and hands each change to the
//! program.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use super::kept::{KeptRows, KeptStore};
use crate::error::Result;
use crate::store::Store;

/// How often the watcher thread reads a config's stamp.
pub const POLL: Duration = Duration::from_millis(200);

/// The longest one step of a [`ConfigWatch`] waits, so that a caller who
/// can give up (a context, a signal, a task) is heard from this often.
pub const WATCH_STEP: Duration = Duration::from_millis(250);

/// What one step of a [`ConfigWatch`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchStep {
    /// The config changed since the last change reported: read it now
    /// (changes made meanwhile are skipped to the latest).
    Changed,
    /// Nothing changed in this step: step again, unless the caller gave up.
    Quiet,
    /// The watch is over: the store closed, or the watch's timeout passed
    /// without a change.
    Ended,
}

/// The changes of one config from the moment the watch began, by any
/// handle or process. A failed read of another process's changes is
/// logged by the watcher thread and the watch goes on.
pub struct ConfigWatch {
    shared: Arc<Shared>,
    timeout: Option<Duration>,
    /// The generation last reported, and since when nothing changed.
    state: Mutex<(u64, Option<Instant>)>,
}

impl ConfigWatch {
    pub(crate) fn new(shared: Arc<Shared>, timeout: Option<Duration>) -> ConfigWatch {
        let seen = shared.generation();
        ConfigWatch {
            shared,
            timeout,
            state: Mutex::new((seen, None)),
        }
    }

    /// Waits for the next change, at most [`WATCH_STEP`].
    pub fn next(&self) -> WatchStep {
        let (seen, quiet_since, wait) = self.begin();
        let g = self.shared.wait(seen, wait);
        self.end(seen, quiet_since, g)
    }

    /// [`ConfigWatch::next`] without a thread waiting: `done` is called
    /// with the step on the config's watcher thread (or here, when the
    /// step is known at once), for a binding that answers on its loop.
    pub fn next_then(self: &Arc<Self>, done: impl FnOnce(WatchStep) + Send + 'static) {
        let (seen, quiet_since, wait) = self.begin();
        let this = self.clone();
        let fired = move |g| done(this.end(seen, quiet_since, g));
        self.shared.when_past(seen, Instant::now() + wait, Box::new(fired));
    }

    /// The generation last reported, since when nothing changed, and how
    /// long this step waits.
    fn begin(&self) -> (u64, Instant, Duration) {
        let now = Instant::now();
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let quiet_since = *st.1.get_or_insert(now);
        let left = self.timeout.map(|t| t.saturating_sub(now - quiet_since));
        (st.0, quiet_since, left.map_or(WATCH_STEP, |l| l.min(WATCH_STEP)))
    }

    /// The step that found generation `g`.
    fn end(&self, seen: u64, quiet_since: Instant, g: u64) -> WatchStep {
        if g > seen {
            *self.state.lock().unwrap_or_else(|p| p.into_inner()) = (g, None);
            return WatchStep::Changed;
        }
        let timed_out = self.timeout.is_some_and(|t| quiet_since.elapsed() >= t);
        if timed_out || self.shared.kept.store().is_closed() {
            WatchStep::Ended
        } else {
            WatchStep::Quiet
        }
    }
}

/// A step waiting for the watcher thread: it fires, with the generation
/// then, once the generation passes `after`, at `until`, or when the store
/// closes.
struct Waiter {
    after: u64,
    until: Instant,
    fired: Box<dyn FnOnce(u64) + Send>,
}

/// What the handles of one config share.
pub(crate) struct Shared {
    pub kept: KeptStore,
    name: String,
    /// The store's [`crate::Store::log_id`], for the config's log records.
    pub log_id: u64,
    state: Mutex<State>,
    changed: Condvar,
    watching: AtomicBool,
    waiters: Mutex<Vec<Waiter>>,
}

#[derive(Default)]
pub(crate) struct State {
    pub rows: KeptRows,
    pub generation: u64,
}

type Registry = Mutex<Vec<(usize, String, Weak<Shared>)>>;
static REGISTRY: Registry = Mutex::new(Vec::new());

fn store_id(store: &Store) -> usize {
    Arc::as_ptr(&store.inner) as usize
}

impl Shared {
    /// The shared state of config `name` on `store`, made (and its rows
    /// read) by the first handle.
    pub(crate) fn of(store: &Store, name: &str) -> Result<Arc<Shared>> {
        let id = store_id(store);
        let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        reg.retain(|(_, _, w)| w.strong_count() > 0);
        if let Some(found) = reg
            .iter()
            .find(|(i, n, _)| *i == id && n == name)
            .and_then(|(_, _, w)| w.upgrade())
        {
            return Ok(found);
        }
        let kept = KeptStore::open(store, name)?;
        let rows = kept.read()?;
        let shared = Arc::new(Shared {
            kept,
            name: name.to_owned(),
            log_id: store.inner.log_id,
            state: Mutex::new(State { rows, generation: 1 }),
            changed: Condvar::new(),
            watching: AtomicBool::new(false),
            waiters: Mutex::new(Vec::new()),
        });
        reg.push((id, name.to_owned(), Arc::downgrade(&shared)));
        Ok(shared)
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the stamp and, when it moved, the rows; tells the waiters.
    /// Returns whether anything changed.
    pub(crate) fn refresh(&self) -> Result<bool> {
        let stamp = self.kept.stamp()?;
        if self.lock().rows.stamp == stamp {
            return Ok(false);
        }
        let rows = self.kept.read()?;
        let mut st = self.lock();
        if st.rows == rows {
            return Ok(false);
        }
        st.rows = rows;
        st.generation += 1;
        drop(st);
        self.changed.notify_all();
        self.fire(false);
        Ok(true)
    }

    /// Calls `fired` once the generation passes `after`, at `until`, or
    /// when the store closes, on the watcher thread (or here, at once).
    fn when_past(self: &Arc<Self>, after: u64, until: Instant, fired: Box<dyn FnOnce(u64) + Send>) {
        self.start_watching();
        let st = self.lock();
        if st.generation > after || self.kept.store().is_closed() {
            let g = st.generation;
            drop(st);
            return fired(g);
        }
        // Pushed under the state's lock: a change made after the check
        // fires it, since `refresh` fires once the generation moved.
        self.waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Waiter { after, until, fired });
    }

    /// Fires the waiters whose generation passed or whose time came, or
    /// (`all`) every one.
    fn fire(&self, all: bool) {
        let g = self.generation();
        let now = Instant::now();
        let due: Vec<Waiter> = {
            let mut waiters = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
            let (due, wait) = waiters.drain(..).partition(|w| all || g > w.after || now >= w.until);
            *waiters = wait;
            due
        };
        for w in due {
            (w.fired)(g);
        }
    }

    /// The generation now: it grows with every change seen.
    pub(crate) fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Waits until the generation passes `after`, or `timeout`; returns
    /// the generation then.
    pub(crate) fn wait(self: &Arc<Self>, after: u64, timeout: Duration) -> u64 {
        self.start_watching();
        let deadline = Instant::now() + timeout;
        let mut st = self.lock();
        while st.generation <= after {
            let now = Instant::now();
            if now >= deadline || self.kept.store().is_closed() {
                break;
            }
            st = self
                .changed
                .wait_timeout(st, (deadline - now).min(POLL))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        st.generation
    }

    /// Starts the watcher thread, once. It holds the config weakly and
    /// ends when the last handle goes or the store closes.
    pub(crate) fn start_watching(self: &Arc<Self>) {
        if self.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name(format!("tinystore-config-{}", self.name))
            .spawn(move || watch_loop(weak));
        if let Err(e) = spawned {
            log::error!(
                store = self.log_id;
                "tinystore: config {:?} cannot watch for other processes: {e}",
                self.name
            );
            self.watching.store(false, Ordering::Release);
        }
    }
}

fn watch_loop(weak: Weak<Shared>) {
    loop {
        std::thread::sleep(POLL);
        let Some(shared) = weak.upgrade() else { return };
        if shared.kept.store().is_closed() {
            shared.fire(true);
            return;
        }
        if let Err(e) = shared.refresh() {
            if shared.kept.store().is_closed() {
                shared.fire(true);
                return;
            }
            log::warn!(store = shared.log_id; "tinystore: config {:?}: reading changes failed: {e}", shared.name);
        }
        shared.fire(false);
    }
}
