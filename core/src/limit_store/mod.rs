//! The limit store: where an app framework keeps its limit counts (sign-ins,
//! password resets, codes sent), in kv.db, shared by every process on the
//! machine. It meets the framework's `LimitStore` contract (`shared`,
//! `update(keys, apply)`, `read(keys)`, `sweep()`); the bindings only
//! convert values and call the user's `apply`.
//!
//! The promises, and where each is kept:
//! - Atomic across processes: [`LimitUpdate`] is optimistic. The entries are
//!   read with their versions, the binding calls `apply` on its own thread
//!   (JavaScript's `apply` must run there), then one write checks that every
//!   key is still at the version read and writes all of them, or answers
//!   [`Commit::Retry`] with the entries as they are now (`commit.rs`).
//! - Expiry on the store's clock: an entry's `expires_at` is the row's expiry,
//!   so reads judge it and the store's maintenance sweeps it in the background.
//! - Keys are stored as the SHA-256 of the key, never the key itself.
//! - A bound on entries that never removes a live one: a count in the file
//!   (`crate::limit_count`) warns at 80% and refuses new keys when full after removing
//!   expired rows (`commit.rs`). Whatever deletes or adds entry rows moves
//!   it in the same transaction, the store's maintenance in any process
//!   included, so it is exact and nothing scans the rows in the writer.
//! - Every call answered within its deadline, at most so many in flight
//!   (`deadline.rs`).
//!
//! On a PostgreSQL store the same protocol and rules run on tables of the
//! database, shared by every server (`on_postgres.rs`).

mod commit;
mod deadline;
mod given;
mod on_postgres;
mod steps;
mod sweep;

pub use steps::{Returned, ReturnedEntry, UpdateSteps};

use std::fmt;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind, Result};
use crate::group_commit::Ticket;
use crate::key::{Branch, show_key};
use crate::storage::Kind;
use crate::store::Store;
use crate::values::{BucketCore, Target};

use deadline::{AnswerOnce, Slot};

/// The name a limit store keeps its rows under unless told otherwise.
pub const LIMIT_STORE_NAME: &str = "limit-store";
/// The bound on entries unless `max_entries` says otherwise.
pub const DEFAULT_MAX_ENTRIES: usize = 1_000_000;
/// The largest value of an entry, in bytes of its JSON text.
pub const MAX_LIMIT_VALUE: usize = 4096;
/// Every call is answered within this, by default.
pub const LIMIT_DEADLINE: Duration = Duration::from_secs(2);
/// At most this many calls of one limit store run at once, by default.
pub const LIMIT_IN_FLIGHT: usize = 64;
/// The most keys one call takes.
pub const MAX_LIMIT_KEYS: usize = 64;
/// How many times `update` runs `apply` before it gives up on a key that
/// other updates keep changing. The deadline is what bounds an update; this
/// only stops a loop that nothing else would. It must not bind first: each
/// run after the first follows a commit by another update, and a process
/// counting in a loop can commit a hundred times while another's one update
/// waits its turn (a cap of 100 failed two processes counting together).
pub const MAX_UPDATE_ATTEMPTS: u32 = 10_000;
/// The `limit-store-full` error is logged at most this often by one handle.
pub const FULL_LOG_EVERY: Duration = Duration::from_secs(60);

/// One entry: a JSON value and when it expires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitEntry {
    /// The value as JSON text, at most [`MAX_LIMIT_VALUE`] bytes.
    pub value: String,
    /// When the entry expires, in ms since the epoch on the store's clock.
    pub expires_at: i64,
}

/// What `apply` wants done with one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Leave the key as it is.
    Keep,
    /// Delete the entry (the contract's `null`).
    Delete,
    /// Write this entry; one that has already expired deletes.
    Put(LimitEntry),
}

/// Something a binding should log, in its language's idiom, with `kind()`
/// as the log line's kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitEvent {
    /// The store holds at least 80% of its bound (a warning).
    Filling {
        /// Entries held (live, or expired and not yet swept).
        entries: usize,
        /// The bound.
        max_entries: usize,
    },
    /// The store was full after removing expired entries, and refused a new
    /// key (an error). Given at most once a minute by one handle.
    Full {
        /// The bound.
        max_entries: usize,
    },
}

impl LimitEvent {
    /// The log line's kind: `limit-store-filling` or `limit-store-full`.
    pub fn kind(&self) -> &'static str {
        match self {
            LimitEvent::Filling { .. } => "limit-store-filling",
            LimitEvent::Full { .. } => "limit-store-full",
        }
    }

    /// Whether this is an error (`Full`) rather than a warning.
    pub fn is_error(&self) -> bool {
        matches!(self, LimitEvent::Full { .. })
    }

    /// Logs the event through the `log` crate, as the Rust API does.
    pub fn log(&self) {
        if self.is_error() {
            log::error!(target: "tinystore::limit_store", "{}: {self}", self.kind());
        } else {
            log::warn!(target: "tinystore::limit_store", "{}: {self}", self.kind());
        }
    }
}

impl fmt::Display for LimitEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitEvent::Filling { entries, max_entries } => write!(
                f,
                "the limit store holds {entries} of its {max_entries} entries (80% or more); \
                 raise maxEntries or find what sends so many keys"
            ),
            LimitEvent::Full { max_entries } => write!(
                f,
                "the limit store is full ({max_entries} entries after removing expired ones): \
                 new keys are answered as unavailable, keys it holds keep counting"
            ),
        }
    }
}

/// What a finished `update` wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Updated {
    /// The entries of the keys now, in the order of the keys (`None`: absent).
    pub entries: Vec<Option<LimitEntry>>,
    /// What to log.
    pub events: Vec<LimitEvent>,
}

/// The answer of [`LimitUpdate::commit_then`].
pub enum Commit {
    /// Written, all keys at once.
    Done(Updated),
    /// Another update changed a key since the read: run `apply` again on
    /// this update's entries, then commit it.
    Retry(LimitUpdate),
    /// Nothing was written (or, for `OutcomeUnknown`, the write may still
    /// land after its deadline). The events are still to be logged.
    Failed(Error, Vec<LimitEvent>),
}

/// What a sweep removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Swept {
    /// Expired entries of this limit store removed.
    pub removed: usize,
    /// Entries held after the sweep, as the count in the file says (live
    /// entries, and expired ones past this sweep's bound).
    pub entries: usize,
}

/// Opens a limit store with options.
#[derive(Clone)]
pub struct LimitStoreBuilder {
    store: Store,
    name: String,
    /// As given, signed or wider, so that `open` is the one check of it.
    max_entries: crate::Signed,
    deadline: Duration,
    in_flight: usize,
}

impl LimitStoreBuilder {
    /// The name its rows live under (default `limit-store`); two handles
    /// with the same name on one kv.db are the same store.
    pub fn name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.name);
        self
    }

    /// The bound on entries (default 1,000,000).
    pub fn max_entries(self, n: usize) -> Self {
        self.max_entries_given(n)
    }

    /// The bound on entries as a language holds it, signed or wider
    /// (Python's int, a JavaScript number with a fraction): `open` refuses one out of
    /// range, in the one text every language gives.
    pub fn max_entries_given(mut self, n: impl Into<crate::Signed>) -> Self {
        self.max_entries = n.into();
        self
    }

    /// How long a call may take before it is answered as unavailable
    /// (default 2 s).
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// How many calls may run at once (default 64); past that a call is
    /// answered as unavailable at once.
    pub fn in_flight(mut self, n: usize) -> Self {
        self.in_flight = n;
        self
    }

    /// Opens the store's rows (registering the name), and on an ordinary
    /// store starts a sweep of expired entries, as an instance's start does.
    pub fn open(self) -> Result<LimitStore> {
        let bad = |what: String| Err(Error::invalid(what).in_bucket(&self.name));
        let Some(max_entries) = given::max_entries(&self.max_entries) else {
            return bad(given::max_entries_refused(&self.max_entries));
        };
        if self.deadline.is_zero() {
            return bad("a limit store's deadline must be longer than zero".into());
        }
        if self.in_flight == 0 {
            return bad("a limit store needs room for at least one call in flight".into());
        }
        // A kind of its own: a bucket of values opened on the name by
        // mistake would write rows the limit store cannot read.
        let core = BucketCore::open(&self.store, &self.name, Kind::LimitStore, None, None)?;
        if let Some(pg) = self.store.inner.postgres() {
            let id = core.id;
            pg.block(async |pool, _| crate::postgres::limit_rows::make_count(pool, id).await)
                .map_err(|e| e.in_bucket(&self.name))?;
        }
        let ls = LimitStore {
            shared: Arc::new(Shared {
                store: self.store.clone(),
                core,
                max_entries,
                deadline: self.deadline,
                max_in_flight: self.in_flight,
                in_flight: Arc::new(AtomicUsize::new(0)),
                watch: Mutex::new(Watch::default()),
            }),
        };
        if !self.store.is_manual() {
            let name = self.name.clone();
            let started = ls.sweep_then(move |r| {
                if let Err(e) = r {
                    log::warn!(target: "tinystore::limit_store", "the first sweep of {name} failed: {e}");
                }
            });
            if let Err(e) = started {
                log::warn!(target: "tinystore::limit_store", "the first sweep of {} failed: {e}", self.name);
            }
        }
        Ok(ls)
    }
}

/// A key's live entry and its version, as a read found it.
pub(crate) type Seen = (Option<LimitEntry>, Option<i64>);

/// When this handle last logged, and what it knows of fullness, in ms on
/// the store's clock (so a test clock drives them too).
#[derive(Default)]
pub(crate) struct Watch {
    pub last_filling: Option<i64>,
    pub last_full: Option<i64>,
    /// Until then a new key is refused without another sweep: a full store
    /// must not sweep for every new key an attacker sends.
    pub full_until: Option<i64>,
}

pub(crate) struct Shared {
    pub store: Store,
    pub core: Arc<BucketCore>,
    pub max_entries: usize,
    pub deadline: Duration,
    pub max_in_flight: usize,
    pub in_flight: Arc<AtomicUsize>,
    pub watch: Mutex<Watch>,
}

impl Shared {
    fn slot(&self) -> Result<Slot> {
        self.store.inner.check_open()?;
        deadline::take_slot(&self.in_flight, self.max_in_flight).map_err(|e| e.in_bucket(&self.core.name))
    }

    /// The row of a key: its digest, so the key itself never reaches the file.
    fn target_of(&self, key: &[u8]) -> Result<Target> {
        if key.is_empty() {
            return Err(Error::invalid("a limit store key is empty").in_bucket(&self.core.name));
        }
        let digest = Sha256::digest(key);
        Target::new(&self.core, &Branch::root(), digest.as_slice())
    }

    fn targets(&self, keys: &[Vec<u8>]) -> Result<Vec<Target>> {
        if keys.len() > MAX_LIMIT_KEYS {
            return Err(Error::invalid(format!(
                "a limit store call takes at most {MAX_LIMIT_KEYS} keys, not {}",
                keys.len()
            ))
            .in_bucket(&self.core.name));
        }
        let targets = keys.iter().map(|k| self.target_of(k)).collect::<Result<Vec<_>>>()?;
        for (i, t) in targets.iter().enumerate() {
            if targets[..i].iter().any(|o| o.path() == t.path()) {
                return Err(Error::invalid("a key appears twice in one call").at(&self.core.name, show_key(&keys[i])));
            }
        }
        Ok(targets)
    }

    /// Reads the live entries of `targets` with their versions, and the
    /// clock that judged them: the store's, or on PostgreSQL the database's.
    fn read(&self, targets: &[Target]) -> Result<(i64, Vec<Seen>)> {
        let inner = &self.store.inner;
        if let Some(pg) = inner.postgres() {
            return pg
                .block(async |pool, _| on_postgres::read(pool, self, targets).await)
                .map_err(|e| e.in_bucket(&self.core.name));
        }
        let now = inner.clock.now_millis();
        let read = inner
            .readers
            .with(|c| targets.iter().map(|t| commit::cell_entry(t.read(c, now)?)).collect());
        Ok((now, read?))
    }
}

/// A limit store over one kv.db. Cheap to clone; every clone is the same
/// handle (one in-flight count, one log of events).
#[derive(Clone)]
pub struct LimitStore {
    shared: Arc<Shared>,
}

impl fmt::Debug for LimitStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LimitStore({:?})", self.shared.core.name)
    }
}

impl LimitStore {
    /// A limit store named `limit-store` with the default bound.
    ///
    /// ```
    /// use tinystore::{Change, LimitEntry, LimitStore};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let store = tinystore::Store::open(dir.path())?;
    /// let limits = LimitStore::open(&store)?;
    /// let done = limits.update(&["sign-in:ada"], |entries, now| {
    ///     let n = entries[0].as_ref().map_or(0, |e| e.value.parse::<i64>().unwrap());
    ///     vec![Change::Put(LimitEntry { value: (n + 1).to_string(), expires_at: now + 60_000 })]
    /// })?;
    /// assert_eq!(done.entries[0].as_ref().unwrap().value, "1");
    /// # Ok::<(), tinystore::Error>(())
    /// ```
    pub fn open(store: &Store) -> Result<LimitStore> {
        LimitStore::builder(store).open()
    }

    /// A limit store with options: name, bound, deadline, calls in flight.
    pub fn builder(store: &Store) -> LimitStoreBuilder {
        LimitStoreBuilder {
            store: store.clone(),
            name: LIMIT_STORE_NAME.to_owned(),
            max_entries: DEFAULT_MAX_ENTRIES.into(),
            deadline: LIMIT_DEADLINE,
            in_flight: LIMIT_IN_FLIGHT,
        }
    }

    /// The contract's `shared`: every process that opens this kv.db sees
    /// the same entries.
    pub fn shared(&self) -> bool {
        true
    }

    /// The name the rows live under.
    pub fn name(&self) -> &str {
        &self.shared.core.name
    }

    /// The bound on entries.
    pub fn max_entries(&self) -> usize {
        self.shared.max_entries
    }

    /// The live entries of `keys`, in their order, judged on the store's clock.
    pub fn read<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<LimitEntry>>> {
        let _slot = self.shared.slot()?;
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.as_ref().to_vec()).collect();
        let targets = self.shared.targets(&keys)?;
        Ok(self.shared.read(&targets)?.1.into_iter().map(|(e, _)| e).collect())
    }

    /// Starts an update of `keys`: reads their live entries. Call `apply`
    /// with [`LimitUpdate::entries`] and [`LimitUpdate::now`], then
    /// [`LimitUpdate::commit_then`]. The update holds one of the calls in
    /// flight until it is committed or dropped.
    pub fn begin<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<LimitUpdate> {
        let slot = self.shared.slot()?;
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.as_ref().to_vec()).collect();
        let targets = self.shared.targets(&keys)?;
        let (now, read) = self.shared.read(&targets)?;
        let (entries, seen) = read.into_iter().unzip();
        Ok(LimitUpdate {
            shared: self.shared.clone(),
            keys,
            targets,
            seen,
            entries,
            now,
            attempt: 1,
            started: Instant::now(),
            _slot: slot,
        })
    }

    /// The contract's `update`, blocking: runs `apply(entries, now)` and
    /// writes what it returns, one [`Change`] a key, with no other update to
    /// these keys in between; `apply` runs again if another update changed
    /// them meanwhile. Events are logged through the `log` crate.
    pub fn update<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        mut apply: impl FnMut(&[Option<LimitEntry>], i64) -> Vec<Change>,
    ) -> Result<Updated> {
        let mut u = self.begin(keys)?;
        loop {
            let changes = apply(u.entries(), u.now());
            let (tx, rx) = mpsc::sync_channel(1);
            u.commit_then(changes, move |c| {
                let _ = tx.send(c);
            })?;
            match rx.recv().map_err(|_| Error::closed())? {
                Commit::Done(d) => {
                    d.events.iter().for_each(LimitEvent::log);
                    return Ok(d);
                }
                Commit::Retry(next) => u = next,
                Commit::Failed(e, events) => {
                    events.iter().for_each(LimitEvent::log);
                    return Err(e);
                }
            }
        }
    }

    /// The contract's `sweep`, blocking: removes expired entries and says how many went.
    pub fn sweep(&self) -> Result<usize> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.sweep_then(move |r| {
            let _ = tx.send(r);
        })?;
        rx.recv().map_err(|_| Error::closed())?.map(|s| s.removed)
    }

    /// The completion form of [`LimitStore::sweep`]: `done` gets the result
    /// once durable, or an `OutcomeUnknown` error at the deadline.
    pub fn sweep_then(&self, done: impl FnOnce(Result<Swept>) + Send + 'static) -> Result<Ticket> {
        let slot = self.shared.slot()?;
        let shared = self.shared.clone();
        let ms = shared.deadline.as_millis();
        let answer = Arc::new(AnswerOnce::new(done, move || {
            Err(deadline::overdue_error("the sweep", ms))
        }));
        let a = answer.clone();
        let name = shared.core.name.clone();
        if let Some(pg) = self.shared.store.inner.postgres() {
            pg.spawn(
                move |pool, sent| async move {
                    let (removed, entries) = on_postgres::sweep(&pool, &sent, &shared, sweep::SWEEP_ROUNDS).await?;
                    Ok(Swept { removed, entries })
                },
                move |r: Result<Swept>| {
                    drop(slot);
                    a.give(r.map_err(|e| e.in_bucket(&name)));
                },
            )?;
            deadline::watch(Instant::now() + self.shared.deadline, &answer, None);
            return Ok(Ticket::finished());
        }
        let ticket = self.shared.store.inner.writer.submit(
            sweep::SWEEP_WEIGHT,
            move |w| sweep::sweep(&shared, w),
            move |r: Result<Swept>| {
                drop(slot);
                a.give(r.map_err(|e| e.in_bucket(&name)));
            },
        )?;
        deadline::watch(Instant::now() + self.shared.deadline, &answer, Some(ticket.clone()));
        Ok(ticket)
    }

    /// Entries held, as the count in the file says (live entries, and
    /// expired ones not yet swept, which the next sweep removes).
    pub fn entries(&self) -> Result<usize> {
        let sh = &self.shared;
        sh.store.inner.check_open()?;
        if let Some(pg) = sh.store.inner.postgres() {
            let id = sh.core.id;
            return pg
                .block(async |pool, _| crate::postgres::limit_rows::count(pool, id).await)
                .map_err(|e| e.in_bucket(&sh.core.name));
        }
        let now = sh.store.inner.clock.now_millis();
        sh.store
            .inner
            .readers
            .with(|c| crate::limit_count::count_on(c, sh.core.id, now))
    }
}

/// One `update` in progress: the entries as read, waiting for `apply`'s
/// changes. Dropping it gives up the update (nothing is written).
pub struct LimitUpdate {
    shared: Arc<Shared>,
    keys: Vec<Vec<u8>>,
    targets: Vec<Target>,
    seen: Vec<Option<i64>>,
    entries: Vec<Option<LimitEntry>>,
    now: i64,
    attempt: u32,
    started: Instant,
    /// Held until the update is answered or dropped.
    _slot: Slot,
}

impl fmt::Debug for LimitUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LimitUpdate({} keys, attempt {})", self.keys.len(), self.attempt)
    }
}

impl LimitUpdate {
    /// The live entries of the keys, in their order, for `apply`.
    pub fn entries(&self) -> &[Option<LimitEntry>] {
        &self.entries
    }

    /// The store's clock when the entries were read, in ms, for `apply`.
    pub fn now(&self) -> i64 {
        self.now
    }

    /// Which run of `apply` this is (1 for the first).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Writes `changes` (one a key, in the keys' order) if no key changed
    /// since the read, all in one write; `done` gets the answer on the
    /// writer thread, or on the deadline thread when the deadline passes
    /// first. Bad changes, a closed store or a passed deadline are refused
    /// here, with nothing written and `done` never called. The ticket gives
    /// up the write if its group has not started.
    pub fn commit_then(self, changes: Vec<Change>, done: impl FnOnce(Commit) + Send + 'static) -> Result<Ticket> {
        let sh = self.shared.clone();
        let name = sh.core.name.clone();
        commit::check_changes(&sh, &self.keys, &changes)?;
        let at = self.started + sh.deadline;
        if Instant::now() >= at {
            return Err(Error::new(
                ErrorKind::Cancelled,
                format!(
                    "the limit store is unavailable: the update took over {} ms before it could be written; nothing was written",
                    sh.deadline.as_millis()
                ),
            )
            .in_bucket(&name));
        }
        let ms = sh.deadline.as_millis();
        let answer = Arc::new(AnswerOnce::new(done, move || {
            Commit::Failed(deadline::overdue_error("the update", ms), Vec::new())
        }));
        let a = answer.clone();
        let weight = changes
            .iter()
            .map(|c| match c {
                Change::Put(e) => e.value.len() + 64,
                _ => 64,
            })
            .sum();
        let (keys, targets, seen) = (self.keys.clone(), self.targets.clone(), self.seen.clone());
        let op_shared = sh.clone();
        if let Some(pg) = sh.store.inner.postgres() {
            pg.spawn(
                move |pool, sent| async move {
                    on_postgres::commit(&pool, &sent, &op_shared, &keys, &targets, &seen, &changes).await
                },
                move |r: Result<commit::Outcome>| a.give(self.answer(r)),
            )?;
            deadline::watch(at, &answer, None);
            return Ok(Ticket::finished());
        }
        let ticket = sh.store.inner.writer.submit(
            weight,
            move |w| commit::commit(&op_shared, w, &keys, &targets, &seen, &changes),
            move |r: Result<commit::Outcome>| a.give(self.answer(r)),
        )?;
        deadline::watch(at, &answer, Some(ticket.clone()));
        Ok(ticket)
    }

    /// Turns the write's outcome into the caller's answer.
    fn answer(mut self, r: Result<commit::Outcome>) -> Commit {
        match r {
            Ok(commit::Outcome::Written { entries, events }) => Commit::Done(Updated { entries, events }),
            Ok(commit::Outcome::Changed { now, fresh }) => {
                if self.attempt >= MAX_UPDATE_ATTEMPTS {
                    let e = Error::conflict(format!(
                        "other updates kept changing these keys: gave up after {} runs of apply",
                        self.attempt
                    ))
                    .in_bucket(&self.shared.core.name);
                    return Commit::Failed(e, Vec::new());
                }
                let (entries, seen) = fresh.into_iter().unzip();
                self.entries = entries;
                self.seen = seen;
                self.now = now;
                self.attempt += 1;
                Commit::Retry(self)
            }
            Ok(commit::Outcome::Refused { error, events }) => Commit::Failed(error, events),
            Err(e) => Commit::Failed(e.in_bucket(&self.shared.core.name), Vec::new()),
        }
    }
}
