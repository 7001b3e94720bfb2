//! The limit store: the framework's limit-store contract, run
//! against two handles on one kv.db as two instances hold them (two
//! processes: `core/process-tests/tests/limits_processes.rs`); and the
//! promises of its database store: keys hashed, expiry on the store's
//! clock, the bound, the deadline, calls in flight (docs/limit-store.md).
//!
//! The tests carry the promises' words:
//! `contract_*` for the contract's (`shared`, `update`, `read`, `sweep`,
//! entries of `{ value, expiresAt }`), `store_*` for the database store's.

mod common;
mod limit_store_calls;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use common::{manual, reopen, snapshot};
use limit_store_calls::{commit, count_of, count_once, done_events, entry, failed};
use tinystore::{Change, Commit, ErrorKind, LimitEvent, LimitStore, Store};

/// Two stores on one directory, as two instances hold it, with clocks that move together.
struct Two {
    _dir: tempfile::TempDir,
    a: Store,
    b: Store,
    first: LimitStore,
    second: LimitStore,
}

impl Two {
    fn new() -> Two {
        Two::with(|b| b)
    }

    fn with(opts: impl Fn(tinystore::LimitStoreBuilder) -> tinystore::LimitStoreBuilder) -> Two {
        let (dir, a) = manual();
        let b = reopen(dir.path());
        let first = opts(LimitStore::builder(&a)).open().unwrap();
        let second = opts(LimitStore::builder(&b)).open().unwrap();
        Two {
            _dir: dir,
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
fn contract_shared_every_instance_sees_the_same_entries() {
    let t = Two::new();
    assert!(t.first.shared() && t.second.shared());
    assert_eq!(count_once(&t.first, "sign-in:ada"), 1);
    assert_eq!(count_once(&t.second, "sign-in:ada"), 2);
    let seen = t.first.read(&["sign-in:ada", "sign-in:bob"]).unwrap();
    assert_eq!(count_of(&seen[0]), 2);
    assert_eq!(seen[1], None);
}

#[test]
fn contract_update_calls_apply_with_the_live_entries_and_the_stores_clock() {
    let t = Two::new();
    let now = t.now();
    let mut calls = Vec::new();
    t.first
        .update(&["a", "b"], |entries, at| {
            calls.push((entries.to_vec(), at));
            vec![Change::Put(entry(r#"{"n":1}"#, at + 1000)), Change::Keep]
        })
        .unwrap();
    assert_eq!(calls, vec![(vec![None, None], now)]);
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
fn contract_update_null_deletes() {
    let t = Two::new();
    let now = t.now();
    t.first
        .update(&["k", "other"], |_, _| {
            vec![
                Change::Put(entry("1", now + 60_000)),
                Change::Put(entry("2", now + 60_000)),
            ]
        })
        .unwrap();
    assert_eq!(t.first.entries().unwrap(), 2);
    let done = t.second.update(&["k"], |_, _| vec![Change::Delete]).unwrap();
    assert_eq!(done.entries, vec![None]);
    assert_eq!(t.first.read(&["k"]).unwrap(), vec![None]);
    assert_eq!(count_of(&t.first.read(&["other"]).unwrap()[0]), 2);
    assert_eq!(t.second.entries().unwrap(), 1, "a delete gives its room back");
    // Deleting an absent key is no error and changes nothing.
    t.first.update(&["never"], |_, _| vec![Change::Delete]).unwrap();
    assert_eq!(t.first.entries().unwrap(), 1);
}

#[test]
fn contract_expiry_is_judged_on_the_stores_clock() {
    let t = Two::new();
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
            vec![Change::Keep]
        })
        .unwrap();
    assert_eq!(saw, Some(None), "apply sees no expired entry");
    // An entry written already expired is absent at once.
    let at = t.now();
    let done = t
        .first
        .update(&["old"], |_, _| vec![Change::Put(entry("1", at))])
        .unwrap();
    assert_eq!(done.entries, vec![None]);
    assert_eq!(t.second.read(&["old"]).unwrap(), vec![None]);
}

#[test]
fn contract_sweep_removes_expired_entries_and_answers_how_many_went() {
    let t = Two::new();
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
fn contract_concurrent_updates_on_two_handles_never_lose_a_count() {
    let t = Two::new();
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::scope(|s| {
        for i in 0..8 {
            let ls = if i % 2 == 0 { &t.first } else { &t.second };
            let runs = runs.clone();
            s.spawn(move || {
                for _ in 0..25 {
                    ls.update(&["shared-key"], |e, now| {
                        runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        vec![Change::Put(entry(&(count_of(&e[0]) + 1).to_string(), now + 60_000))]
                    })
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(count_of(&t.first.read(&["shared-key"]).unwrap()[0]), 200);
    assert!(runs.load(std::sync::atomic::Ordering::Relaxed) >= 200);
}

#[test]
fn contract_apply_runs_again_when_another_instance_changed_a_key() {
    let t = Two::new();
    let now = t.now();
    let u = t.first.begin(&["k"]).unwrap();
    assert_eq!(u.entries(), &[None]);
    // The other instance counts in between.
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
    let (tx, rx) = mpsc::sync_channel(1);
    let n = count_of(&again.entries()[0]) + 1;
    again
        .commit_then(vec![Change::Put(entry(&n.to_string(), now + 60_000))], move |c| {
            tx.send(c).unwrap()
        })
        .unwrap();
    assert!(matches!(rx.recv().unwrap(), Commit::Done(_)));
    assert_eq!(count_of(&t.second.read(&["k"]).unwrap()[0]), 2);
}

#[test]
fn store_keys_are_stored_as_their_sha256_never_the_key() {
    let (dir, store) = manual();
    let ls = LimitStore::open(&store).unwrap();
    let key = "password-reset:ada.lovelace@example.com";
    let now = store.clock().now_millis();
    ls.update(&[key], |_, _| vec![Change::Put(entry("1", now + 60_000))])
        .unwrap();
    store.close().unwrap();
    let mut bytes = Vec::new();
    for (_, b) in snapshot(dir.path()) {
        bytes.extend(b);
    }
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(!has(key.as_bytes()), "the key is in the file");
    assert!(!has(b"ada.lovelace"), "part of the key is in the file");
    use sha2::{Digest, Sha256};
    assert!(
        has(Sha256::digest(key.as_bytes()).as_slice()),
        "the key's digest is not in the file"
    );
}

#[test]
fn store_a_value_over_4_kb_is_refused_and_the_file_is_unchanged() {
    let (dir, store) = manual();
    let ls = LimitStore::open(&store).unwrap();
    let now = store.clock().now_millis();
    let at_limit = format!("\"{}\"", "x".repeat(4094));
    ls.update(&["fits"], |_, _| vec![Change::Put(entry(&at_limit, now + 1000))])
        .unwrap();
    store.close().unwrap();
    let before = snapshot(dir.path());
    let store = reopen(dir.path());
    let ls = LimitStore::open(&store).unwrap();
    let over = format!("\"{}\"", "x".repeat(4095));
    let u = ls.begin(&["sign-in:ada", "other"]).unwrap();
    let e = u
        .commit_then(vec![Change::Keep, Change::Put(entry(&over, now + 1000))], |_| {
            panic!("answered")
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.message().contains("4097 bytes"), "{e}");
    assert_eq!(e.path(), Some("other"), "the error names the key");
    let e = ls
        .update(&["k"], |_, _| vec![Change::Put(entry("{not json", now + 1000))])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.path(), Some("k"));
    store.close().unwrap();
    assert!(before == snapshot(dir.path()), "a refused value changed the file");
}

#[test]
fn store_bad_calls_are_invalid_and_name_what_was_wrong() {
    let (_dir, store) = manual();
    let ls = LimitStore::open(&store).unwrap();
    let e = ls.read(&["a", "a"]).unwrap_err();
    assert_eq!((e.kind(), e.path()), (ErrorKind::Invalid, Some("a")));
    assert_eq!(ls.read(&[""]).unwrap_err().kind(), ErrorKind::Invalid);
    let many: Vec<String> = (0..65).map(|i| i.to_string()).collect();
    assert_eq!(ls.begin(&many).unwrap_err().kind(), ErrorKind::Invalid);
    let e = ls.update(&["a", "b"], |_, _| vec![Change::Delete]).unwrap_err();
    assert!(e.message().contains("1 changes for 2 keys"), "{e}");
    let e = LimitStore::builder(&store).max_entries(0).open().unwrap_err();
    assert!(e.message().contains("maxEntries"), "{e}");
}

#[test]
fn store_a_bound_out_of_range_is_one_text_naming_the_store() {
    let (_dir, store) = manual();
    for n in [0, -1, i128::from(i64::MAX) + 1] {
        let e = LimitStore::builder(&store)
            .name("sends")
            .max_entries_given(n)
            .open()
            .unwrap_err();
        assert_eq!((e.kind(), e.bucket()), (ErrorKind::Invalid, Some("sends")));
        assert_eq!(
            e.message(),
            format!("max_entries (maxEntries) is {n}: a limit store holds a whole number of entries from 1 to 2^63-1")
        );
    }
    let ls = LimitStore::builder(&store)
        .name("sends")
        .max_entries_given(5)
        .open()
        .unwrap();
    assert_eq!((ls.name(), ls.max_entries()), ("sends", 5));
}

#[test]
fn store_the_bound_warns_at_80_percent_once_a_minute() {
    let t = Two::with(|b| b.max_entries(10));
    let now = t.now();
    let put = |ls: &LimitStore, k: &str| commit(ls, &[k], vec![Change::Put(entry("1", now + 3_600_000))]);
    for i in 0..7 {
        assert_eq!(done_events(put(&t.first, &format!("k{i}"))), vec![]);
    }
    let events = done_events(put(&t.second, "k7"));
    assert_eq!(
        events,
        vec![LimitEvent::Filling {
            entries: 8,
            max_entries: 10
        }]
    );
    assert_eq!(events[0].kind(), "limit-store-filling");
    // Below and back over within the minute: no second warning from this handle.
    commit(&t.second, &["k7"], vec![Change::Delete]);
    assert_eq!(done_events(put(&t.second, "k7")), vec![]);
    t.advance(Duration::from_secs(61));
    commit(&t.second, &["k7"], vec![Change::Delete]);
    assert_eq!(
        done_events(put(&t.second, "k7")).len(),
        1,
        "warned again a minute later"
    );
}

#[test]
fn store_when_full_a_new_key_is_unavailable_and_held_keys_keep_counting() {
    let t = Two::with(|b| b.max_entries(5));
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
    let errors: Vec<_> = events.iter().filter(|e| e.is_error()).collect();
    assert_eq!(errors, vec![&LimitEvent::Full { max_entries: 5 }]);
    assert_eq!(errors[0].kind(), "limit-store-full");
    assert_eq!(
        t.first.read(&["new"]).unwrap(),
        vec![None],
        "nothing of the update was written"
    );
    // Keys it holds keep counting; no live count is removed to make room.
    assert_eq!(count_once(&t.second, "held0"), 2);
    for i in 0..3 {
        assert!(t.first.read(&[format!("held{i}")]).unwrap()[0].is_some());
    }
    // Logged at most once a minute by a handle.
    let (_, events) = failed(commit(&t.first, &["new2"], vec![Change::Put(entry("1", now + 60_000))]));
    assert_eq!(events, vec![]);
    // When expired entries can go, the full store removes them and takes the key.
    t.advance(Duration::from_secs(2));
    let events = done_events(commit(
        &t.first,
        &["new"],
        vec![Change::Put(entry("1", t.now() + 60_000))],
    ));
    assert!(events.iter().all(|e| !e.is_error()));
    assert_eq!(t.second.entries().unwrap(), 4);
    // A minute later, full again (the second handle fills it): logged again.
    t.advance(Duration::from_secs(61));
    let full = |ev: Vec<LimitEvent>| ev.into_iter().filter(LimitEvent::is_error).collect::<Vec<_>>();
    let mut refused = None;
    for i in 0..6 {
        if let Commit::Failed(e, events) = commit(
            &t.second,
            &[&format!("fill{i}")],
            vec![Change::Put(entry("1", t.now() + 600_000))],
        ) {
            refused = Some((e, events));
            break;
        }
    }
    let (e, events) = refused.expect("the store filled up");
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert_eq!(
        full(events),
        vec![LimitEvent::Full { max_entries: 5 }],
        "the other handle logs its own"
    );
    let (_, events) = failed(commit(
        &t.first,
        &["new4"],
        vec![Change::Put(entry("1", t.now() + 60_000))],
    ));
    assert_eq!(full(events), vec![LimitEvent::Full { max_entries: 5 }]);
}

#[test]
fn store_the_stores_maintenance_sweeps_the_entries_and_the_count_follows() {
    let (_dir, store) = manual();
    let ls = LimitStore::builder(&store).max_entries(4).open().unwrap();
    let now = store.clock().now_millis();
    for i in 0..4 {
        commit(&ls, &[&format!("k{i}")], vec![Change::Put(entry("1", now + 1000))]);
    }
    store.clock().advance(Duration::from_secs(2)).unwrap();
    let m = store.maintain().unwrap();
    assert_eq!(
        m.expired, 4,
        "the background sweep removes the limit store's expired rows"
    );
    // Maintenance moved the count by what it deleted, in its transaction:
    // the store is not full, and a new key gets in.
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
fn store_the_65th_call_in_flight_is_answered_unavailable_at_once() {
    let t = Two::new();
    let held: Vec<_> = (0..64).map(|i| t.first.begin(&[format!("k{i}")]).unwrap()).collect();
    // Refused while all 64 are still held: a call that waited for a slot
    // would never be answered here.
    let e = t.first.begin(&["k64"]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.message().contains("64 calls are in flight"), "{e}");
    assert_eq!(t.first.read(&["k0"]).unwrap_err().kind(), ErrorKind::Limit);
    // The other instance has its own calls.
    assert!(t.second.read(&["k0"]).is_ok());
    drop(held);
    assert!(t.first.read(&["k0"]).is_ok());
}

#[test]
fn store_every_call_is_answered_within_its_deadline() {
    let (dir, a) = manual();
    let b = reopen(dir.path());
    let ls = LimitStore::builder(&a)
        .deadline(Duration::from_millis(300))
        .open()
        .unwrap();
    let now = a.clock().now_millis();
    let u = ls.begin(&["k"]).unwrap();
    // The other instance holds the file's write lock until the commit has
    // been answered, so only the deadline can answer it.
    let (locked_tx, locked_rx) = mpsc::channel();
    let (unlock_tx, unlock_rx) = mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        b.tx(|_| {
            locked_tx.send(()).unwrap();
            unlock_rx.recv().unwrap();
            Ok(())
        })
        .unwrap();
    });
    locked_rx.recv().unwrap();
    let (tx, rx) = mpsc::sync_channel(1);
    u.commit_then(vec![Change::Put(entry("1", now + 60_000))], move |c| {
        let _ = tx.send(c);
    })
    .unwrap();
    // A generous bound, only so that a commit never answered fails the
    // test instead of hanging it.
    let answered = rx.recv_timeout(Duration::from_secs(30));
    unlock_tx.send(()).unwrap();
    holder.join().unwrap();
    let (e, _) = failed(answered.expect("answered at its deadline while the lock was held"));
    assert_eq!(e.kind(), ErrorKind::OutcomeUnknown);
    assert!(e.message().contains("unavailable"), "{e}");
    // An update whose apply outran the deadline is refused before it is queued.
    let u = ls.begin(&["k2"]).unwrap();
    std::thread::sleep(Duration::from_millis(350));
    let e = u
        .commit_then(vec![Change::Put(entry("1", now + 60_000))], |_| panic!("answered"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert_eq!(ls.read(&["k2"]).unwrap(), vec![None]);
}

#[test]
fn kv02_the_limit_stores_name_cannot_be_opened_as_a_bucket_of_values() {
    let (_dir, store) = manual();
    let ls = LimitStore::open(&store).unwrap();
    assert_eq!(count_once(&ls, "sign-in:ada"), 1);
    let e = store.bucket::<i64>("limit-store").open().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.to_string().contains("holds a limit store"), "{e}");
    assert_eq!(
        store.names().unwrap(),
        [("limit-store".to_string(), "limit_store".to_string())],
        "the refusal registered nothing"
    );
    assert_eq!(count_once(&ls, "sign-in:ada"), 2, "the limit store goes on");
}
