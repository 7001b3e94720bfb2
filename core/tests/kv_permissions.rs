//! The store's files are their owner's only unless the store is shared with
//! a group: anyone who can write kv.db-limits can reset every rate limit
//! (KV-12, KV-19). A file of its own: the umask it sets is the process's.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use tinystore::{Options, Store, TABLE_FILE};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Opens a store in `dir`, uses a rate limit (which maps the table) and a
/// bucket (which writes the WAL), and returns the modes of the directory
/// and of each file.
fn modes_after_use(dir: &Path, options: Options) -> Vec<(String, u32)> {
    let store = Store::open_with(dir, options).unwrap();
    let guesses = store
        .rate_limit("sign-in-guesses")
        .rate(5, Duration::from_secs(60))
        .open()
        .unwrap();
    assert!(guesses.allow("203.0.113.7").unwrap().ok);
    store.bucket::<i64>("codes").open().unwrap().set("c", &1).unwrap();
    let mut out = vec![("dir".to_owned(), mode(dir))];
    for f in ["kv.db", "kv.db-wal", "kv.db-shm", TABLE_FILE] {
        out.push((f.to_owned(), mode(&dir.join(f))));
    }
    store.close().unwrap();
    out
}

#[test]
fn kv19_files_are_created_for_their_owner_or_their_group_only() {
    // SAFETY: umask only sets the process's mask; this binary runs no other test.
    unsafe { libc::umask(0o022) };
    let root = tempfile::tempdir().unwrap();

    let own = root.path().join("own/data");
    let got = modes_after_use(&own, Options::new());
    let want: Vec<(String, u32)> = [
        ("dir", 0o700),
        ("kv.db", 0o600),
        ("kv.db-wal", 0o600),
        ("kv.db-shm", 0o600),
    ]
    .into_iter()
    .chain([(TABLE_FILE, 0o600)])
    .map(|(f, m)| (f.to_owned(), m))
    .collect();
    assert_eq!(got, want, "owner only, whatever the umask lets through");

    let group = root.path().join("group");
    let got = modes_after_use(&group, Options::new().share_with_group(true));
    assert!(
        got.iter().all(|(f, m)| *m == if f == "dir" { 0o770 } else { 0o660 }),
        "{got:?}"
    );

    // A store whose files exist keeps their permissions.
    std::fs::set_permissions(own.join("kv.db"), std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::remove_file(own.join(TABLE_FILE)).unwrap();
    let got = modes_after_use(&own, Options::new().share_with_group(true));
    assert_eq!(got[0], ("dir".to_owned(), 0o700));
    assert_eq!(got[1], ("kv.db".to_owned(), 0o640));
    assert_eq!(
        got[4],
        (TABLE_FILE.to_owned(), 0o640),
        "the table takes kv.db's permissions"
    );
}
