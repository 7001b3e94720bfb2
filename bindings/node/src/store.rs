//! The store, its test clock and maintenance.

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi_derive::napi;
use tinystore::{Options, Store};

use crate::bucket::NativeBucket;
use crate::completions::{self, nothing, sync};
use crate::convert::{self, ValueKind};
use crate::limits::{self, NativeCounters, NativeQuota, NativeRateLimit};
use crate::napi_values as js;
use crate::once::NativeOnce;
use crate::tx;
use crate::view::NativeSnapshot;

/// An open store (the package's `Store` wraps it).
#[napi]
pub struct NativeStore {
    pub(crate) store: Store,
    /// Opened with a memory budget: a write's submit may wait for memory,
    /// so its buckets' sets are never streamed into a burst (see `write_handoff::set`).
    pub(crate) budgeted: bool,
}

#[napi]
impl NativeStore {
    /// Opens the store in `dir`; `clock_ms` gives a test clock starting then,
    /// `memory` a memory budget in bytes (`Options::memory`), `mmap_size`
    /// the bytes of kv.db each reader maps (`Options::mmap_size`),
    /// `keep_read_locks` whether readers keep their read-mark lock between
    /// reads (`Options::keep_read_locks`), `share_with_group` whether the
    /// files it creates are its group's too (`Options::share_with_group`).
    /// Bad options are refused before anything is created.
    #[napi(factory)]
    pub fn open(
        env: Env,
        dir: String,
        clock_ms: Option<f64>,
        memory: Option<f64>,
        mmap_size: Option<f64>,
        keep_read_locks: Option<bool>,
        share_with_group: Option<bool>,
    ) -> napi::Result<NativeStore> {
        let r = (|| {
            let mut options = Options::new();
            if let Some(ms) = clock_ms {
                options = options.test_clock(convert::time(ms, "the clock")?);
            }
            if let Some(n) = memory {
                options = options.memory(usize::try_from(tinystore::store_size("memory", n)?).unwrap_or(usize::MAX));
            }
            if let Some(n) = mmap_size {
                options = options.mmap_size(tinystore::store_size("mmapSize", n)?);
            }
            if let Some(on) = keep_read_locks {
                options = options.keep_read_locks(on);
            }
            if let Some(on) = share_with_group {
                options = options.share_with_group(on);
            }
            Store::open_with(&dir, options)
        })();
        Ok(NativeStore {
            store: sync(&env, r)?,
            budgeted: memory.is_some(),
        })
    }

    /// The directory of the store.
    #[napi]
    pub fn dir(&self) -> String {
        self.store.dir().to_string_lossy().into_owned()
    }

    /// Whether the store has a test clock (and so runs nothing in the background).
    #[napi]
    pub fn is_manual(&self) -> bool {
        self.store.is_manual()
    }

    /// The store's time now, in ms since the Unix epoch.
    #[napi]
    pub fn now(&self) -> f64 {
        self.store.clock().now_millis() as f64
    }

    /// Moves a test clock forward; returns the new time in ms.
    #[napi]
    pub fn advance<'e>(&self, env: &'e Env, by: Unknown<'e>) -> napi::Result<f64> {
        let r = convert::duration(env, &by, "the clock's step").and_then(|d| {
            let d = d.ok_or_else(|| completions::invalid("advance takes a duration as '16m' or a number of ms"))?;
            self.store.clock().advance(d)
        });
        Ok(tinystore::to_millis(sync(env, r)?) as f64)
    }

    /// Sets a test clock to `ms`, never backwards.
    #[napi]
    pub fn set_clock(&self, env: Env, ms: f64) -> napi::Result<()> {
        let r = convert::time(ms, "the clock").and_then(|t| self.store.clock().set(t));
        sync(&env, r)
    }

    /// Flushes memory and sweeps cleared and expired rows; resolves with the counts.
    #[napi(
        ts_return_type = "Promise<{ flushed: number, renewed: number, cleared: number, expired: number, more: boolean }>"
    )]
    pub fn maintain<'e>(&self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        crate::write_handoff::hand_over_held();
        let store = self.store.clone();
        completions::off_thread(
            env,
            move || store.maintain(),
            |env, m| {
                let fields = [
                    ("flushed\0", js::number(env, m.flushed as f64)?),
                    ("renewed\0", js::number(env, m.renewed as f64)?),
                    ("cleared\0", js::number(env, m.cleared as f64)?),
                    ("expired\0", js::number(env, m.expired as f64)?),
                    ("more\0", js::boolean(env, m.more)?),
                ];
                js::object_of(env, &fields)
            },
        )
    }

    /// Writes what memory holds and closes the file.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'e>(&self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        crate::write_handoff::hand_over_held();
        let store = self.store.clone();
        completions::off_thread(env, move || store.close(), nothing)
    }

    /// Whether the store is closed.
    #[napi]
    pub fn is_closed(&self) -> bool {
        self.store.is_closed()
    }

    /// Every name in the file with its kind, as `[name, kind]` pairs.
    #[napi]
    pub fn names(&self, env: Env) -> napi::Result<Vec<Vec<String>>> {
        let names = sync(&env, self.store.names())?;
        Ok(names.into_iter().map(|(n, k)| vec![n, k]).collect())
    }

    /// Groups committed and writes in them since the store opened, as
    /// `[groups, writes]`: how well writes in flight were grouped.
    #[napi]
    pub fn group_stats(&self) -> Vec<f64> {
        let (groups, writes) = self.store.group_stats();
        vec![groups as f64, writes as f64]
    }

    /// Makes the next group's commit fail as a failed fsync would (tests only).
    #[napi]
    pub fn fail_next_commit_for_tests(&self) {
        self.store.fail_next_commit_for_tests();
    }

    /// Starts a transaction: resolves with a `NativeTx` when the writer's
    /// turn comes, which the caller must commit or roll back soon (the
    /// writer runs nothing else meanwhile).
    #[napi(ts_return_type = "Promise<NativeTx>")]
    pub fn transaction<'e>(&self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        tx::begin(env, &self.store)
    }

    /// Opens a read snapshot of the file.
    #[napi]
    pub fn snapshot(&self, env: Env) -> napi::Result<NativeSnapshot> {
        let snapshot = sync(&env, self.store.snapshot())?;
        Ok(NativeSnapshot { snapshot })
    }

    /// Opens a bucket of values of `value_type` (`'auto'` when not given),
    /// or of the bytes of the package's `codec`, with a `ttl` or an `idle` span.
    #[napi]
    pub fn bucket<'e>(
        &self,
        env: &'e Env,
        name: String,
        ttl: Unknown<'e>,
        idle: Unknown<'e>,
        value_type: Option<String>,
        codec: bool,
    ) -> napi::Result<NativeBucket> {
        let r = (|| {
            tinystore::type_or_codec(value_type.is_some(), codec).map_err(|e| e.in_bucket(&name))?;
            let kind = match codec {
                true => ValueKind::Codec,
                false => ValueKind::parse(value_type.as_deref().unwrap_or("auto"))?,
            };
            let ttl = convert::duration(env, &ttl, "ttl")?;
            let idle = convert::duration(env, &idle, "idle")?;
            let raw = tinystore::RawBucket::open(&self.store, &name, ttl, idle).map_err(|e| e.in_bucket(&name))?;
            Ok(NativeBucket {
                raw,
                kind,
                streams: !self.budgeted,
            })
        })();
        sync(env, r)
    }

    /// Opens a rate limit: `rate` as `'5/m'`, and a `burst`.
    #[napi]
    pub fn rate_limit(
        &self,
        env: Env,
        name: String,
        rate: Option<String>,
        burst: Option<f64>,
    ) -> napi::Result<NativeRateLimit> {
        let r = limits::open_rate_limit(&self.store, &name, rate.as_deref(), burst);
        Ok(NativeRateLimit { limit: sync(&env, r)? })
    }

    /// Opens a quota of windows `names[i]` at `rates[i]` (as `'100/5h'`).
    #[napi]
    pub fn quota(&self, env: Env, name: String, names: Vec<String>, rates: Vec<String>) -> napi::Result<NativeQuota> {
        let windows = names.iter().zip(&rates).map(|(n, r)| (n.as_str(), r.as_str()));
        Ok(NativeQuota {
            quota: sync(&env, self.store.quota_at(&name, windows))?,
        })
    }

    /// Opens counters with a `ttl` and a `flush_every` period, answering
    /// numbers (`value_type` `'int'`) or bigints (`'bigint'`).
    #[napi]
    pub fn counters<'e>(
        &self,
        env: &'e Env,
        name: String,
        ttl: Unknown<'e>,
        flush_every: Unknown<'e>,
        value_type: String,
    ) -> napi::Result<NativeCounters> {
        let r = (|| {
            let big = match value_type.as_str() {
                "int" => false,
                "bigint" => true,
                other => {
                    return Err(crate::completions::invalid(format!(
                        "type {other:?} is not a type of counters: use 'int' (numbers) or 'bigint'"
                    ))
                    .in_bucket(&name));
                }
            };
            let mut b = self.store.counters(&name);
            if let Some(d) = convert::duration(env, &ttl, "ttl")? {
                b = b.ttl(d);
            }
            if let Some(d) = convert::duration(env, &flush_every, "flushEvery")? {
                b = b.flush_every(d);
            }
            Ok((b.open().map_err(|e| e.in_bucket(&name))?, big))
        })();
        let (counters, big) = sync(env, r)?;
        Ok(NativeCounters { counters, big })
    }

    /// Opens a once whose answers are of `value_type`, kept for `keep`.
    #[napi]
    pub fn once<'e>(
        &self,
        env: &'e Env,
        name: String,
        keep: Unknown<'e>,
        value_type: String,
    ) -> napi::Result<NativeOnce> {
        let r = (|| {
            let kind = ValueKind::parse(&value_type)?;
            let keep = convert::duration(env, &keep, "keep")?;
            let once = tinystore::RawOnce::open(&self.store, &name, keep).map_err(|e| e.in_bucket(&name))?;
            Ok(NativeOnce { once, kind })
        })();
        sync(env, r)
    }
}
