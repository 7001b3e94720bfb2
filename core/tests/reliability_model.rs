//! A model test: random calls of KV-4 to KV-10 on a store and on
//! a plain in-memory model of what the contract promises, with clock moves,
//! maintenance and reopens between them; every answer must agree.
//!
//! The calls: set, get (as `entry`: value, version, expiry), create, take,
//! delete, expire, each with `ifVersion` where it takes one, a call's own
//! `ttl` or `expiresAt`, `clear` of branches, `list` page by page. One bucket
//! has no ttl, the other a ttl of 10 s. Versions are checked to be new at
//! every write, across reopens.
//!
//! Each run prints its seed; `TINYSTORE_SEED=<n>` replays it, and
//! `TINYSTORE_MODEL_CASES=<n>` runs more cases (the long form:
//! `TINYSTORE_MODEL_CASES=5000 cargo test --release -p tinystore --test reliability_model -- --nocapture`).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use tinystore::{
    Created, Entry, ErrorKind, Expiry, ListOptions, Options, Raw, RawBucket, Store, Version, WriteOptions, from_millis,
};

/// Cases of a run of `cargo test`: well under a minute in a debug build.
const CASES: u32 = 150;
const MAX_OPS: usize = 60;
/// The bucket ttl of the second bucket, in ms.
const TTL: i64 = 10_000;
/// Few owners and keys, so that calls meet on the same keys; they still
/// hold a NUL and digits, whose order as text differs from as numbers.
const OWNERS: [&[u8]; 2] = [b"x", b"x\0"];
const KEYS: [&[u8]; 4] = [b"a", b"a\0", b"10", b"9"];

#[derive(Clone, Copy, Debug)]
enum Exp {
    /// `ttl`: this many ms from now.
    In(u64),
    /// `expiresAt`: now plus this many ms, which may be in the past.
    At(i64),
}

#[derive(Clone, Copy, Debug)]
enum Pick {
    /// The key's live version, if it has one.
    Current,
    /// One of the versions the store gave before.
    Seen(usize),
    /// A version the store never gave.
    Never,
}

type Owners = Vec<usize>;
/// A row's owners and key, as the model keys its rows.
type RowPath = (Vec<Vec<u8>>, Vec<u8>);
/// A listed or read entry as compared: key, value, version, expiry.
type Seen = (Vec<u8>, Raw, i64, Option<std::time::SystemTime>);

#[derive(Clone, Debug)]
enum Op {
    Set(usize, Owners, usize, Raw, Option<Exp>, Option<Pick>),
    Get(usize, Owners, usize),
    Create(usize, Owners, usize, Raw, Option<Exp>),
    Take(usize, Owners, usize, Option<Pick>),
    Delete(usize, Owners, usize, Option<Pick>),
    Expire(usize, Owners, usize, Exp, Option<Pick>),
    Clear(usize, Owners),
    List(usize, Owners, usize),
    Advance(u64),
    Maintain,
    Reopen,
}

fn value() -> impl Strategy<Value = Raw> {
    prop_oneof![
        any::<i64>().prop_map(Raw::Int),
        (0u8..4).prop_map(|n| Raw::Bytes(vec![b'v'; n as usize])),
        // Over 512 bytes: kept in a row of its own.
        (0u8..255).prop_map(|n| Raw::Bytes(vec![n; 600])),
        Just(Raw::Null),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let b = 0..2usize;
    // Mostly the root and one owner, sometimes two.
    let owners = prop_oneof![
        3 => Just(Vec::new()),
        2 => vec(0..OWNERS.len(), 1),
        1 => vec(0..OWNERS.len(), 2),
    ];
    let key = 0..KEYS.len();
    let exp = prop_oneof![(1u64..30_000).prop_map(Exp::In), (-5_000i64..30_000).prop_map(Exp::At)];
    let pick = prop_oneof![
        3 => Just(Pick::Current),
        2 => (0usize..64).prop_map(Pick::Seen),
        1 => Just(Pick::Never),
    ];
    let pick = option::weighted(0.3, pick);
    prop_oneof![
        6 => (b.clone(), owners.clone(), key.clone(), value(), option::weighted(0.4, exp.clone()), pick.clone())
            .prop_map(|(b, o, k, v, e, p)| Op::Set(b, o, k, v, e, p)),
        4 => (b.clone(), owners.clone(), key.clone()).prop_map(|(b, o, k)| Op::Get(b, o, k)),
        3 => (b.clone(), owners.clone(), key.clone(), value(), option::weighted(0.4, exp.clone()))
            .prop_map(|(b, o, k, v, e)| Op::Create(b, o, k, v, e)),
        2 => (b.clone(), owners.clone(), key.clone(), pick.clone()).prop_map(|(b, o, k, p)| Op::Take(b, o, k, p)),
        2 => (b.clone(), owners.clone(), key.clone(), pick.clone()).prop_map(|(b, o, k, p)| Op::Delete(b, o, k, p)),
        2 => (b.clone(), owners.clone(), key.clone(), exp, pick).prop_map(|(b, o, k, e, p)| Op::Expire(b, o, k, e, p)),
        1 => (b.clone(), vec(0..OWNERS.len(), 0..=1)).prop_map(|(b, o)| Op::Clear(b, o)),
        2 => (b, owners, 1..=4usize).prop_map(|(b, o, n)| Op::List(b, o, n)),
        3 => prop_oneof![1u64..2_000, Just(TTL as u64), 5_000u64..40_000].prop_map(Op::Advance),
        1 => Just(Op::Maintain),
        1 => Just(Op::Reopen),
    ]
}

/// A row of the model: what the file holds for one path, live or not.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    value: Raw,
    version: i64,
    expires: Option<i64>,
}

/// The model: rows by bucket, owners and key, and the time.
struct Model {
    now: i64,
    rows: [BTreeMap<RowPath, Row>; 2],
    seen: Vec<i64>,
    newest: i64,
}

impl Model {
    fn live(&self, b: usize, path: &RowPath) -> Option<&Row> {
        self.rows[b]
            .get(path)
            .filter(|r| r.expires.is_none_or(|e| e > self.now))
    }

    fn at(&self, e: Exp) -> i64 {
        match e {
            Exp::In(ms) => self.now + ms as i64,
            Exp::At(off) => self.now + off,
        }
    }

    fn expiry(&self, e: Exp) -> Expiry {
        match e {
            Exp::In(ms) => Expiry::In(Duration::from_millis(ms)),
            Exp::At(off) => Expiry::At(from_millis(self.now + off)),
        }
    }

    fn pick(&self, b: usize, path: &RowPath, p: Option<Pick>) -> Option<i64> {
        p.map(|p| match p {
            Pick::Current => self.live(b, path).map_or(self.newest + 1_000, |r| r.version),
            Pick::Seen(i) if !self.seen.is_empty() => self.seen[i % self.seen.len()],
            Pick::Seen(_) | Pick::Never => self.newest + 7_777,
        })
    }

    /// Whether `if_version` lets a write through: only at the live version.
    fn version_ok(&self, b: usize, path: &RowPath, want: Option<i64>) -> bool {
        want.is_none_or(|v| self.live(b, path).is_some_and(|r| r.version == v))
    }

    /// Records a version the store gave: it must be new.
    fn new_version(&mut self, v: Version, what: &str) {
        assert!(
            v.get() > self.newest,
            "{what}: version {} is not new (newest {})",
            v.get(),
            self.newest
        );
        self.newest = v.get();
        self.seen.push(v.get());
    }

    fn expired_rows(&self) -> usize {
        self.rows
            .iter()
            .flat_map(|m| m.values())
            .filter(|r| r.expires.is_some_and(|e| e <= self.now))
            .count()
    }
}

struct Live {
    store: Store,
    buckets: [RawBucket; 2],
}

fn open(dir: &Path, now: i64) -> Live {
    let store = Store::open_with(dir, Options::new().test_clock(from_millis(now))).unwrap();
    let buckets = [
        RawBucket::open(&store, "plain", None, None).unwrap(),
        RawBucket::open(&store, "timed", Some(Duration::from_millis(TTL as u64)), None).unwrap(),
    ];
    Live { store, buckets }
}

fn branch(b: &RawBucket, owners: &[usize]) -> RawBucket {
    owners.iter().fold(b.clone(), |b, &o| b.under(OWNERS[o]))
}

fn path(owners: &[usize], k: usize) -> RowPath {
    (owners.iter().map(|&o| OWNERS[o].to_vec()).collect(), KEYS[k].to_vec())
}

fn entry_of(path: &RowPath, r: &Row) -> Seen {
    (path.1.clone(), r.value.clone(), r.version, r.expires.map(from_millis))
}

fn seen_entry(e: &Entry<Raw>) -> Seen {
    (e.key.0.clone(), e.value.clone(), e.version.get(), e.expires_at)
}

/// A refused `if_version` is `Conflict` naming the bucket and key.
fn conflict<T: std::fmt::Debug>(r: tinystore::Result<T>, bucket: &RawBucket, what: &str) {
    let e = r.expect_err(&format!("{what}: the model says Conflict"));
    assert_eq!(e.kind(), ErrorKind::Conflict, "{what}: {e}");
    assert_eq!(e.bucket(), Some(bucket.name()), "{what}: {e}");
}

/// Runs one case: the same calls on a new store and on the model.
fn run_case(ops: &[Op]) {
    let dir = match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    };
    let start = tinystore::to_millis(common::start());
    let mut live = open(dir.path(), start);
    let mut m = Model {
        now: start,
        rows: [BTreeMap::new(), BTreeMap::new()],
        seen: Vec::new(),
        newest: 0,
    };
    for (i, op) in ops.iter().enumerate() {
        let what = format!("call {i} {op:?}");
        match op.clone() {
            Op::Set(b, o, k, v, e, p) => {
                let (bucket, p_) = (branch(&live.buckets[b], &o), path(&o, k));
                let want = m.pick(b, &p_, p);
                let opts = WriteOptions {
                    expiry: e.map(|e| m.expiry(e)),
                    if_version: want.map(Version::from_raw),
                };
                let r = bucket.set(KEYS[k], v.clone(), opts);
                if !m.version_ok(b, &p_, want) {
                    conflict(r, &bucket, &what);
                    continue;
                }
                let version = r.unwrap_or_else(|e| panic!("{what}: {e}"));
                m.new_version(version, &what);
                let expires = match e {
                    Some(e) => Some(m.at(e)),
                    None => match m.live(b, &p_) {
                        Some(r) => r.expires,
                        None => (b == 1).then_some(m.now + TTL),
                    },
                };
                m.rows[b].insert(
                    p_,
                    Row {
                        value: v,
                        version: version.get(),
                        expires,
                    },
                );
            }
            Op::Get(b, o, k) => {
                let (bucket, p_) = (branch(&live.buckets[b], &o), path(&o, k));
                let got = bucket.entry(KEYS[k]).unwrap_or_else(|e| panic!("{what}: {e}"));
                let want = m.live(b, &p_).map(|r| entry_of(&p_, r));
                assert_eq!(got.as_ref().map(seen_entry), want, "{what}");
            }
            Op::Create(b, o, k, v, e) => {
                let (bucket, p_) = (branch(&live.buckets[b], &o), path(&o, k));
                let got = bucket
                    .create(KEYS[k], v.clone(), e.map(|e| m.expiry(e)))
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                match (got, m.live(b, &p_).cloned()) {
                    (Created::Found(found), Some(r)) => {
                        assert_eq!(seen_entry(&found), entry_of(&p_, &r), "{what}");
                    }
                    (Created::Written { version, expires_at }, None) => {
                        m.new_version(version, &what);
                        let expires = match e {
                            Some(e) => Some(m.at(e)),
                            None => (b == 1).then_some(m.now + TTL),
                        };
                        assert_eq!(
                            expires_at,
                            expires.map(from_millis),
                            "{what}: the expiry create answers"
                        );
                        m.rows[b].insert(
                            p_,
                            Row {
                                value: v,
                                version: version.get(),
                                expires,
                            },
                        );
                    }
                    (got, want) => panic!("{what}: the store answered {got:?}, the model holds {want:?}"),
                }
            }
            Op::Take(b, o, k, p) => {
                let (bucket, p_) = (branch(&live.buckets[b], &o), path(&o, k));
                let want = m.pick(b, &p_, p);
                let r = bucket.take(KEYS[k], want.map(Version::from_raw), |_| Ok(()));
                if !m.version_ok(b, &p_, want) {
                    conflict(r, &bucket, &what);
                    continue;
                }
                let got = r.unwrap_or_else(|e| panic!("{what}: {e}"));
                let expected = m.live(b, &p_).map(|r| entry_of(&p_, r));
                assert_eq!(got.as_ref().map(seen_entry), expected, "{what}");
                if expected.is_some() {
                    m.rows[b].remove(&p_);
                }
            }
            Op::Delete(b, o, k, p) => {
                let (bucket, p_) = (branch(&live.buckets[b], &o), path(&o, k));
                let want = m.pick(b, &p_, p);
                let r = bucket.delete(KEYS[k], want.map(Version::from_raw));
                if !m.version_ok(b, &p_, want) {
                    conflict(r, &bucket, &what);
                    continue;
                }
                let got = r.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(got, m.live(b, &p_).is_some(), "{what}");
                m.rows[b].remove(&p_);
            }
            Op::Expire(b, o, k, e, p) => {
                let (bucket, p_) = (branch(&live.buckets[b], &o), path(&o, k));
                let want = m.pick(b, &p_, p);
                let r = bucket.expire(KEYS[k], m.expiry(e), want.map(Version::from_raw));
                if !m.version_ok(b, &p_, want) {
                    conflict(r, &bucket, &what);
                    continue;
                }
                let got = r.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(got, m.live(b, &p_).is_some(), "{what}");
                if got {
                    let at = m.at(e);
                    m.rows[b].get_mut(&p_).unwrap().expires = Some(at);
                }
            }
            Op::Clear(b, o) => {
                let bucket = branch(&live.buckets[b], &o);
                bucket.clear().unwrap_or_else(|e| panic!("{what}: {e}"));
                let prefix: Vec<Vec<u8>> = o.iter().map(|&i| OWNERS[i].to_vec()).collect();
                m.rows[b].retain(|(owners, _), _| !owners.starts_with(&prefix));
            }
            Op::List(b, o, limit) => {
                let bucket = branch(&live.buckets[b], &o);
                let prefix: Vec<Vec<u8>> = o.iter().map(|&i| OWNERS[i].to_vec()).collect();
                let mut want: Vec<_> = m.rows[b]
                    .iter()
                    .filter(|(p, _)| p.0 == prefix && m.live(b, p).is_some())
                    .map(|(p, r)| entry_of(p, r))
                    .collect();
                want.sort_by(|a, b| a.0.cmp(&b.0));
                let mut got = Vec::new();
                let mut after = None;
                loop {
                    let page = bucket
                        .list(&ListOptions {
                            after: after.take(),
                            limit: Some(limit),
                        })
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(page.entries.len() <= limit, "{what}: a page over its limit");
                    got.extend(page.entries.iter().map(seen_entry));
                    match page.next {
                        Some(n) => after = Some(n),
                        None => break,
                    }
                    assert!(got.len() <= want.len() + limit, "{what}: the pages do not end");
                }
                assert_eq!(got, want, "{what}");
            }
            Op::Advance(ms) => {
                live.store.clock().advance(Duration::from_millis(ms)).unwrap();
                m.now += ms as i64;
            }
            Op::Maintain => {
                let done = live.store.maintain().unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(done.expired, m.expired_rows(), "{what}: expired rows swept");
                let now = m.now;
                for rows in &mut m.rows {
                    rows.retain(|_, r| r.expires.is_none_or(|e| e > now));
                }
            }
            Op::Reopen => {
                live.store.close().unwrap();
                live = open(dir.path(), m.now);
            }
        }
    }
    live.store.close().unwrap();
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn kv10_store_agrees_with_the_model_across_clock_moves_and_reopens() {
    let cases = env_u64("TINYSTORE_MODEL_CASES").map_or(CASES, |n| n as u32);
    let seed = env_u64("TINYSTORE_SEED").unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        t.as_nanos() as u64 ^ u64::from(std::process::id())
    });
    eprintln!("model test: {cases} cases of up to {MAX_OPS} calls, seed {seed} (TINYSTORE_SEED={seed} replays it)");
    let mut runner = TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    });
    let started = std::time::Instant::now();
    let result = runner.run(&vec(op(), 1..=MAX_OPS), |ops| {
        run_case(&ops);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}\nreplay with TINYSTORE_SEED={seed}");
    }
    eprintln!(
        "model test: {cases} cases, 0 divergences, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
