//! Damaged files (KV-19): a kv.db cut short or with a page
//! overwritten is refused at open with a `Corrupt` error naming the file,
//! or, when the damage lies where only some calls read, each call that
//! reads it gets `Corrupt`. No call answers a wrong value, and a call that
//! fails writes nothing. (A file of another application, one that is not
//! SQLite and a newer format are in kv_durability_files.rs.)

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use tinystore::{Error, ErrorKind, ListOptions, Options, Store};

const PAGE: usize = 4096;

/// The keys of the template store and their values: small values in the
/// rows, and spilled ones that SQLite keeps on overflow pages.
fn expected() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for i in 0..400 {
        m.insert(format!("k{i:04}"), format!("{i:>300}"));
    }
    for i in 0..20 {
        m.insert(format!("big{i:02}"), format!("{i}{}", "x".repeat(5000)));
    }
    m
}

/// kv.db of a closed store holding [`expected`], built once.
fn template() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = scratch();
        let store = common::reopen(dir.path());
        let b = store.bucket::<String>("b").open().unwrap();
        // One write at a time, as an application writes: the tree then has
        // interior pages, leaves and overflow chains.
        for (k, v) in expected() {
            b.set(&k, &v).unwrap();
        }
        store.close().unwrap();
        std::fs::read(dir.path().join("kv.db")).unwrap()
    })
}

/// The bytes of kv.db and kv.db-wal, to prove a call wrote nothing.
fn contents(dir: &Path) -> (Vec<u8>, Option<Vec<u8>>) {
    (
        std::fs::read(dir.join("kv.db")).unwrap(),
        std::fs::read(dir.join("kv.db-wal")).ok(),
    )
}

fn scratch() -> tempfile::TempDir {
    match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    }
}

/// A damaged file is `Corrupt`. Refusals at open say the file is damaged;
/// a call that read a damaged row may instead say what did not decode.
fn assert_corrupt(e: &Error, what: &str) {
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}");
}

fn assert_refused(e: &Error, what: &str) {
    assert_corrupt(e, what);
    let m = e.message();
    assert!(
        m.contains("malformed") || m.contains("not a database") || m.contains("truncated"),
        "{what}: the message says the file is damaged: {e}"
    );
    assert!(m.contains("kv.db"), "{what}: the error names the file: {e}");
}

/// What one damaged file did.
#[derive(Default)]
struct Seen {
    refused_at_open: bool,
    corrupt_calls: usize,
}

/// Opens a damaged copy of the template and runs every read and a few
/// writes against it, checking each answer.
fn try_damaged(file: &[u8], what: &str) -> Seen {
    let dir = scratch();
    let path = dir.path().join("kv.db");
    std::fs::write(&path, file).unwrap();
    let mut seen = Seen::default();
    let store = match Store::open_with(dir.path(), Options::new().test_clock(common::start())) {
        Ok(s) => s,
        Err(e) => {
            assert_refused(&e, what);
            assert!(
                std::fs::read(&path).unwrap() == file,
                "{what}: a refused file was changed"
            );
            let left: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(left, ["kv.db"], "{what}: a refused open leaves nothing beside the file");
            seen.refused_at_open = true;
            return seen;
        }
    };
    let b = match store.bucket::<String>("b").open() {
        Ok(b) => b,
        Err(e) => {
            assert_corrupt(&e, what);
            seen.corrupt_calls += 1;
            return seen;
        }
    };
    let before = contents(dir.path());
    for (k, v) in expected() {
        match b.get(&k) {
            Ok(got) => assert!(got.as_ref() == Some(&v), "{what}: get {k} answered a wrong value"),
            Err(e) => {
                assert_corrupt(&e, what);
                assert_eq!((e.bucket(), e.path()), (Some("b"), Some(k.as_str())), "{what}: {e}");
                seen.corrupt_calls += 1;
            }
        }
    }
    match b.list(&ListOptions {
        after: None,
        limit: Some(1000),
    }) {
        Ok(page) => {
            let listed: BTreeMap<String, String> = page
                .entries
                .into_iter()
                .map(|e| (e.key.as_str().unwrap().to_owned(), e.value))
                .collect();
            assert!(listed == expected(), "{what}: list answered other keys or values");
        }
        Err(e) => {
            assert_corrupt(&e, what);
            seen.corrupt_calls += 1;
        }
    }
    assert!(contents(dir.path()) == before, "{what}: reads changed the file");

    let writes: [(&str, &dyn Fn() -> tinystore::Result<()>); 5] = [
        ("set k0002", &|| b.set("k0002", &"new".to_owned()).map(|_| ())),
        ("set a new key", &|| b.set("k9999", &"new".to_owned()).map(|_| ())),
        ("take big07", &|| b.take("big07").map(|_| ())),
        ("delete k0399", &|| b.delete("k0399").map(|_| ())),
        ("maintain", &|| store.maintain().map(|_| ())),
    ];
    for (call, write) in writes {
        let before = contents(dir.path());
        if let Err(e) = write() {
            assert_corrupt(&e, &format!("{what}: {call}"));
            assert!(contents(dir.path()) == before, "{what}: {call} failed but wrote");
            seen.corrupt_calls += 1;
        }
    }
    let _ = store.close();
    seen
}

fn cut(len: usize) -> Vec<u8> {
    template()[..len].to_vec()
}

#[test]
fn kv19_truncated_file_is_refused_or_corrupt_where_read_and_nothing_is_written() {
    let full = template().len();
    assert!(full > 20 * PAGE, "the template is {full} bytes");
    let cases: Vec<(String, usize)> = vec![
        ("20 bytes".into(), 20),
        ("50 bytes".into(), 50),
        ("100 bytes".into(), 100),
        ("one page".into(), PAGE),
        ("four pages".into(), 4 * PAGE),
        ("half".into(), full / 2),
        ("all but the last page".into(), full - PAGE),
        ("1000 bytes short".into(), full - 1000),
        ("1 byte short".into(), full - 1),
    ];
    for (name, len) in cases {
        let what = format!("kv.db cut to {name}");
        let seen = try_damaged(&cut(len), &what);
        assert!(
            seen.refused_at_open || seen.corrupt_calls > 0,
            "{what}: the damage went unnoticed"
        );
    }
}

/// Overwrites the first four bytes of every page in turn: a b-tree page's
/// type and first freeblock, an overflow page's link to the next. (SQLite
/// keeps no checksums, so the bytes of a value inside a page can change
/// unnoticed; docs/reliability.md says so.)
#[test]
fn kv19_damaged_page_is_refused_or_corrupt_where_read_and_nothing_is_written() {
    let file = template();
    let pages = file.len() / PAGE;
    let runs_page = {
        let dir = scratch();
        std::fs::write(dir.path().join("kv.db"), file).unwrap();
        let c = rusqlite::Connection::open(dir.path().join("kv.db")).unwrap();
        c.query_row("SELECT rootpage FROM sqlite_schema WHERE name = 'runs'", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap()
    };
    let (mut cases, mut refused, mut noticed) = (0, 0, 0);
    for n in 0..pages {
        for (fill, name) in [(0xA5u8, "garbage"), (0u8, "zeros")] {
            let mut damaged = file.to_vec();
            // Page 1 keeps the 100-byte file header: its tree is what is damaged.
            let from = if n == 0 { 100 } else { n * PAGE };
            damaged[from..from + 4].fill(fill);
            let seen = try_damaged(
                &damaged,
                &format!("page {} of {pages}: head overwritten with {name}", n + 1),
            );
            if file[from..from + 4] == [0; 4] || (n + 1) as i64 == runs_page {
                // The last page of an overflow chain links to page 0, and
                // SQLite never follows that link; the table of `once` runs
                // is read by no call here: no damage for them to notice.
                continue;
            }
            cases += 1;
            refused += seen.refused_at_open as usize;
            noticed += (seen.refused_at_open || seen.corrupt_calls > 0) as usize;
        }
    }
    eprintln!("damaged pages: {cases} cases, {refused} refused at open, {noticed} noticed, 0 wrong answers");
    assert!(refused > 0, "no damaged page was refused at open");
    assert!(cases >= pages, "only {cases} cases damaged the file");
    assert_eq!(noticed, cases, "a damaged page went unnoticed");
}

#[test]
fn kv19_damaged_header_is_refused_unchanged() {
    let mut damaged = template().to_vec();
    damaged[16..18].copy_from_slice(&[0x12, 0x34]); // a page size SQLite cannot have
    let seen = try_damaged(&damaged, "a page size of 0x1234 in the header");
    assert!(seen.refused_at_open);
}
