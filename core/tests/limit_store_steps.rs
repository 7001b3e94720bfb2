//! The limit store's update as the bindings drive it (`UpdateSteps`): what
//! `apply` returned, by key, checked once in the core with the messages
//! every language shows; the retry when another update changed a key; the
//! events kept for the binding to log (docs/limit-store.md).

mod common;

use std::sync::mpsc;

use common::{manual, snapshot};
use tinystore::{ErrorKind, LimitEntry, LimitEvent, LimitStore, Returned, ReturnedEntry, UpdateSteps};

fn put(json: &str, expires_at: f64) -> Returned {
    Some(ReturnedEntry {
        json: Ok(json.to_owned()),
        expires_at,
    })
}

/// Commits and waits: `Ok(true)` written, `Ok(false)` run `apply` again.
fn commit(u: &UpdateSteps, returned: Vec<(&str, Returned)>) -> tinystore::Result<bool> {
    let (tx, rx) = mpsc::sync_channel(1);
    let returned = returned.into_iter().map(|(k, r)| (k.to_owned(), r)).collect();
    u.commit_then(returned, move |r| {
        let _ = tx.send(r);
    })?;
    rx.recv().unwrap()
}

fn keys(list: &[&str]) -> Vec<String> {
    list.iter().map(|k| (*k).to_owned()).collect()
}

#[test]
fn store_steps_write_by_key_keep_the_keys_left_out_and_answer_the_entries_written() {
    let (_dir, store) = manual();
    let ls = LimitStore::open(&store).unwrap();
    let now = ls.steps(keys(&["a"])).unwrap().now();
    let first = ls.steps(keys(&["a", "b"])).unwrap();
    assert_eq!(first.entries(), vec![None, None]);
    assert!(
        commit(
            &first,
            vec![("b", put("2", (now + 500) as f64 + 0.75)), ("a", put("1", 1e13))]
        )
        .unwrap()
    );
    assert_eq!(
        first.entries(),
        vec![
            Some(LimitEntry {
                value: "1".into(),
                expires_at: 10_000_000_000_000
            }),
            Some(LimitEntry {
                value: "2".into(),
                expires_at: now + 500
            }),
        ],
        "in the keys' order, a fraction of a ms rounded down"
    );
    let second = ls.steps(keys(&["a", "b"])).unwrap();
    assert!(commit(&second, vec![("a", None)]).unwrap());
    assert_eq!(second.entries()[0], None, "None deletes");
    assert_eq!(
        ls.read(&["a", "b"]).unwrap()[1].as_ref().unwrap().value,
        "2",
        "a key left out is kept"
    );
}

#[test]
fn store_steps_a_key_changed_meanwhile_answers_run_apply_again_on_the_entries_now() {
    let (_dir, store) = manual();
    let ls = LimitStore::open(&store).unwrap();
    let first = ls.steps(keys(&["k"])).unwrap();
    let second = ls.steps(keys(&["k"])).unwrap();
    assert!(commit(&first, vec![("k", put("1", 1e13))]).unwrap());
    assert!(
        !commit(&second, vec![("k", put("1", 1e13))]).unwrap(),
        "the key changed since its read"
    );
    assert_eq!(
        second.entries()[0].as_ref().unwrap().value,
        "1",
        "the entries as they are now"
    );
    assert!(commit(&second, vec![("k", put("2", 1e13))]).unwrap());
    assert_eq!(ls.read(&["k"]).unwrap()[0].as_ref().unwrap().value, "2");
}

#[test]
fn store_steps_a_bad_answer_of_apply_is_invalid_naming_the_key_and_writes_nothing() {
    let (dir, store) = manual();
    let ls = LimitStore::open(&store).unwrap();
    store.maintain().unwrap();
    let before = snapshot(dir.path());
    let cases: Vec<(Returned, &str, &str)> = vec![
        (
            put("1", 1e13),
            "z",
            "apply returned a key that is not one of the keys of the update",
        ),
        (
            put("1", f64::NAN),
            "k",
            "an entry's expiry must be a finite number of ms, not NaN",
        ),
        (
            put("1", f64::INFINITY),
            "k",
            "an entry's expiry must be a finite number of ms, not infinity",
        ),
        (
            put("1", f64::NEG_INFINITY),
            "k",
            "an entry's expiry must be a finite number of ms, not minus infinity",
        ),
        (
            Some(ReturnedEntry {
                json: Err("a set is not JSON".into()),
                expires_at: 1e13,
            }),
            "k",
            "the value cannot be written as JSON: a set is not JSON",
        ),
    ];
    for (returned, key, message) in cases {
        let u = ls.steps(keys(&["k"])).unwrap();
        let e = commit(&u, vec![(key, returned)]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
        assert!(e.to_string().contains(message), "{e}");
        assert_eq!(e.path(), Some(key), "{e}");
        assert_eq!(e.bucket(), Some("limit-store"), "{e}");
        let again = commit(&u, vec![]).unwrap_err();
        assert!(again.to_string().contains("already committed or given up"), "{again}");
    }
    assert_eq!(snapshot(dir.path()), before, "a refused update changed the file");
}

#[test]
fn store_steps_given_up_frees_the_call_in_flight() {
    let (_dir, store) = manual();
    let ls = LimitStore::builder(&store).in_flight(1).open().unwrap();
    let u = ls.steps(keys(&["k"])).unwrap();
    let refused = ls.steps(keys(&["k"])).err().expect("one call in flight at most");
    assert_eq!(refused.kind(), ErrorKind::Limit);
    u.give_up();
    assert!(commit(&ls.steps(keys(&["k"])).unwrap(), vec![("k", put("1", 1e13))]).unwrap());
}

#[test]
fn store_steps_keep_the_events_for_the_binding_to_log() {
    let (_dir, store) = manual();
    let ls = LimitStore::builder(&store).max_entries(1).open().unwrap();
    let u = ls.steps(keys(&["k"])).unwrap();
    assert!(commit(&u, vec![("k", put("1", 1e13))]).unwrap());
    assert_eq!(
        u.take_events(),
        vec![LimitEvent::Filling {
            entries: 1,
            max_entries: 1
        }]
    );
    assert_eq!(u.take_events(), vec![], "taken once");
    let full = ls.steps(keys(&["new"])).unwrap();
    assert_eq!(
        commit(&full, vec![("new", put("1", 1e13))]).unwrap_err().kind(),
        ErrorKind::Limit
    );
    assert_eq!(
        full.take_events(),
        vec![LimitEvent::Full { max_entries: 1 }],
        "kept when the commit failed"
    );
}
