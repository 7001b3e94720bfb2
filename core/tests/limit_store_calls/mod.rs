//! The calls of the limit store's tests on kv.db and on PostgreSQL: an
//! entry, a count kept in one, and one commit waited for.
#![allow(dead_code)]

use std::sync::mpsc;

use tinystore::{Change, Commit, LimitEntry, LimitEvent, LimitStore};

pub fn entry(value: &str, expires_at: i64) -> LimitEntry {
    LimitEntry {
        value: value.to_owned(),
        expires_at,
    }
}

pub fn count_of(e: &Option<LimitEntry>) -> i64 {
    e.as_ref().map_or(0, |e| e.value.parse().unwrap())
}

/// Adds one to the count of `key`, keeping its window (a minute from the first count).
pub fn count_once(ls: &LimitStore, key: &str) -> i64 {
    let done = ls
        .update(&[key], |entries, now| {
            let n = count_of(&entries[0]);
            let exp = entries[0].as_ref().map_or(now + 60_000, |e| e.expires_at);
            vec![Change::Put(entry(&(n + 1).to_string(), exp))]
        })
        .unwrap();
    count_of(&done.entries[0])
}

/// Commits one run of `changes` and waits for the answer.
pub fn commit(ls: &LimitStore, keys: &[&str], changes: Vec<Change>) -> Commit {
    let u = ls.begin(keys).unwrap();
    let (tx, rx) = mpsc::sync_channel(1);
    u.commit_then(changes, move |c| tx.send(c).unwrap()).unwrap();
    rx.recv().unwrap()
}

pub fn failed(c: Commit) -> (tinystore::Error, Vec<LimitEvent>) {
    match c {
        Commit::Failed(e, ev) => (e, ev),
        Commit::Done(d) => panic!("written: {d:?}"),
        Commit::Retry(_) => panic!("asked to retry"),
    }
}

pub fn done_events(c: Commit) -> Vec<LimitEvent> {
    match c {
        Commit::Done(d) => d.events,
        Commit::Failed(e, _) => panic!("failed: {e}"),
        Commit::Retry(_) => panic!("asked to retry"),
    }
}
