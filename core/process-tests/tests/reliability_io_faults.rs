//! KV-15 under I/O faults: a commit whose fsync fails is never
//! answered as a success, reads keep working, and after a reopen the file
//! passes `PRAGMA integrity_check` with every acknowledged write in it.
//!
//! The faults are real failed system calls of the bundled SQLite: a child
//! process writes under `strace`, which makes its Nth `fdatasync` on
//! kv.db-wal (a commit) or kv.db (a checkpoint) return EIO, once or from then
//! on. The parent sweeps N over every sync of the workload and checks each
//! run's answers against the file.
//!
//! The child is the helper's `fault-writer` role (`src/child/faults.rs`).
//! strace comes from Debian (`mk/reliability.mk` installs it); without it
//! the test is skipped with the reason printed, and fails when `CI` is set.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;

use tinystore::{ErrorKind, Options, Store};
use tinystore_process_tests::{FAULT_MARK as MARK, role, start};

/// What one child run was answered, and how many faults strace injected.
#[derive(Debug, Default)]
struct Run {
    acked: BTreeMap<String, String>,
    acked_big: BTreeSet<String>,
    /// Keys answered `Io`: a sure failure, so they must not be in the file.
    refused: BTreeSet<String>,
    unknown: BTreeSet<String>,
    errors: usize,
    open_failed: bool,
    bad_reads: Vec<String>,
    injected_in_writes: usize,
    injected_in_close: usize,
}

fn strace() -> Option<std::path::PathBuf> {
    ["/usr/bin/strace", "/bin/strace"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

/// Runs the child under strace, failing the calls of `file` that `inject`
/// names (as `fdatasync:error=EIO:when=3`).
fn run_child(dir: &Path, tag: &str, file: &str, inject: &str, big: usize) -> Run {
    let trace = dir.join(format!("trace-{tag}"));
    let out = Command::new(strace().unwrap())
        .args(["-f", "-qq", "--seccomp-bpf", "-o"])
        .arg(&trace)
        .arg("-P")
        .arg(dir.join(file))
        .arg("-P")
        .arg(dir.join(MARK))
        .args(["-e", "trace=fdatasync,fsync,pwrite64,openat", "-e"])
        .arg(format!("inject={inject}"))
        .arg(common::CHILD)
        .arg(role::FAULT_WRITER)
        .arg(dir)
        .arg(tag)
        .arg(big.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the child failed under inject {inject} on {file}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut run = Run::default();
    for line in stdout.lines() {
        let mut w = line.split(' ');
        match (w.next(), w.next(), w.next()) {
            (Some("ack"), Some(k), _) => {
                run.acked.insert(k.to_owned(), format!("{tag}:{k}"));
            }
            (Some("ack-big"), Some(k), _) => {
                run.acked_big.insert(k.to_owned());
            }
            (Some("err"), Some(k), Some(code)) => {
                run.errors += 1;
                match code {
                    "IO" => run.refused.insert(k.to_owned()),
                    "OUTCOME_UNKNOWN" => run.unknown.insert(k.to_owned()),
                    _ => panic!("a failed sync answered {line}: only IO or OUTCOME_UNKNOWN are right"),
                };
            }
            (Some("open-err"), Some(code), _) => {
                assert!(code == "IO" || code == "OUTCOME_UNKNOWN", "{line}");
                run.errors += 1;
                run.open_failed = true;
            }
            (Some("read-bad"), _, _) => run.bad_reads.push(line.to_owned()),
            _ => {}
        }
    }
    let trace_text = std::fs::read_to_string(&trace).unwrap_or_default();
    let mut closing = false;
    for l in trace_text.lines() {
        if l.contains(MARK) {
            closing = true;
        } else if l.contains("(INJECTED)") {
            if closing {
                run.injected_in_close += 1;
            } else {
                run.injected_in_writes += 1;
            }
        }
    }
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(dir.join(MARK));
    run
}

/// Totals over a sweep, for the printed figures.
#[derive(Default)]
struct Totals {
    runs: usize,
    injected: usize,
    errors: usize,
    /// Writes answered `Io`, a sure failure, checked to be absent.
    refused: usize,
    acked: usize,
}

/// Checks the file after a run: whole, every write ever acknowledged in it,
/// no write answered with a sure failure in it, a transaction all or nothing.
fn check_file(dir: &Path, all_acked: &BTreeMap<String, String>, run: &Run, what: &str) {
    let conn = rusqlite::Connection::open(dir.join("kv.db")).unwrap();
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok", "{what}");
    drop(conn);
    let store = Store::open_with(dir, Options::new().test_clock(start())).unwrap();
    let b = store.bucket::<String>("acks").open().unwrap();
    for (k, v) in all_acked {
        assert_eq!(b.get(k).unwrap().as_ref(), Some(v), "{what}: acknowledged {k} is lost");
    }
    for k in &run.acked_big {
        assert!(b.has(k).unwrap(), "{what}: acknowledged {k} is lost");
    }
    for k in &run.refused {
        assert!(
            !b.has(k).unwrap(),
            "{what}: {k} was answered IO (not written) but is in the file"
        );
    }
    // The two keys of each transaction land together or not at all.
    for k in run.unknown.iter().filter(|k| k.ends_with("-4")) {
        let pair = format!("{}5", &k[..k.len() - 1]);
        assert_eq!(
            b.has(k).unwrap(),
            b.has(&pair).unwrap(),
            "{what}: half of {k}'s transaction"
        );
    }
    b.set("after-fault", &what.to_owned())
        .expect("the reopened store takes writes");
    store.close().unwrap();
}

/// Sweeps the fault over `points`. A failed sync of kv.db-wal fails a
/// commit, which must be answered; a failed sync of kv.db fails only a
/// checkpoint, after the commits it copies were synced to the WAL, so their
/// writes rightly succeed.
fn sweep(file: &str, points: &[String], big: usize, totals: &mut Totals) {
    sweep_calls(file, "fdatasync:error=EIO", points, big, totals)
}

/// Sweeps a fault of `call` (as `pwrite64:error=ENOSPC`) over `points`.
fn sweep_calls(file: &str, call: &str, points: &[String], big: usize, totals: &mut Totals) {
    // On tmpfs a sync costs nothing, and strace fails it all the same.
    let dir = match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    };
    let mut all_acked = BTreeMap::new();
    for (i, when) in points.iter().enumerate() {
        let inject = format!("{call}:when={when}");
        let what = format!("{inject} on {file}");
        let run = run_child(dir.path(), &format!("t{i}"), file, &inject, big);
        assert!(run.bad_reads.is_empty(), "{what}: reads failed: {:?}", run.bad_reads);
        // Every fault that hit a commit was answered: no failed sync passed
        // as a success.
        assert!(
            file != "kv.db-wal" || run.errors >= run.injected_in_writes.min(1),
            "{what}: {} faults hit the writes, yet every write was answered as a success: {run:?}",
            run.injected_in_writes
        );
        all_acked.extend(run.acked.iter().map(|(k, v)| (k.clone(), v.clone())));
        check_file(dir.path(), &all_acked, &run, &what);
        totals.runs += 1;
        totals.injected += run.injected_in_writes + run.injected_in_close;
        totals.errors += run.errors;
        totals.refused += run.refused.len();
        totals.acked += run.acked.len() + run.acked_big.len();
    }
}

fn have_strace() -> bool {
    if strace().is_some() {
        return true;
    }
    common::cannot_run_here("strace is not installed (apt-get install strace; mk/reliability.mk does it)");
    false
}

#[test]
fn kv15_failed_commit_sync_is_never_a_success_and_loses_nothing() {
    if !have_strace() {
        return;
    }
    let mut t = Totals::default();
    // Fail once at each sync of the workload, then from a point on.
    let mut points: Vec<String> = (1..=48).map(|n| n.to_string()).collect();
    points.extend(["2+", "5+", "20+"].map(String::from));
    sweep("kv.db-wal", &points, 3000, &mut t);
    eprintln!(
        "I/O faults on kv.db-wal: {} runs, {} failed syncs injected, {} writes answered with an error, {} acknowledged writes, 0 lost",
        t.runs, t.injected, t.errors, t.acked
    );
    assert!(t.injected >= 40, "the sweep injected only {} faults", t.injected);
}

#[test]
fn kv15_failed_checkpoint_sync_loses_nothing() {
    if !have_strace() {
        return;
    }
    let mut t = Totals::default();
    // Values of 600 KB fill the WAL past SQLite's 1000-page checkpoint, so
    // syncs of kv.db happen inside writes as well as at close.
    let points: Vec<String> = ["1", "2", "3", "4", "1+", "3+"].map(String::from).to_vec();
    sweep("kv.db", &points, 600_000, &mut t);
    eprintln!(
        "I/O faults on kv.db: {} runs, {} failed syncs injected, {} writes answered with an error, {} acknowledged writes, 0 lost",
        t.runs, t.injected, t.errors, t.acked
    );
    assert!(t.injected >= 4, "the sweep injected only {} faults", t.injected);
}

#[test]
fn kv15_injected_commit_failure_answers_every_caller_and_keeps_the_store_usable() {
    // The same promise without strace, through the core's test hook.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(dir.path(), Options::new().test_clock(start())).unwrap();
    let b = store.bucket::<i64>("b").open().unwrap();
    for round in 0..20i64 {
        let (tx, rx) = mpsc::channel();
        if round % 2 == 1 {
            store.fail_next_commit_for_tests();
        }
        for i in 0..4 {
            let tx = tx.clone();
            b.set_then(format!("{round}-{i}"), &i, move |r| tx.send(r).unwrap())
                .unwrap();
        }
        drop(tx);
        let answers: Vec<_> = rx.iter().collect();
        for (i, r) in answers.iter().enumerate() {
            if round % 2 == 1 && i == 0 {
                // The first write is always in the failed group.
                assert_eq!(r.as_ref().unwrap_err().kind(), ErrorKind::OutcomeUnknown);
            }
            if let Err(e) = r {
                assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}");
            }
        }
        for (i, r) in answers.iter().enumerate() {
            if r.is_ok() {
                assert_eq!(b.get(format!("{round}-{i}")).unwrap(), Some(i as i64));
            }
        }
    }
}

#[test]
fn kv15_failed_wal_write_is_never_a_success_and_loses_nothing() {
    if !have_strace() {
        return;
    }
    let mut t = Totals::default();
    // A commit writes its frames to the WAL, then syncs: fail the writes,
    // as a bad sector (EIO) and as a full disk (ENOSPC) would.
    let mut points: Vec<String> = (1..=60).step_by(4).map(|n| n.to_string()).collect();
    points.push("30+".into());
    for error in ["EIO", "ENOSPC"] {
        sweep_calls("kv.db-wal", &format!("pwrite64:error={error}"), &points, 3000, &mut t);
    }
    eprintln!(
        "failed WAL writes: {} runs, {} failed writes injected, {} writes answered with an error ({} of them IO, checked absent), {} acknowledged writes, 0 lost",
        t.runs, t.injected, t.errors, t.refused, t.acked
    );
    assert!(t.injected >= 20, "the sweep injected only {} faults", t.injected);
}
