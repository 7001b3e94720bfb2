//! Kept config on a PostgreSQL store (KV-20): an update on one server
//! reaches every server's watchers, all of it or none, against the server
//! CI starts. Each test works in a schema of its own.

mod common;
mod pg;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tinystore::config::{POLL, Source};
use tinystore::{Config, ErrorKind, Options, Store};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Settings {
    rps: i64,
    burst: i64,
    banner: String,
}

fn defaults() -> Settings {
    Settings {
        rps: 100,
        burst: 20,
        banner: "hello".into(),
    }
}

fn open(store: &Store) -> Config<Settings> {
    Config::builder(store, "app", defaults())
        .validate(|s: &Settings| match s.burst > s.rps {
            true => Err(format!("burst {} is over rps {}", s.burst, s.rps)),
            false => Ok(()),
        })
        .open()
        .unwrap()
}

#[test]
fn kv20_an_update_reaches_the_watchers_of_every_server() {
    let location = pg::fresh("kv20_watch");
    let (a, b) = (Store::open(&location).unwrap(), Store::open(&location).unwrap());
    let (here, there) = (open(&a), open(&b));
    let mut watch = there.watch();
    here.update(|s| {
        s.rps = 500;
        s.burst = 50;
    })
    .unwrap();
    let committed = Instant::now();
    assert_eq!(here.get().unwrap().rps, 500, "this server sees it at once");
    let seen = watch
        .next_within(Duration::from_secs(5))
        .expect("the other server saw the update")
        .unwrap();
    assert_eq!((seen.rps, seen.burst), (500, 50), "both fields, in one change");
    // A watcher reads the stamp every POLL; a loaded machine may delay a
    // poll, never skip the change.
    assert!(
        committed.elapsed() < POLL * 15,
        "seen within polls of the stamp: {:?}",
        committed.elapsed()
    );
    let kept = there.sources().unwrap().into_iter().find(|s| s.path == "rps").unwrap();
    assert!(matches!(kept.source, Source::Kept { .. }), "{kept:?}");

    let mut back = here.watch();
    there.reset("burst").unwrap();
    let seen = back
        .next_within(Duration::from_secs(5))
        .expect("a reset reaches the first server")
        .unwrap();
    assert_eq!((seen.rps, seen.burst), (500, 20));
}

#[test]
fn kv20_a_refused_update_writes_nothing_on_any_server() {
    let location = pg::fresh("kv20_refused");
    let opts = || Options::new().test_clock(common::start());
    let (a, b) = (
        Store::open_with(&location, opts()).unwrap(),
        Store::open_with(&location, opts()).unwrap(),
    );
    let (here, there) = (open(&a), open(&b));
    let e = here
        .update(|s| {
            s.banner = "changed".into();
            s.burst = 500;
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message().contains("burst 500 is over rps 100"), "{e}");
    // The database refuses the stamp, the last row of the update: the
    // fields before it in the same transaction go too.
    pg::sql(
        "kv20_refused",
        "CREATE FUNCTION refuse_stamp() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN IF NEW.int_value = 0 THEN RAISE EXCEPTION 'no stamp today'; END IF; RETURN NEW; END $$;
         CREATE TRIGGER refuse_stamp BEFORE INSERT OR UPDATE ON tinystore_cells
           FOR EACH ROW EXECUTE FUNCTION refuse_stamp()",
    );
    let e = here.update(|s| s.banner = "half".into()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("no stamp today"), "{e}");
    assert_eq!(
        pg::query("kv20_refused", "SELECT count(*) FROM tinystore_cells").as_deref(),
        Some("0"),
        "nothing of the update was written"
    );
    pg::sql("kv20_refused", "DROP TRIGGER refuse_stamp ON tinystore_cells");
    here.update(|s| s.banner = "kept".into()).unwrap();
    // A store with a test clock watches only when asked: read now.
    assert!(there.raw().refresh().unwrap());
    assert_eq!(there.get().unwrap().banner, "kept");
    assert_eq!(
        there.get().unwrap().burst,
        20,
        "the refused update left no field behind"
    );
    assert_eq!(
        pg::query("kv20_refused", "SELECT count(*) FROM tinystore_cells").as_deref(),
        Some("2"),
        "one field and the stamp"
    );
}
