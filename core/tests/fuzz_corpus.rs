//! Replays the fuzz corpus: every file of `fuzz/corpus/<target>/`
//! goes through the same check its cargo-fuzz target runs, so `cargo test`
//! exercises key paths, value decoding and the duration and rate parsers on
//! stable Rust, without cargo-fuzz. A crash cargo-fuzz finds is fixed by
//! adding its input to the corpus, where this test keeps it fixed.

#[allow(dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod harness;

use std::path::PathBuf;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no inputs", dir.display());
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let caught = std::panic::catch_unwind(|| check(&data));
        assert!(caught.is_ok(), "{target}: the input {} fails its check", f.display());
    }
    eprintln!("{target}: {} corpus inputs replayed", files.len());
}

#[test]
fn kv01_key_paths_corpus() {
    replay("key_paths", harness::key_paths);
}

#[test]
fn kv03_value_decoding_corpus() {
    replay("value_decoding", harness::value_decoding);
}

#[test]
fn kv18_durations_and_rates_corpus() {
    replay("durations_and_rates", harness::durations_and_rates);
}
