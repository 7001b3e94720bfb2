//! The disk-full child: inside its own mount namespace (the parent runs it
//! under `unshare -m`), a 4 MiB tmpfs, then an 8 MiB ext4 image on a loop
//! device, each filled by a store until writes fail, then freed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use tinystore::{ErrorKind, ListOptions, Options, Store};
use tinystore_process_tests::{CANNOT_MOUNT, start};

fn open(dir: &Path) -> Store {
    Store::open_with(dir, Options::new().test_clock(start())).unwrap()
}

fn value(key: &str, size: usize) -> String {
    format!("{key}:{}", "v".repeat(size))
}

/// What the writes of one store were answered.
#[derive(Default)]
struct Answers {
    acked: BTreeMap<String, String>,
    /// Keys answered with a sure failure (`Io`): they must not be in the file.
    refused: Vec<String>,
    /// Keys answered `OutcomeUnknown`: either way is right.
    unknown: Vec<String>,
    full_errors: usize,
}

/// Fills the disk with values of `size` bytes until a write fails, checks
/// that reads still work while it is full, frees `ballast`, and checks that
/// writes resume.
fn fill_and_free(store: &Store, round: usize, size: usize, ballast: &Path, answers: &mut Answers) {
    let b = store.bucket::<String>("filled").open().unwrap();
    let mut first_error = None;
    for i in 0..10_000 {
        let key = format!("r{round}-{i}");
        let v = value(&key, size);
        match b.set(&key, &v) {
            Ok(_) => {
                answers.acked.insert(key, v);
            }
            Err(e) => {
                first_error = Some((key, e));
                break;
            }
        }
    }
    let (key, e) = first_error.expect("the disk never filled up");
    assert!(
        matches!(e.kind(), ErrorKind::Io | ErrorKind::OutcomeUnknown),
        "a full disk is an I/O error or an unknown outcome, never {e}"
    );
    assert!(e.message().contains("full"), "the error says the disk is full: {e}");
    answers.full_errors += 1;
    match e.kind() {
        ErrorKind::Io => answers.refused.push(key),
        _ => answers.unknown.push(key),
    }
    assert!(answers.acked.len() >= 10, "only {} writes fit", answers.acked.len());

    // While the disk is full: more writes of the same size fail the same
    // way, and every acknowledged key reads back, one by one and listed.
    for i in 0..3 {
        let key = format!("r{round}-full-{i}");
        match b.set(&key, &value(&key, size)) {
            Ok(_) => {
                answers.acked.insert(key.clone(), value(&key, size));
            }
            Err(e) => {
                assert!(e.message().contains("full"), "{e}");
                answers.full_errors += 1;
                match e.kind() {
                    ErrorKind::Io => answers.refused.push(key),
                    ErrorKind::OutcomeUnknown => answers.unknown.push(key),
                    _ => panic!("a full disk is an I/O error or an unknown outcome, never {e}"),
                }
            }
        }
    }
    check_reads(&b, answers);

    // Space comes back: writes resume at once, on the same store.
    std::fs::remove_file(ballast).unwrap();
    let key = format!("r{round}-freed");
    let v = value(&key, size);
    b.set(&key, &v).expect("a write after space was freed");
    answers.acked.insert(key, v);
}

fn check_reads(b: &tinystore::Bucket<String>, answers: &Answers) {
    for (k, v) in &answers.acked {
        assert_eq!(b.get(k).unwrap().as_ref(), Some(v), "acknowledged {k}");
    }
    let mut listed = BTreeMap::new();
    let mut after = None;
    loop {
        let page = b
            .list(&ListOptions {
                after: after.take(),
                limit: Some(50),
            })
            .unwrap();
        for e in page.entries {
            listed.insert(e.key.as_str().unwrap().to_owned(), e.value);
        }
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    for (k, v) in &answers.acked {
        assert_eq!(listed.get(k), Some(v), "{k} is listed");
    }
}

/// Runs `mount` with `args`; the error says why it failed.
fn mount(args: &[&str], at: &Path) -> Result<(), String> {
    match Command::new("mount").args(args).arg(at).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_owned()),
        Err(e) => Err(format!("cannot run mount: {e}")),
    }
}

/// Three rounds of filling and freeing on the file system mounted at
/// `mnt`, then a reopen; prints the figures.
fn scenario(fs: &str, mnt: &Path) {
    let ballasts: Vec<PathBuf> = (0..3).map(|i| mnt.join(format!("ballast-{i}"))).collect();
    for b in &ballasts {
        std::fs::write(b, vec![0x5a; 256 << 10]).unwrap();
    }
    let dir = mnt.join("store");
    let store = open(&dir);
    let mut answers = Answers::default();
    // Spilled values, values kept in the row, and small ones.
    for (round, size) in [16_000, 2_000, 300].into_iter().enumerate() {
        fill_and_free(&store, round, size, &ballasts[round], &mut answers);
    }
    store.close().unwrap();

    // Reopened: the file is whole, nothing acknowledged is lost, and no
    // write answered with a sure failure is there.
    let conn = rusqlite::Connection::open(dir.join("kv.db")).unwrap();
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok", "{fs}");
    drop(conn);
    let store = open(&dir);
    let b = store.bucket::<String>("filled").open().unwrap();
    check_reads(&b, &answers);
    for k in &answers.refused {
        assert_eq!(b.get(k).unwrap(), None, "{fs}: {k} was answered with a sure failure");
    }
    println!(
        "disk full ({fs}): {} acknowledged writes kept, {} writes refused for a full disk ({} sure, {} unknown), 0 lost",
        answers.acked.len(),
        answers.full_errors,
        answers.refused.len(),
        answers.unknown.len()
    );
}

/// A 4 MiB tmpfs (which ignores fsync), then an 8 MiB ext4 image on a loop
/// device (a real file system).
pub fn run(base: &str) {
    let base = PathBuf::from(base);
    let mnt = base.join("tmpfs");
    std::fs::create_dir_all(&mnt).unwrap();
    if let Err(why) = mount(&["-t", "tmpfs", "-o", "size=4m", "tmpfs"], &mnt) {
        println!("{CANNOT_MOUNT} mount -t tmpfs refused: {why}");
        return;
    }
    scenario("tmpfs", &mnt);

    let image = base.join("ext4.img");
    let made = std::fs::File::create(&image).and_then(|f| f.set_len(8 << 20)).is_ok()
        && Command::new("mkfs.ext4")
            // 4 KiB blocks, as on any real disk: mkfs gives an image this
            // small 1 KiB blocks, and then the one byte SQLite writes to each
            // new page of kv.db-shm (so that the page is allocated before it
            // is mapped) allocates a quarter of it. The rest of the page is
            // allocated when first written through the map, and on a full
            // disk that write stops the process with SIGBUS.
            .args(["-q", "-F", "-b", "4096"])
            .arg(&image)
            .status()
            .is_ok_and(|s| s.success());
    let mnt = base.join("ext4");
    std::fs::create_dir_all(&mnt).unwrap();
    match made.then(|| mount(&["-o", "loop", image.to_str().unwrap()], &mnt)) {
        Some(Ok(())) => scenario("ext4", &mnt),
        Some(Err(why)) => println!("ext4 skipped: no loop mount: {why}"),
        None => println!("ext4 skipped: mkfs.ext4 failed or is missing"),
    }
}
