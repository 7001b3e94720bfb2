//! KV-17 on PostgreSQL: the store's clock never moves back, even when the
//! database server's clock steps back (an NTP step, a failover to a server
//! whose clock is behind). The database keeps a high-water mark of its
//! clock (the sequence `tinystore_clock`); a server clock that ran an hour
//! ahead and stepped back leaves the mark an hour ahead of the clock, which
//! is what these tests write behind the store's back. Against the server CI starts;
//! each test works in a schema of its own.

mod pg;

use std::time::Duration;

use tinystore::{Store, to_millis};

const HOUR_MS: i64 = 3_600_000;

fn server_clock(schema: &str) -> i64 {
    pg::query(
        schema,
        "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
    )
    .unwrap()
    .parse()
    .unwrap()
}

fn mark(schema: &str) -> i64 {
    pg::query(schema, "SELECT pg_sequence_last_value('tinystore_clock')")
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn kv17_a_database_clock_stepped_back_revives_no_key() {
    let schema = "kv17_no_revival";
    let location = pg::fresh(schema);
    let store = Store::open(&location).unwrap();
    let codes = store
        .bucket::<i64>("codes")
        .ttl(Duration::from_secs(60))
        .open()
        .unwrap();
    codes.set("c", &1).unwrap();
    assert!(codes.has("c").unwrap());

    // The server's clock was an hour ahead, expired the code, and stepped
    // back an hour: the code stays expired.
    let ahead = server_clock(schema) + HOUR_MS;
    pg::sql(schema, &format!("SELECT setval('tinystore_clock', {ahead})"));
    assert!(!codes.has("c").unwrap(), "an expired key is not revived");
    assert_eq!(codes.get("c").unwrap(), None);
    assert_eq!(codes.take("c").unwrap(), None);
    assert_eq!(codes.all().count(), 0, "nor listed");

    // A new key's ttl runs from the store's now, not from the clock behind it.
    codes.set("d", &2).unwrap();
    let at = to_millis(codes.entry("d").unwrap().unwrap().expires_at.unwrap());
    assert!(at >= ahead + 60_000, "expiry {at} runs from the mark {ahead}");

    // Maintenance on the clock behind leaves the mark where it is, and
    // sweeps the expired code on the store's now.
    store.maintain().unwrap();
    assert_eq!(mark(schema), ahead, "the mark never moves back");
    assert_eq!(
        pg::query(schema, "SELECT count(*) FROM tinystore_cells").as_deref(),
        Some("1"),
        "the expired code was swept, the new key kept"
    );
    store.close().unwrap();

    // A store opened afterwards, on the same clock behind, still holds it.
    let again = Store::open(&location).unwrap();
    let codes = again
        .bucket::<i64>("codes")
        .ttl(Duration::from_secs(60))
        .open()
        .unwrap();
    assert!(!codes.has("c").unwrap());
    assert_eq!(codes.get("d").unwrap(), Some(2));
    assert_eq!(mark(schema), ahead);
    again.close().unwrap();
}

#[test]
fn kv17_a_rate_limit_window_does_not_go_back_with_the_database_clock() {
    let schema = "kv17_rate_window";
    let location = pg::fresh(schema);
    let store = Store::open(&location).unwrap();
    let sends = store
        .rate_limit("sends")
        .rate(1, Duration::from_secs(60))
        .burst(1)
        .open()
        .unwrap();
    let ahead = server_clock(schema) + HOUR_MS;
    pg::sql(schema, &format!("SELECT setval('tinystore_clock', {ahead})"));
    assert!(sends.allow("u").unwrap().ok);
    let refused = sends.allow("u").unwrap();
    assert!(!refused.ok);
    let retry = to_millis(refused.retry_at.unwrap());
    assert!(
        retry >= ahead + 59_000,
        "the window runs from the store's now ({ahead}), not from the clock behind it: retry at {retry}"
    );
    let peeked = sends.peek("u").unwrap();
    assert_eq!(peeked.left, 0, "the clock behind gives no request back");
    store.close().unwrap();
}

#[test]
fn kv17_the_mark_follows_the_database_clock() {
    let schema = "kv17_mark_rises";
    let location = pg::fresh(schema);
    let store = Store::open(&location).unwrap();
    let opened = mark(schema);
    assert!(
        (opened - server_clock(schema)).abs() < 60_000,
        "the mark starts at the server's clock"
    );
    pg::sql(
        schema,
        "SELECT setval('tinystore_clock', pg_sequence_last_value('tinystore_clock') - 600000)",
    );
    let before = server_clock(schema);
    store.maintain().unwrap();
    assert!(
        mark(schema) >= before,
        "a maintenance round raises the mark to the clock"
    );
    store.close().unwrap();

    // A store with a test clock neither reads nor raises it.
    let manual = Store::open_with(
        &location,
        tinystore::Options::new().test_clock(std::time::UNIX_EPOCH + Duration::from_secs(86_400)),
    )
    .unwrap();
    pg::sql(schema, "SELECT setval('tinystore_clock', 1)");
    manual.maintain().unwrap();
    assert_eq!(mark(schema), 1);
    manual.close().unwrap();
}

#[test]
fn kv17_a_database_of_an_older_schema_gains_the_clock_mark() {
    let schema = "kv17_older";
    let location = pg::fresh(schema);
    Store::open(&location).unwrap().close().unwrap();
    // The schema as version 4 left it: no mark, the clock functions
    // reading the server's clock alone.
    pg::sql(
        schema,
        "DROP SEQUENCE tinystore_clock; UPDATE tinystore_schema SET version = 4;
         CREATE OR REPLACE FUNCTION tinystore_now(given bigint) RETURNS bigint LANGUAGE sql VOLATILE AS
         $$ SELECT coalesce(given, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) $$",
    );
    let store = Store::open(&location).unwrap();
    assert_eq!(
        pg::query(schema, "SELECT version FROM tinystore_schema").as_deref(),
        Some("5")
    );
    let ahead = server_clock(schema) + HOUR_MS;
    pg::sql(schema, &format!("SELECT setval('tinystore_clock', {ahead})"));
    let now: i64 = pg::query(schema, "SELECT tinystore_now(NULL)")
        .unwrap()
        .parse()
        .unwrap();
    assert!(now >= ahead, "the clock reads the mark: {now} < {ahead}");
    store.close().unwrap();
    // Opening again changes nothing: every step is idempotent.
    Store::open(&location).unwrap().close().unwrap();
    assert_eq!(mark(schema), ahead);
}
