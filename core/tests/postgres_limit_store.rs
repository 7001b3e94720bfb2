//! The limit store on a PostgreSQL store (docs/limit-store.md,
//! docs/postgres.md): the framework's contract on two stores on one
//! database, as two app servers hold it, with the same protocol
//! (`begin`, `commit_then`, the retry) and rules as on kv.db: entries
//! shared by every server, expiry on one clock, the count exact and the
//! bound kept, the store's maintenance sweeping its rows.

mod common;
mod limit_store_calls;
mod pg;

use std::sync::mpsc;
use std::time::Duration;

use limit_store_calls::{commit, count_of, count_once, done_events, entry, failed};
use tinystore::{Change, Commit, ErrorKind, LimitEvent, LimitStore, LimitStoreBuilder, Options, Store};

fn manual(location: &str) -> Store {
    Store::open_with(location, Options::new().test_clock(common::start())).unwrap()
}

/// Two stores on one database, as two app servers hold it, with clocks
/// that move together.
struct Two {
    schema: String,
    a: Store,
    b: Store,
    first: LimitStore,
    second: LimitStore,
}

impl Two {
    fn new(schema: &str) -> Two {
        Two::with(schema, |b| b)
    }

    fn with(schema: &str, opts: impl Fn(LimitStoreBuilder) -> LimitStoreBuilder) -> Two {
        let location = pg::fresh(schema);
        let (a, b) = (manual(&location), manual(&location));
        let first = opts(LimitStore::builder(&a)).open().unwrap();
        let second = opts(LimitStore::builder(&b)).open().unwrap();
        Two {
            schema: schema.to_owned(),
            a,
            b,
            first,
            second,
        }
    }

    fn advance(&self, d: Duration) {
        self.a.clock().advance(d).unwrap();
        self.b.clock().advance(d).unwrap();
    }

    fn now(&self) -> i64 {
        self.a.clock().now_millis()
    }
}

#[test]
fn contract_on_postgres_every_server_sees_the_same_entries() {
    let t = Two::new("ls_shared");
    assert!(t.first.shared() && t.second.shared());
    assert_eq!(count_once(&t.first, "sign-in:ada"), 1);
    assert_eq!(count_once(&t.second, "sign-in:ada"), 2);
    let seen = t.first.read(&["sign-in:ada", "sign-in:bob"]).unwrap();
    assert_eq!(count_of(&seen[0]), 2);
    assert_eq!(seen[1], None);
}

#[test]
fn contract_on_postgres_update_calls_apply_with_the_live_entries_and_the_clock() {
    let t = Two::new("ls_apply");
    let now = t.now();
    let mut calls = Vec::new();
    t.first
        .update(&["a", "b"], |entries, at| {
            calls.push((entries.to_vec(), at));
            vec![Change::Put(entry(r#"{"n":1}"#, at + 1000)), Change::Keep]
        })
        .unwrap();
    assert_eq!(
        calls,
        vec![(vec![None, None], now)],
        "the test clock reaches the statements"
    );
    t.advance(Duration::from_millis(10));
    let mut seen = Vec::new();
    let done = t
        .second
        .update(&["b", "a"], |entries, at| {
            seen.push((entries.to_vec(), at));
            vec![Change::Keep, Change::Keep]
        })
        .unwrap();
    assert_eq!(
        seen,
        vec![(vec![None, Some(entry(r#"{"n":1}"#, now + 1000))], now + 10)]
    );
    assert_eq!(done.entries, vec![None, Some(entry(r#"{"n":1}"#, now + 1000))]);
}

#[test]
fn contract_on_postgres_null_deletes_and_the_count_follows() {
    let t = Two::new("ls_delete");
    let now = t.now();
    t.first
        .update(&["k", "other"], |_, _| {
            vec![
                Change::Put(entry("1", now + 60_000)),
                Change::Put(entry("2", now + 60_000)),
            ]
        })
        .unwrap();
    assert_eq!(t.second.entries().unwrap(), 2, "one count for every server");
    let done = t.second.update(&["k"], |_, _| vec![Change::Delete]).unwrap();
    assert_eq!(done.entries, vec![None]);
    assert_eq!(t.first.read(&["k"]).unwrap(), vec![None]);
    assert_eq!(count_of(&t.first.read(&["other"]).unwrap()[0]), 2);
    assert_eq!(t.first.entries().unwrap(), 1, "a delete gives its room back");
    t.first.update(&["never"], |_, _| vec![Change::Delete]).unwrap();
    assert_eq!(t.first.entries().unwrap(), 1);
}

#[test]
fn contract_on_postgres_expiry_is_judged_on_one_clock() {
    let t = Two::new("ls_expiry");
    let now = t.now();
    t.first
        .update(&["k"], |_, _| vec![Change::Put(entry("5", now + 60_000))])
        .unwrap();
    t.advance(Duration::from_millis(59_999));
    assert_eq!(count_of(&t.second.read(&["k"]).unwrap()[0]), 5);
    t.advance(Duration::from_millis(1));
    assert_eq!(t.second.read(&["k"]).unwrap(), vec![None], "gone at expiresAt");
    let mut saw = None;
    t.first
        .update(&["k"], |e, _| {
            saw = Some(e[0].clone());
            vec![Change::Put(entry("1", t.now() + 1000))]
        })
        .unwrap();
    assert_eq!(saw, Some(None), "apply sees no expired entry");
    assert_eq!(t.first.entries().unwrap(), 1, "a put over an expired row adds none");
    let at = t.now();
    let done = t
        .first
        .update(&["old"], |_, _| vec![Change::Put(entry("1", at))])
        .unwrap();
    assert_eq!(done.entries, vec![None], "an entry written already expired is absent");
    assert_eq!(t.second.read(&["old"]).unwrap(), vec![None]);
}

#[test]
fn contract_on_postgres_sweep_removes_expired_entries_and_answers_how_many_went() {
    let t = Two::new("ls_sweep");
    let now = t.now();
    t.first
        .update(&["a", "b", "c"], |_, _| {
            vec![
                Change::Put(entry("1", now + 1000)),
                Change::Put(entry("1", now + 2000)),
                Change::Put(entry("1", now + 600_000)),
            ]
        })
        .unwrap();
    t.advance(Duration::from_secs(5));
    assert_eq!(t.second.sweep().unwrap(), 2);
    assert_eq!(t.first.sweep().unwrap(), 0);
    assert_eq!(t.first.entries().unwrap(), 1);
    assert_eq!(count_of(&t.first.read(&["c"]).unwrap()[0]), 1);
}

#[test]
fn contract_on_postgres_racing_updates_on_two_servers_never_lose_a_count() {
    let t = Two::new("ls_race");
    let runs = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for i in 0..8 {
            let ls = if i % 2 == 0 { &t.first } else { &t.second };
            let runs = &runs;
            s.spawn(move || {
                for j in 0..25 {
                    // A shared key, and new keys that racers create at once.
                    let keys = ["shared-key".to_string(), format!("new-{}", j % 5)];
                    ls.update(&keys, |e, now| {
                        runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        e.iter()
                            .map(|e| Change::Put(entry(&(count_of(e) + 1).to_string(), now + 60_000)))
                            .collect()
                    })
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(count_of(&t.first.read(&["shared-key"]).unwrap()[0]), 200);
    for j in 0..5 {
        assert_eq!(count_of(&t.second.read(&[format!("new-{j}")]).unwrap()[0]), 40);
    }
    assert!(runs.into_inner() >= 200);
    assert_eq!(t.first.entries().unwrap(), 6, "the count is exact after the races");
}

#[test]
fn contract_on_postgres_apply_runs_again_when_another_server_changed_a_key() {
    let t = Two::new("ls_retry");
    let now = t.now();
    let u = t.first.begin(&["k"]).unwrap();
    assert_eq!(u.entries(), &[None]);
    // The other server creates the key in between.
    count_once(&t.second, "k");
    let (tx, rx) = mpsc::sync_channel(1);
    u.commit_then(vec![Change::Put(entry("1", now + 60_000))], move |c| {
        tx.send(c).unwrap()
    })
    .unwrap();
    let Commit::Retry(again) = rx.recv().unwrap() else {
        panic!("a stale update must not be written")
    };
    assert_eq!(again.attempt(), 2);
    assert_eq!(count_of(&again.entries()[0]), 1, "the retry sees the other count");
    let n = count_of(&again.entries()[0]) + 1;
    let (tx, rx) = mpsc::sync_channel(1);
    again
        .commit_then(vec![Change::Put(entry(&n.to_string(), now + 60_000))], move |c| {
            tx.send(c).unwrap()
        })
        .unwrap();
    assert!(matches!(rx.recv().unwrap(), Commit::Done(_)));
    assert_eq!(count_of(&t.second.read(&["k"]).unwrap()[0]), 2);
    assert_eq!(t.second.entries().unwrap(), 1);
}

#[test]
fn store_on_postgres_keys_are_stored_as_their_sha256_never_the_key() {
    let t = Two::new("ls_hashed");
    count_once(&t.first, "sign-in:ada@example.com");
    let rows = pg::query(
        &t.schema,
        "SELECT count(*) FROM tinystore_limits WHERE position('ada' in encode(path, 'escape')) > 0",
    );
    assert_eq!(rows.as_deref(), Some("0"), "the key never reaches the database");
    assert_eq!(
        pg::query(&t.schema, "SELECT count(*) FROM tinystore_limits").as_deref(),
        Some("1")
    );
}

#[test]
fn store_on_postgres_when_full_a_new_key_is_unavailable_and_held_keys_keep_counting() {
    let t = Two::with("ls_full", |b| b.max_entries(5));
    let now = t.now();
    for i in 0..3 {
        count_once(&t.first, &format!("held{i}"));
    }
    for i in 0..2 {
        commit(
            &t.second,
            &[&format!("short{i}")],
            vec![Change::Put(entry("1", now + 1000))],
        );
    }
    assert_eq!(t.first.entries().unwrap(), 5);
    let (e, events) = failed(commit(
        &t.first,
        &["held0", "new"],
        vec![Change::Keep, Change::Put(entry("1", now + 60_000))],
    ));
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert_eq!(e.path(), Some("new"), "the error names the new key");
    assert!(e.message().contains("unavailable"), "{e}");
    assert_eq!(
        events.iter().filter(|e| e.is_error()).collect::<Vec<_>>(),
        vec![&LimitEvent::Full { max_entries: 5 }]
    );
    assert_eq!(t.first.read(&["new"]).unwrap(), vec![None], "nothing was written");
    assert_eq!(count_once(&t.second, "held0"), 2, "keys it holds keep counting");
    let (_, events) = failed(commit(&t.first, &["new2"], vec![Change::Put(entry("1", now + 60_000))]));
    assert_eq!(events, vec![], "logged at most once a minute by a handle");
    // When expired entries can go, the full store removes them and takes the key.
    t.advance(Duration::from_secs(2));
    let events = done_events(commit(
        &t.first,
        &["new"],
        vec![Change::Put(entry("1", t.now() + 60_000))],
    ));
    assert!(events.iter().all(|e| !e.is_error()), "{events:?}");
    assert_eq!(t.second.entries().unwrap(), 4);
    assert_eq!(
        pg::query(&t.schema, "SELECT count(*) FROM tinystore_limits").as_deref(),
        Some("4"),
        "the count is the rows there are"
    );
}

#[test]
fn store_on_postgres_the_bound_warns_at_80_percent() {
    let t = Two::with("ls_filling", |b| b.max_entries(10));
    let now = t.now();
    let put = |ls: &LimitStore, k: &str| commit(ls, &[k], vec![Change::Put(entry("1", now + 3_600_000))]);
    for i in 0..7 {
        assert_eq!(done_events(put(&t.first, &format!("k{i}"))), vec![]);
    }
    assert_eq!(
        done_events(put(&t.second, "k7")),
        vec![LimitEvent::Filling {
            entries: 8,
            max_entries: 10
        }]
    );
}

#[test]
fn store_on_postgres_maintenance_sweeps_the_entries_and_the_count_follows() {
    let location = pg::fresh("ls_maintain");
    let (store, other) = (manual(&location), manual(&location));
    let ls = LimitStore::builder(&store).max_entries(4).open().unwrap();
    let now = store.clock().now_millis();
    for i in 0..4 {
        commit(&ls, &[&format!("k{i}")], vec![Change::Put(entry("1", now + 1000))]);
    }
    store.clock().advance(Duration::from_secs(2)).unwrap();
    other.clock().advance(Duration::from_secs(2)).unwrap();
    // Maintenance on a server that never opened the limit store.
    let m = other.maintain().unwrap();
    assert_eq!(m.expired, 4, "maintenance removes the limit store's expired rows");
    assert_eq!(ls.entries().unwrap(), 0, "the count follows maintenance");
    let events = done_events(commit(
        &ls,
        &["fresh"],
        vec![Change::Put(entry("1", store.clock().now_millis() + 1000))],
    ));
    assert!(events.iter().all(|e| !e.is_error()));
    assert_eq!(ls.entries().unwrap(), 1);
    assert_eq!(ls.sweep().unwrap(), 0);
}

#[test]
fn store_on_postgres_a_database_of_an_older_schema_gains_the_limit_tables() {
    let location = pg::fresh("ls_older");
    manual(&location).close().unwrap();
    pg::sql(
        "ls_older",
        "DROP TABLE tinystore_limits; DROP TABLE tinystore_limit_counts; UPDATE tinystore_schema SET version = 3",
    );
    let store = manual(&location);
    let ls = LimitStore::open(&store).unwrap();
    assert_eq!(count_once(&ls, "k"), 1);
    assert_eq!(
        pg::query("ls_older", "SELECT version FROM tinystore_schema").as_deref(),
        Some("5"),
        "raised to this build's version"
    );
    // Opening again changes nothing: every step is idempotent.
    let again = manual(&location);
    assert_eq!(count_once(&LimitStore::open(&again).unwrap(), "k"), 2);
}

#[test]
fn kv02_on_postgres_the_limit_stores_name_cannot_be_opened_as_a_bucket_of_values() {
    let store = manual(&pg::fresh("ls_kind"));
    LimitStore::open(&store).unwrap();
    let e = store.bucket::<String>("limit-store").open().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
}

#[test]
fn store_on_postgres_an_update_to_a_paused_database_is_answered_within_its_deadline() {
    let proxy = pg::Proxy::start();
    let store = manual(&proxy.location("ls_paused"));
    let deadline = Duration::from_millis(300);
    let ls = LimitStore::builder(&store).deadline(deadline).open().unwrap();
    let now = store.clock().now_millis();
    let u = ls.begin(&["k"]).unwrap();
    proxy.set(pg::Mode::Stall);
    let started = std::time::Instant::now();
    let (tx, rx) = mpsc::sync_channel(1);
    u.commit_then(vec![Change::Put(entry("1", now + 60_000))], move |c| {
        let _ = tx.send(c);
    })
    .unwrap();
    let (e, _) = failed(rx.recv().unwrap());
    let waited = started.elapsed();
    assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}");
    assert!(e.message().contains("not answered within 300 ms"), "{e}");
    assert!(
        waited >= deadline && waited < Duration::from_millis(1500),
        "answered at its own deadline, not the database's: {waited:?}"
    );
    proxy.set(pg::Mode::Forward);
    // The store works again by itself. (The paused update may still land
    // once the database answers, as OutcomeUnknown says, holding its key
    // until then: this counts another key, with the default deadline.)
    let other = LimitStore::open(&store).unwrap();
    assert_eq!(count_once(&other, "k2"), 1);
}
