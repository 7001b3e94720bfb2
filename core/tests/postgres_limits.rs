//! Counters, quotas and rate limits on a PostgreSQL store (KV-12 to KV-14),
//! shared by every store on the database: two stores here stand for two
//! app servers. Against the server CI starts; each test works in a schema
//! of its own. (The same across processes: process-tests'
//! `postgres_limits_processes.rs`.)

mod common;
mod pg;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use tinystore::{ErrorKind, Options, Quota, RateLimit, Store};

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Two stores with test clocks at the same time on one new schema: two app
/// servers.
fn two_servers(schema: &str) -> (Store, Store) {
    let location = pg::fresh(schema);
    let open = || Store::open_with(&location, Options::new().test_clock(common::start())).unwrap();
    (open(), open())
}

fn advance_both(a: &Store, b: &Store, d: Duration) {
    a.clock().advance(d).unwrap();
    b.clock().advance(d).unwrap();
}

/// 5 guesses a minute, 5 at once.
fn guesses(store: &Store) -> RateLimit {
    store.rate_limit("guesses").rate(5, MINUTE).burst(5).open().unwrap()
}

/// 3 messages per 5 hours, 5 a day.
fn messages(store: &Store) -> Quota {
    store
        .quota("messages")
        .window("session", 3, 5 * HOUR)
        .window("daily", 5, DAY)
        .open()
        .unwrap()
}

#[test]
fn kv12_servers_share_one_budget_per_key() {
    let (a, b) = two_servers("kv12_share");
    let (ga, gb) = (guesses(&a), guesses(&b));
    for left in [4, 3, 2] {
        assert_eq!(ga.allow("ip").unwrap().left, left);
    }
    assert_eq!(gb.allow("ip").unwrap().left, 1, "b counts on what a spent");
    assert_eq!(gb.allow("ip").unwrap().left, 0);
    let refused = ga.allow("ip").unwrap();
    assert!(!refused.ok, "the budget is one for both servers");
    assert_eq!(refused.retry_at, Some(common::start() + Duration::from_secs(12)));
    assert_eq!(gb.peek("ip").unwrap().left, 0);
    assert!(gb.allow("other").unwrap().ok, "another key has its own budget");
    advance_both(&a, &b, Duration::from_secs(12));
    assert!(gb.allow("ip").unwrap().ok, "the rate refills on the database's row");
    assert!(!ga.allow("ip").unwrap().ok);
}

#[test]
fn kv12_racing_requests_from_two_servers_pass_exactly_the_burst() {
    let (a, b) = two_servers("kv12_race");
    let limits = [
        a.rate_limit("api").rate(5, HOUR).open().unwrap(),
        b.rate_limit("api").rate(5, HOUR).open().unwrap(),
    ];
    let passed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for i in 0..16 {
            let (limit, passed) = (&limits[i % 2], &passed);
            s.spawn(move || {
                for _ in 0..4 {
                    if limit.allow("hot").unwrap().ok {
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(passed.load(Ordering::Relaxed), 5);
}

#[test]
fn kv12_a_key_seen_full_is_refused_without_a_round_trip() {
    let proxy = pg::Proxy::start();
    let store = Store::open_with(proxy.location("kv12_cache"), Options::new().test_clock(common::start())).unwrap();
    let g = guesses(&store);
    for _ in 0..5 {
        assert!(g.allow("ip").unwrap().ok);
    }
    proxy.set(pg::Mode::Stall);
    let started = Instant::now();
    let refused = g.allow("ip").unwrap();
    assert!(!refused.ok, "refused from memory while the database is paused");
    assert_eq!(refused.retry_at, Some(common::start() + Duration::from_secs(12)));
    assert!(started.elapsed() < Duration::from_secs(1), "no statement was sent");
    // Once the key could pass, only the database may say so.
    store.clock().advance(Duration::from_secs(12)).unwrap();
    let e = g.allow("ip").unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Io | ErrorKind::OutcomeUnknown),
        "the database was asked and did not answer: {e}"
    );
    proxy.set(pg::Mode::Forward);
    assert!(g.allow("ip").unwrap().ok);
}

#[test]
fn kv12_a_reset_reaches_the_other_servers_within_the_hold() {
    let (a, b) = two_servers("kv12_reset");
    let (ga, gb) = (guesses(&a), guesses(&b));
    for _ in 0..5 {
        assert!(ga.allow("ip").unwrap().ok);
    }
    assert!(!ga.allow("ip").unwrap().ok);
    ga.reset("ip").unwrap();
    assert_eq!(
        ga.allow("ip").unwrap().left,
        4,
        "a reset here forgets what memory held at once"
    );
    for _ in 0..4 {
        assert!(ga.allow("ip").unwrap().ok);
    }
    assert!(!ga.allow("ip").unwrap().ok);
    gb.reset("ip").unwrap();
    assert!(!ga.allow("ip").unwrap().ok, "a held refusal lasts its hold");
    advance_both(&a, &b, Duration::from_secs(1) + Duration::from_millis(1));
    assert_eq!(
        ga.allow("ip").unwrap().left,
        4,
        "past the hold the database answers: the key was reset, not refilled by a second"
    );
}

#[test]
fn kv12_on_the_database_clock() {
    let store = Store::open(pg::fresh("kv12_db_clock")).unwrap();
    let g = store.rate_limit("slow").rate(1, HOUR).burst(2).open().unwrap();
    let before = SystemTime::now();
    assert!(g.allow("k").unwrap().ok);
    assert!(g.allow("k").unwrap().ok);
    let refused = g.allow("k").unwrap();
    assert!(!refused.ok);
    let retry = refused.retry_at.unwrap();
    // The database runs on this machine: its clock is this one's.
    let after = SystemTime::now();
    assert!(retry > before + HOUR - Duration::from_secs(5), "{retry:?}");
    assert!(retry < after + HOUR + Duration::from_secs(5), "{retry:?}");
    assert_eq!(g.peek("k").unwrap().left, 0);
    g.reset("k").unwrap();
    assert_eq!(g.peek("k").unwrap().left, 2);
}

#[test]
fn kv13_racing_allows_on_two_servers_count_in_every_window_or_none() {
    let (a, b) = two_servers("kv13_race");
    let quotas = [messages(&a), messages(&b)];
    let passed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for i in 0..10 {
            let (q, passed) = (&quotas[i % 2], &passed);
            s.spawn(move || {
                for _ in 0..2 {
                    if q.allow("u").unwrap().ok {
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(passed.load(Ordering::Relaxed), 3, "the session window's limit, exactly");
    let p = quotas[1].peek("u").unwrap();
    assert_eq!(p.window("session").unwrap().used, 3);
    assert_eq!(p.window("daily").unwrap().used, 3, "every use counted in both windows");
    advance_both(&a, &b, 5 * HOUR);
    let next = quotas[0].allow("u").unwrap();
    assert!(next.ok);
    assert_eq!(next.window("session").unwrap().used, 1, "a new session window");
    assert_eq!(next.window("daily").unwrap().used, 4);
    let two = quotas[1].allow_n("u", 2).unwrap();
    assert!(!two.ok, "the daily window has room for one");
    assert_eq!(two.retry_at, Some(common::start() + DAY));
    let p = quotas[0].peek("u").unwrap();
    assert_eq!(
        (p.window("session").unwrap().used, p.window("daily").unwrap().used),
        (1, 4),
        "the refusal counted in neither window"
    );
}

#[test]
fn kv13_refund_reset_and_the_completion_forms() {
    let (a, b) = two_servers("kv13_forms");
    let (qa, qb) = (messages(&a), messages(&b));
    assert!(qa.allow_n("u", 3).unwrap().ok);
    assert_eq!(qb.refund("u").unwrap().window("session").unwrap().used, 2);
    let (tx, rx) = std::sync::mpsc::channel();
    let t = tx.clone();
    qb.allow_n_then("u", 1, move |r| t.send(r.unwrap().ok).unwrap())
        .unwrap();
    assert!(rx.recv_timeout(Duration::from_secs(5)).unwrap());
    let t = tx.clone();
    qa.refund_n_then("u", 3, move |r| t.send(r.unwrap().left == 3).unwrap())
        .unwrap();
    assert!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), "refunds stop at zero");
    assert!(qa.allow("u").unwrap().ok);
    qb.reset_then("u", move |r| tx.send(r.is_ok()).unwrap()).unwrap();
    assert!(rx.recv_timeout(Duration::from_secs(5)).unwrap());
    let p = qa.peek("u").unwrap();
    assert_eq!(p.left, 3);
    assert_eq!(
        p.window("daily").unwrap().resets_at,
        None,
        "a reset forgets every window"
    );
    let e = qa.allow_n("u", 4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "over the smallest limit: {e}");
    assert_eq!(
        pg::query("kv13_forms", "SELECT count(*) FROM tinystore_cells").as_deref(),
        Some("0")
    );
}

#[test]
fn kv14_counters_on_two_servers_count_exactly() {
    let (a, b) = two_servers("kv14_race");
    let counters = [
        a.counters("attempts").ttl(15 * MINUTE).open().unwrap(),
        b.counters("attempts").ttl(15 * MINUTE).open().unwrap(),
    ];
    std::thread::scope(|s| {
        for i in 0..8 {
            let c = &counters[i % 2];
            s.spawn(move || {
                for _ in 0..10 {
                    c.add("ip", 1).unwrap();
                }
            });
        }
    });
    assert_eq!(counters[0].get("ip").unwrap(), 80);
    assert_eq!(counters[1].max("ip", 50).unwrap(), 80);
    advance_both(&a, &b, 15 * MINUTE);
    assert_eq!(
        counters[1].get("ip").unwrap(),
        0,
        "the ttl ran from the first add, on every server"
    );
    assert_eq!(counters[0].add("ip", 2).unwrap(), 2);
    assert!(counters[1].delete("ip").unwrap());
    assert_eq!(counters[0].get("ip").unwrap(), 0);
}

#[test]
fn kv14_a_sum_past_int64_is_a_limit_and_changes_nothing() {
    let (a, _b) = two_servers("kv14_overflow");
    let c = a.counters("big").open().unwrap();
    c.add("k", i64::MAX - 1).unwrap();
    let e = c.add("k", 2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert_eq!(e.path(), Some("k"), "{e}");
    assert_eq!(c.get("k").unwrap(), i64::MAX - 1);
}

#[test]
fn kv14_flush_every_counters_are_written_at_each_change() {
    let (a, b) = two_servers("kv14_flush_every");
    let views = a.counters("views").flush_every(Duration::from_secs(1)).open().unwrap();
    let elsewhere = b.counters("views").open().unwrap();
    assert_eq!(views.add("p", 1).unwrap(), 1);
    assert_eq!(
        elsewhere.get("p").unwrap(),
        1,
        "another server sees the change at once, with no maintain"
    );
    assert_eq!(elsewhere.add("p", 1).unwrap(), 2);
    assert_eq!(views.add("p", 1).unwrap(), 3, "every add returns the shared total");
}

#[test]
fn kv14_the_completion_forms_and_clear() {
    let (a, b) = two_servers("kv14_forms");
    let (ca, cb) = (a.counters("c").open().unwrap(), b.counters("c").open().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let t = tx.clone();
    ca.under("alice")
        .add_then("x", 5, move |r| t.send(r.unwrap()).unwrap())
        .unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 5);
    let t = tx.clone();
    cb.under("alice")
        .max_then("x", 9, move |r| t.send(r.unwrap()).unwrap())
        .unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 9);
    cb.under("bob").add("x", 1).unwrap();
    let t = tx.clone();
    ca.under("bob")
        .delete_then("x", move |r| t.send(i64::from(r.unwrap())).unwrap())
        .unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 1);
    cb.under("bob").add("y", 1).unwrap();
    ca.under("alice")
        .clear_then(move |r| tx.send(i64::from(r.is_ok())).unwrap())
        .unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 1);
    assert_eq!(cb.under("alice").get("x").unwrap(), 0);
    assert_eq!(
        ca.under("bob").get("y").unwrap(),
        1,
        "a clear takes its own branch only"
    );
    cb.clear().unwrap();
    assert_eq!(ca.under("bob").get("y").unwrap(), 0);
}

#[test]
fn kv19_a_database_at_schema_1_gains_what_it_lacks_on_open() {
    let location = pg::fresh("kv19_migrate");
    let store = Store::open(&location).unwrap();
    store.bucket::<i64>("b").open().unwrap().set("k", &1).unwrap();
    store.close().unwrap();
    // What a build of schema 1 left.
    pg::sql(
        "kv19_migrate",
        "DROP FUNCTION tinystore_now_ns(bigint); UPDATE tinystore_schema SET version = 1",
    );
    let store = Store::open(&location).unwrap();
    assert_eq!(
        pg::query("kv19_migrate", "SELECT version FROM tinystore_schema").as_deref(),
        Some("5")
    );
    assert_eq!(store.bucket::<i64>("b").open().unwrap().get("k").unwrap(), Some(1));
    assert!(
        store
            .rate_limit("r")
            .rate(1, MINUTE)
            .open()
            .unwrap()
            .allow("k")
            .unwrap()
            .ok
    );
}
