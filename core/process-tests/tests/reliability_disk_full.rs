//! A full disk: a write that finds the file system full gets a clear
//! error, reads keep working, nothing acknowledged is lost, and writes
//! resume once space is freed, without reopening the store.
//!
//! The test runs the helper's `disk-full` role (`src/child/disk_full.rs`)
//! inside `unshare -m`, where it mounts a 4 MiB tmpfs, then an 8 MiB ext4
//! image on a loop device, so the mounts vanish with the child whatever
//! happens. Where that is not permitted (no `unshare`, not root, no mount
//! namespaces, no loop device) the test says why and passes, or fails when
//! `CI` is set.

mod common;

use std::process::Command;

use tinystore_process_tests::{CANNOT_MOUNT, role};

#[test]
fn disk_full_gives_a_clear_error_keeps_reads_and_resumes_when_space_is_freed() {
    let base = tempfile::tempdir().unwrap();
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private"])
        .arg(common::CHILD)
        .arg(role::DISK_FULL)
        .arg(base.path())
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return common::cannot_run_here(&format!("cannot run unshare to get a mount namespace: {e}")),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stdout.is_empty() && stderr.contains("unshare") {
        return common::cannot_run_here(&format!("no mount namespace here: {}", stderr.trim()));
    }
    if let Some(line) = stdout.lines().find_map(|l| l.strip_prefix(CANNOT_MOUNT)) {
        return common::cannot_run_here(line.trim());
    }
    assert!(out.status.success(), "the child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.lines().any(|l| l.starts_with("disk full (tmpfs)")),
        "the child ran no scenario:\n{stdout}"
    );
    if let Some(line) = stdout.lines().find(|l| l.starts_with("ext4 skipped")) {
        common::cannot_run_here(line);
    }
    for l in stdout.lines().filter(|l| l.starts_with("disk full (")) {
        eprintln!("{l}");
    }
}
