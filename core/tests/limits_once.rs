//! KV-11: once, in one process and across stores on one file. Across
//! processes: `core/process-tests/tests/limits_processes.rs`.

mod common;
mod limits_common;

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use limits_common::open;
use serde::{Deserialize, Serialize};
use tinystore::{Begun, Error, ErrorKind, Once, Store};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Sent {
    id: i64,
}

const HOUR: Duration = Duration::from_secs(3600);

fn sends(store: &Store) -> Once<Sent> {
    store.once::<Sent>("sends").keep(24 * HOUR).open().unwrap()
}

/// Rows of the `runs` table: claims held in the file.
fn claims(dir: &Path) -> usize {
    let c = rusqlite::Connection::open(dir.join(tinystore::FILE_NAME)).unwrap();
    c.busy_timeout(Duration::from_secs(10)).unwrap();
    c.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0))
        .unwrap() as usize
}

#[test]
fn kv11_fn_runs_once_and_its_answer_is_kept_for_keep() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = store.once::<Sent>("sends").keep(HOUR).open().unwrap();
    let calls = AtomicU32::new(0);
    let run = || {
        once.run("k7q2", || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(Sent { id: 40 + n as i64 })
        })
    };
    assert_eq!(run().unwrap(), Sent { id: 41 });
    assert_eq!(run().unwrap(), Sent { id: 41 }, "the kept answer, fn not run again");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(claims(dir.path()), 0, "the claim went with the keep");
    store.clock().advance(HOUR - Duration::from_millis(1)).unwrap();
    assert_eq!(run().unwrap(), Sent { id: 41 }, "kept until keep has passed");
    store.clock().advance(Duration::from_millis(1)).unwrap();
    assert_eq!(run().unwrap(), Sent { id: 42 }, "after keep the key runs again");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn kv11_keep_defaults_to_a_day() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = store.once::<i64>("default-keep").open().unwrap();
    assert_eq!(once.run("k", || Ok(1)).unwrap(), 1);
    store.clock().advance(24 * HOUR - Duration::from_millis(1)).unwrap();
    assert_eq!(once.get("k").unwrap(), Some(1));
    store.clock().advance(Duration::from_millis(1)).unwrap();
    assert_eq!(once.get("k").unwrap(), None);
    let e = store.once::<i64>("zero").keep(Duration::ZERO).open().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
}

#[test]
fn kv11_get_and_delete_read_and_forget_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = sends(&store);
    assert_eq!(once.get("k").unwrap(), None);
    assert!(!once.delete("k").unwrap());
    once.run("k", || Ok(Sent { id: 1 })).unwrap();
    assert_eq!(once.get("k").unwrap(), Some(Sent { id: 1 }));
    assert_eq!(
        once.under("user-2").get("k").unwrap(),
        None,
        "another branch is another key"
    );
    assert_eq!(
        once.under("user-2").run("k", || Ok(Sent { id: 2 })).unwrap(),
        Sent { id: 2 }
    );
    assert!(once.delete("k").unwrap());
    assert_eq!(
        once.run("k", || Ok(Sent { id: 3 })).unwrap(),
        Sent { id: 3 },
        "a deleted answer runs again"
    );
    assert_eq!(once.under("user-2").get("k").unwrap(), Some(Sent { id: 2 }));
    assert_eq!(
        store.bucket::<i64>("sends").open().unwrap_err().kind(),
        ErrorKind::Invalid
    );
    assert_eq!(
        store.once::<i64>("Sends").open().unwrap_err().kind(),
        ErrorKind::Invalid
    );
    let e = once.run("", || Ok(Sent { id: 0 })).unwrap_err();
    assert_eq!((e.kind(), e.bucket()), (ErrorKind::Invalid, Some("sends")));
}

#[test]
fn kv11_an_error_or_a_panic_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = sends(&store);
    let e = once
        .run("k", || Err(Error::new(ErrorKind::Io, "the database was down")))
        .unwrap_err();
    assert_eq!(e.message(), "the database was down", "fn's own error comes back");
    assert_eq!(once.get("k").unwrap(), None);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        once.run("k", || -> tinystore::Result<Sent> { panic!("boom") })
    }));
    assert!(panicked.is_err());
    assert_eq!(once.get("k").unwrap(), None);
    assert_eq!(
        once.run("k", || Ok(Sent { id: 5 })).unwrap(),
        Sent { id: 5 },
        "the next run runs fn"
    );
    assert_eq!(claims(dir.path()), 0);
}

#[test]
fn kv11_a_second_run_waits_for_the_first_and_gets_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = sends(&store);
    let calls = AtomicU32::new(0);
    let (gate, hold) = common::held_run();
    let (once, calls) = (&once, &calls);
    std::thread::scope(|s| {
        let first = s.spawn(move || {
            once.run("k", || {
                calls.fetch_add(1, Ordering::SeqCst);
                hold.hold();
                Ok(Sent { id: 41 })
            })
        });
        gate.wait_started();
        let (ready, answer) = mpsc::channel();
        once.raw()
            .begin("k", &tinystore::CallerContext::new(), move |r| ready.send(r).unwrap())
            .unwrap();
        assert!(
            answer.try_recv().is_err(),
            "begin waits while the first run holds the key"
        );
        let second = s.spawn(|| {
            once.run("k", || {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(Sent { id: 99 })
            })
        });
        assert_eq!(
            once.run("other", || Ok(Sent { id: 7 })).unwrap(),
            Sent { id: 7 },
            "another key runs at once"
        );
        assert_eq!(claims(dir.path()), 1, "the running key is claimed in the file");
        gate.release();
        assert_eq!(first.join().unwrap().unwrap(), Sent { id: 41 });
        assert_eq!(
            second.join().unwrap().unwrap(),
            Sent { id: 41 },
            "the waiter got the first answer"
        );
        match answer.recv_timeout(Duration::from_secs(10)).unwrap().unwrap() {
            Begun::Kept(raw) => assert_eq!(tinystore::decode::<Sent>(&raw).unwrap(), Sent { id: 41 }),
            Begun::Run(_) => panic!("the waiter ran though an answer was kept"),
        }
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1, "fn ran once");
}

#[test]
fn kv11_a_waiter_with_a_deadline_gives_up_on_a_stuck_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = sends(&store);
    let (gate, hold) = common::held_run();
    let once = &once;
    std::thread::scope(|s| {
        let first = s.spawn(move || {
            once.run("k", || {
                hold.hold();
                Ok(Sent { id: 41 })
            })
        });
        gate.wait_started();
        let (answered, answer) = mpsc::channel();
        s.spawn(move || {
            let r = once.run_within("k", Duration::from_millis(50), || -> Result<Sent, Error> {
                panic!("a waiter that gave up ran fn")
            });
            answered.send(r).unwrap();
        });
        let gave_up = answer.recv_timeout(Duration::from_secs(10));
        let free = once.run_within("other", Duration::from_millis(50), || Ok(Sent { id: 7 }));
        // Let the first run end before asserting: a failed assert must not
        // leave it waiting, which would hang the scope.
        gate.release();
        let e = gave_up.expect("the waiter did not give up within 10 s").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
        assert_eq!(
            e.text(),
            "the caller gave up waiting for a run of the key (bucket sends, key k)"
        );
        assert_eq!(free.unwrap(), Sent { id: 7 }, "a key nobody runs runs at once");
        assert_eq!(first.join().unwrap().unwrap(), Sent { id: 41 });
    });
    assert_eq!(
        once.run_within("k", Duration::from_millis(50), || Ok(Sent { id: 99 }))
            .unwrap(),
        Sent { id: 41 },
        "the run waited for kept its answer; the waiter that gave up held no claim"
    );
    assert_eq!(claims(dir.path()), 0, "no claim is left in the file");
}

#[test]
fn kv11_after_a_failed_run_the_waiter_runs_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = sends(&store);
    let (gate, hold) = common::held_run();
    let once = &once;
    std::thread::scope(|s| {
        let first = s.spawn(move || {
            once.run("k", || {
                hold.hold();
                Err::<Sent, _>(Error::new(ErrorKind::Io, "failed"))
            })
        });
        gate.wait_started();
        let (ready, answer) = mpsc::channel();
        once.raw()
            .begin("k", &tinystore::CallerContext::new(), move |r| ready.send(r).unwrap())
            .unwrap();
        gate.release();
        assert!(first.join().unwrap().is_err());
        match answer.recv_timeout(Duration::from_secs(10)).unwrap().unwrap() {
            Begun::Run(claim) => {
                let (done, kept) = mpsc::channel();
                claim.keep(tinystore::encode(&Sent { id: 8 }).unwrap(), move |r| {
                    done.send(r).unwrap()
                });
                kept.recv().unwrap().unwrap();
            }
            Begun::Kept(_) => panic!("a failed run kept an answer"),
        }
    });
    assert_eq!(once.get("k").unwrap(), Some(Sent { id: 8 }));
    assert_eq!(once.run("k", || Ok(Sent { id: 9 })).unwrap(), Sent { id: 8 });
}

#[test]
fn kv11_an_answer_is_kept_when_the_caller_went_away() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = sends(&store);
    let (ready, answer) = mpsc::channel();
    once.raw()
        .begin("k", &tinystore::CallerContext::new(), move |r| ready.send(r).unwrap())
        .unwrap();
    let Begun::Run(claim) = answer.recv().unwrap().unwrap() else {
        panic!("nothing kept yet")
    };
    {
        let (done, gone) = mpsc::channel::<tinystore::Result<()>>();
        drop(gone); // nobody waits for the outcome any more
        claim.keep(tinystore::encode(&Sent { id: 3 }).unwrap(), move |r| {
            let _ = done.send(r);
        });
    }
    once.delete("unrelated").unwrap(); // a later write: the keep committed before it
    assert_eq!(once.get("k").unwrap(), Some(Sent { id: 3 }));
}

#[test]
fn kv11_a_dropped_claim_keeps_nothing_and_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = sends(&store);
    let begin = || {
        let (ready, answer) = mpsc::channel();
        once.raw()
            .begin("k", &tinystore::CallerContext::new(), move |r| ready.send(r).unwrap())
            .unwrap();
        answer.recv_timeout(Duration::from_secs(10)).unwrap().unwrap()
    };
    let Begun::Run(claim) = begin() else {
        panic!("nothing kept yet")
    };
    drop(claim);
    let Begun::Run(claim) = begin() else {
        panic!("a dropped claim kept an answer")
    };
    claim.abandon();
    let Begun::Run(claim) = begin() else {
        panic!("an abandoned claim kept an answer")
    };
    drop(claim);
    once.delete("unrelated").unwrap();
    assert_eq!(claims(dir.path()), 0, "letting go deletes the claim in the file");
    assert_eq!(once.get("k").unwrap(), None);
}

#[test]
fn kv11_a_run_inside_its_own_run_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let once = store.once::<i64>("nested").open().unwrap();
    let outer = once
        .run("k", || {
            let e = once.run("k", || Ok(1)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Invalid);
            assert_eq!(e.path(), Some("k"));
            let inner = once.run("j", || Ok(2))?;
            Ok(inner + 1)
        })
        .unwrap();
    assert_eq!(outer, 3, "a run of another key inside a run is fine");
    assert_eq!(once.get("j").unwrap(), Some(2));
    assert_eq!(once.run("k", || Ok(0)).unwrap(), 3);
}

/// Two stores on one file coordinate through the file as two processes do.
#[test]
fn kv11_two_stores_on_one_file_run_fn_once() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (Store::open(dir.path()).unwrap(), Store::open(dir.path()).unwrap());
    let (on_a, on_b) = (sends(&a), sends(&b));
    let calls = AtomicU32::new(0);
    let (gate, hold) = common::held_run();
    let (on_a, on_b, calls) = (&on_a, &on_b, &calls);
    std::thread::scope(|s| {
        let first = s.spawn(move || {
            on_a.run("k", || {
                calls.fetch_add(1, Ordering::SeqCst);
                hold.hold();
                Ok(Sent { id: 1 })
            })
        });
        gate.wait_started();
        let second = s.spawn(|| {
            on_b.run("k", || {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(Sent { id: 2 })
            })
        });
        // The second must be behind the first's claim in the file, and have
        // looked at it more than once, before the first lets go.
        let deadline = Instant::now() + Duration::from_secs(10);
        while b.once_busy_polls_for_tests() < 2 {
            assert!(
                Instant::now() < deadline,
                "the second store never waited on the first's claim"
            );
            std::thread::yield_now();
        }
        gate.release();
        assert_eq!(first.join().unwrap().unwrap(), Sent { id: 1 });
        assert_eq!(second.join().unwrap().unwrap(), Sent { id: 1 });
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
