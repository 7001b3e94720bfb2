//! Counters, rate limits, quotas and `once` (KV-11 to KV-14), on the same
//! cells as buckets of values.
//!
//! Where each one keeps its state:
//! - durable counters, quotas and the answers `once` keeps are written
//!   through the writer on every call, like any bucket write;
//! - `flush_every` counters and rate limits live in the limits table beside
//!   kv.db, which every process on the store maps ([`shared`]), through a
//!   [`memory::Memory`] per name; it is written every period, by `maintain`
//!   and on close;
//! - a run of `once` is claimed in this store's memory and, for other
//!   processes, in the `runs` table under a lease that a heartbeat renews.
//!
//! On PostgreSQL, counters, quotas and rate limits write the shared rows
//! at every call, by the same rules ([`on_postgres`]), and a rate limit
//! keeps only refusals in memory ([`refusals`]).
//!
//! State that every handle of one name shares (a memory, the runs of once)
//! lives in a registry keyed by the store, not in the handles, so dropping
//! a handle never loses what memory holds.

mod claims;
mod counters;
mod gcra;
mod memory;
mod on_postgres;
mod once;
mod quota;
mod rate_limit;
mod rates_as_text;
mod refusals;
mod shared;
mod timer;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use claims::{ONCE_HEARTBEAT, ONCE_LEASE, ONCE_POLL};
pub(crate) use counters::How;
pub use counters::{Counters, CountersBuilder};
pub use memory::MEMORY_BOUND;
pub(crate) use once::inside_run;
pub use once::{Begun, Claim, Once, OnceBuilder, RawOnce, claim_ended, waiter_gave_up};
pub use quota::{MAX_WINDOWS, Quota, QuotaBuilder};
pub use rate_limit::{RateLimit, RateLimitBuilder};
pub use rates_as_text::window_rate_error;
pub use shared::TABLE_FILE;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::store::{Store, StoreInner};
use claims::Runs;
use counters::Count;
use memory::Memory;
use rate_limit::Due;
use shared::{RegionKind, Table};

// Bindings hold these across threads: a claim while a Python or JS
// function runs, handles in every worker.
const _: () = {
    const fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<Counters>();
    shared_across_threads::<RateLimit>();
    shared_across_threads::<Quota>();
    shared_across_threads::<RawOnce>();
    shared_across_threads::<Claim>();
    shared_across_threads::<Begun>();
    shared_across_threads::<Once<String>>();
};

/// The answer of a rate limit or a quota: whether the request passes, how
/// many more would pass now, and when to try again after a refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allowance {
    /// Whether the request passed (and was counted).
    pub ok: bool,
    /// How many more requests would pass now: for a quota, the least over
    /// its windows.
    pub left: u64,
    /// After a refusal, when the same request would pass: for a quota, when
    /// the windows that refused reset. `None` when the request passed.
    pub retry_at: Option<SystemTime>,
    /// Each window of a quota by name; empty for a rate limit.
    pub windows: BTreeMap<String, WindowUsage>,
}

impl Allowance {
    /// The usage of one window of a quota.
    pub fn window(&self, name: &str) -> Option<&WindowUsage> {
        self.windows.get(name)
    }
}

/// One window of a quota, as an answer reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowUsage {
    /// Uses counted in the window since it started.
    pub used: u64,
    /// The window's limit.
    pub limit: u64,
    /// Uses left before the window refuses.
    pub left: u64,
    /// When the window resets; `None` while it has not started (no use since
    /// the last one ended).
    pub resets_at: Option<SystemTime>,
}

/// The `flush_every` the first handle of a counters name chose, and the
/// memory when it chose one.
type CountersMode = (Option<Duration>, Option<Arc<Memory<Count>>>);

/// What every handle of one store shares, by name.
pub(crate) struct Shared {
    store: Weak<StoreInner>,
    /// Counters by name id.
    counters: Mutex<HashMap<i64, CountersMode>>,
    /// The memory of each rate limit, by name id.
    rates: Mutex<HashMap<i64, Arc<Memory<Due>>>>,
    /// The runs of `once` claimed through this store.
    runs: Mutex<Option<Arc<Runs>>>,
    /// The limits table, once a name needs it.
    table: Mutex<Option<Arc<Table>>>,
}

/// The registry of per-store state. A store's entry goes when the store is
/// gone; memories keep themselves alive until the store's last flush, so
/// pruning an entry never loses a count.
static REGISTRY: Mutex<Vec<Arc<Shared>>> = Mutex::new(Vec::new());

/// Locks a mutex whose state stays consistent across a panic: every update
/// under these locks is a single insert, remove or assignment.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shared state of `store`.
pub(crate) fn shared(store: &Store) -> Arc<Shared> {
    let mut reg = lock(&REGISTRY);
    reg.retain(|s| s.store.strong_count() > 0);
    let ptr = Arc::as_ptr(&store.inner);
    if let Some(s) = reg.iter().find(|s| std::ptr::eq(s.store.as_ptr(), ptr)) {
        return s.clone();
    }
    let s = Arc::new(Shared {
        store: Arc::downgrade(&store.inner),
        counters: Mutex::new(HashMap::new()),
        rates: Mutex::new(HashMap::new()),
        runs: Mutex::new(None),
        table: Mutex::new(None),
    });
    reg.push(s.clone());
    s
}

impl Shared {
    /// The memory of counters `name` opened with `flush_every` (none when
    /// they are durable), refusing a second choice for the same name.
    fn counters_memory(
        &self,
        store: &Store,
        id: i64,
        name: &str,
        flush_every: Option<Duration>,
    ) -> Result<Option<Arc<Memory<Count>>>> {
        if store.inner.postgres().is_some() {
            return Ok(None); // every change is written (counters.rs)
        }
        let mut map = lock(&self.counters);
        if let Some((chosen, memory)) = map.get(&id) {
            if *chosen != flush_every {
                let say = |d: &Option<Duration>| match d {
                    Some(d) => format!("flush_every {d:?}"),
                    None => "no flush_every (durable)".to_owned(),
                };
                return Err(Error::invalid(format!(
                    "counters {name:?} are open with {} in this store, so they cannot open with {}: \
                     every handle of a name shares one memory",
                    say(chosen),
                    say(&flush_every)
                ))
                .in_bucket(name));
            }
            return Ok(memory.clone());
        }
        let say = |d: Duration| format!("flush_every {d:?}");
        let memory = match flush_every {
            Some(d) => {
                let table = self.table(store)?;
                let period_ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                // Counters read every new key: a key that left the table may
                // have a row.
                let region = table.region(id, RegionKind::Counters, period_ms, || Ok(i64::MAX))?;
                region.check_kind(RegionKind::Counters, name)?;
                if region.period_ms() != period_ms {
                    return Err(Error::invalid(format!(
                        "counters {name:?} are open with {} by another process on this store, so they cannot \
                         open with {}: every handle of a name, in every process, shares one memory",
                        say(Duration::from_millis(region.period_ms())),
                        say(d)
                    ))
                    .in_bucket(name));
                }
                Some(Memory::new(store, name, "counters", id, d, region))
            }
            None => {
                // A durable name never lays the table out; it only looks
                // whether a process already keeps the name in memory.
                let kept = match store.dir().join(TABLE_FILE).exists() {
                    true => self.table(store)?.period_of(id),
                    false => None,
                };
                if let Some(period_ms) = kept {
                    return Err(Error::invalid(format!(
                        "counters {name:?} are open with {} by another process on this store, so they cannot \
                         open with no flush_every (durable): a durable add would be lost under the memory's next flush",
                        say(Duration::from_millis(period_ms))
                    ))
                    .in_bucket(name));
                }
                None
            }
        };
        map.insert(id, (flush_every, memory.clone()));
        Ok(memory)
    }

    /// The memory of rate limit `name`. It reads a new key from the file
    /// only while a row the file held when its region was laid out may
    /// still be live.
    fn rate_memory(&self, store: &Store, id: i64, name: &str) -> Result<Arc<Memory<Due>>> {
        let mut rates = lock(&self.rates);
        if let Some(m) = rates.get(&id) {
            return Ok(m.clone());
        }
        let region = self.table(store)?.region(id, RegionKind::RateLimit, 1_000, || {
            store.inner.readers.with(|c| crate::storage::bucket_last_expiry(c, id))
        })?;
        region.check_kind(RegionKind::RateLimit, name)?;
        let m = Memory::new(store, name, "rate limit", id, Duration::from_secs(1), region);
        rates.insert(id, m.clone());
        Ok(m)
    }

    /// The limits table of the store's file, mapped at its first use.
    fn table(&self, store: &Store) -> Result<Arc<Table>> {
        let mut table = lock(&self.table);
        if let Some(t) = &*table {
            return Ok(t.clone());
        }
        let t = shared::open(&store.file())?;
        *table = Some(t.clone());
        Ok(t)
    }

    /// The runs of `once` of this store.
    fn runs(&self) -> Arc<Runs> {
        lock(&self.runs)
            .get_or_insert_with(|| Runs::new(self.store.clone()))
            .clone()
    }
}

impl Store {
    #[doc(hidden)]
    /// How many times a `once` waiter of this store looked at the file and
    /// found another process running its key. For tests.
    pub fn once_busy_polls_for_tests(&self) -> usize {
        shared(self).runs().busy_polls()
    }
}

/// The longest path [`with_path`] builds on the stack; a longer one is
/// allocated (a key that long is rare).
const STACK_PATH: usize = 256;
// A path short enough for the stack is never too long for a key.
const _: () = assert!(STACK_PATH <= crate::key::MAX_PATH);

/// Runs `f` with the path of `key` in `branch`. A plain key (no NUL, not
/// empty, short) is written into a buffer on the stack, so the hot path of a
/// rate limit does not allocate (a thread-local buffer cost a TLS lookup a
/// call in a shared library); any other goes through [`Branch::path`],
/// which escapes it or says what is wrong with it.
pub(crate) fn with_path<R>(
    branch: &crate::key::Branch,
    name: &str,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> Result<R>,
) -> Result<R> {
    let prefix = branch.prefix();
    let len = prefix.len() + 1 + key.len();
    // A byte loop rather than `contains`: a key is a few bytes, and the call
    // to memchr cost more than the loop.
    let plain = len <= STACK_PATH
        && !key.is_empty()
        && key.iter().all(|&b| b != 0)
        && branch.owners().iter().all(|o| !o.is_empty());
    if plain {
        // Uninitialised: zeroing the whole buffer cost more than writing the path.
        let mut buf = std::mem::MaybeUninit::<[u8; STACK_PATH]>::uninit();
        let p = buf.as_mut_ptr().cast::<u8>();
        // SAFETY: len <= STACK_PATH, so the three writes stay inside the
        // buffer, and together they write each of its first len bytes.
        let path = unsafe {
            std::ptr::copy_nonoverlapping(prefix.as_ptr(), p, prefix.len());
            *p.add(prefix.len()) = 0x02; // the key's tag in a path (key.rs)
            std::ptr::copy_nonoverlapping(key.as_ptr(), p.add(prefix.len() + 1), key.len());
            std::slice::from_raw_parts(p, len)
        };
        debug_assert_eq!(Some(path), branch.path(name, key).ok().as_deref());
        return f(path);
    }
    f(&branch.path(name, key)?)
}

/// The time now in nanoseconds since the Unix epoch, for rate limits: the
/// test clock's milliseconds, or the system clock held so that it never goes
/// back (`floor` keeps the highest time shown).
#[inline]
pub(crate) fn now_nanos(clock: &Clock, floor: &AtomicI64) -> i64 {
    if clock.is_manual() {
        return clock.now_millis().saturating_mul(1_000_000);
    }
    let sys = system_nanos();
    floor.fetch_max(sys, Ordering::AcqRel).max(sys)
}

/// The system clock in nanoseconds since the Unix epoch (0 before it). On
/// Unix straight from `clock_gettime`: `SystemTime`'s checked subtraction
/// and 128-bit nanoseconds were a third of the clock's cost in an `allow`.
#[cfg(unix)]
#[allow(clippy::useless_conversion)] // time_t and c_long are narrower than i64 on some targets
#[inline]
fn system_nanos() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } != 0 {
        return portable_system_nanos();
    }
    i64::from(ts.tv_sec)
        .saturating_mul(1_000_000_000)
        .saturating_add(i64::from(ts.tv_nsec))
        .max(0)
}

#[cfg(not(unix))]
fn system_nanos() -> i64 {
    portable_system_nanos()
}

fn portable_system_nanos() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

/// The time `ns` nanoseconds after the Unix epoch.
pub(crate) fn from_nanos(ns: i64) -> SystemTime {
    if ns >= 0 {
        UNIX_EPOCH + Duration::from_nanos(ns as u64)
    } else {
        UNIX_EPOCH - Duration::from_nanos(ns.unsigned_abs())
    }
}

/// Real time in milliseconds since the Unix epoch, whatever the store's
/// clock: leases of `once` are about processes dying, which is real.
pub(crate) fn real_millis() -> i64 {
    crate::clock::to_millis(SystemTime::now())
}
