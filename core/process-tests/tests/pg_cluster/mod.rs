//! PostgreSQL servers of a test's own, in a temporary directory and run as
//! the user postgres, for the tests that kill, stop, pause or promote a
//! server (the CI server, which every other test shares, cannot be); and
//! app processes writing through them, whose acknowledged writes the tests
//! read back. A test needs PostgreSQL's binaries, root and runuser:
//! without them it fails when `CI` is set.
#![allow(dead_code)] // each test file uses some of these

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tinystore::Store;
use tinystore_process_tests::role;

use super::common;

/// The newest PostgreSQL's binaries, if any.
fn binaries() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, bin)| bin.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

pub fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn append(file: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// Servers in a temporary directory, each a data directory by name,
/// stopped however the test ends.
pub struct Servers {
    tmp: tempfile::TempDir,
    bin: PathBuf,
    names: Mutex<Vec<String>>,
}

impl Servers {
    /// A directory for servers, or `None` (after saying why) on a machine
    /// that cannot run them.
    pub fn here() -> Option<Servers> {
        let Some(bin) = binaries() else {
            common::cannot_run_here("no PostgreSQL binaries in /usr/lib/postgresql/*/bin");
            return None;
        };
        let root_user = Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n");
        if root_user.ok() != Some(true)
            || !Path::new("/usr/sbin/runuser").exists() && !Path::new("/sbin/runuser").exists()
        {
            common::cannot_run_here("these tests run PostgreSQL as the user postgres: they need root and runuser");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        ok(
            Command::new("chown")
                .args(["postgres:"])
                .arg(tmp.path())
                .output()
                .unwrap(),
            "chown",
        );
        Some(Servers {
            tmp,
            bin,
            names: Mutex::new(Vec::new()),
        })
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// Runs one of PostgreSQL's programs as the user postgres.
    pub fn run(&self, program: &str, args: &[&str]) -> Output {
        Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join(program))
            .args(args)
            .current_dir(self.root())
            .output()
            .unwrap()
    }

    pub fn dir(&self, name: &str) -> String {
        self.root().join(name).display().to_string()
    }

    /// Makes the data directory `name` for a server on `port`, with
    /// `conf` added to its settings.
    pub fn init(&self, name: &str, port: u16, conf: &str) {
        ok(
            self.run(
                "initdb",
                &[
                    "-D",
                    &self.dir(name),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "--no-sync",
                    "--no-locale",
                ],
            ),
            "initdb",
        );
        let base = format!(
            "port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             fsync = on\nmax_connections = 100\n",
            self.root().display()
        );
        append(
            &self.root().join(name).join("postgresql.conf"),
            &format!("{base}{conf}"),
        );
    }

    pub fn start(&self, name: &str) {
        let log = self.dir(&format!("{name}.log"));
        let out = self.run(
            "pg_ctl",
            &["-D", &self.dir(name), "-l", &log, "-w", "-t", "60", "start"],
        );
        if !out.status.success() {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(10).collect();
            ok(out, &format!("starting the {name} (its log ends: {tail:?})"));
        }
        let mut names = self.names.lock().unwrap();
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }

    /// `pg_ctl -m immediate stop`: every server process quits at once,
    /// without a checkpoint, as in a crash; recovery replays the WAL at the
    /// next start.
    pub fn stop_immediate(&self, name: &str) {
        ok(
            self.run("pg_ctl", &["-D", &self.dir(name), "-m", "immediate", "-w", "stop"]),
            &format!("stopping the {name}"),
        );
    }

    pub fn sql(&self, port: u16, sql: &str) -> Output {
        Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "postgres",
                "-d",
                "postgres",
            ])
            .args(["-Atqc", sql])
            .output()
            .unwrap()
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`) to the server's postmaster
    /// and every process of it, found before the signal (after a SIGKILL
    /// they are init's). Answers their pids, the postmaster's first.
    pub fn signal(&self, name: &str, signal: &str) -> Vec<String> {
        let pid = std::fs::read_to_string(self.root().join(name).join("postmaster.pid")).unwrap();
        let pid = pid.lines().next().unwrap().trim().to_owned();
        let children = Command::new("pgrep").args(["-P", &pid]).output().unwrap();
        let children = String::from_utf8_lossy(&children.stdout).to_string();
        ok(
            Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(&pid)
                .output()
                .unwrap(),
            "kill",
        );
        let mut pids = vec![pid];
        for c in children.split_whitespace() {
            let _ = Command::new("kill").arg(format!("-{signal}")).arg(c).output();
            pids.push(c.to_owned());
        }
        pids
    }

    /// SIGKILL of every process of the server, as a machine that dies; then
    /// waits until they are dead. A container's init may leave them as
    /// zombies, which the next postmaster would take for a live one: their
    /// lock files go, as they would with the machine.
    pub fn kill(&self, name: &str) {
        let lock = self.root().join(name).join("postmaster.pid");
        // The lock file's lines: pid, data directory, start time, port, socket directory.
        let held = std::fs::read_to_string(&lock).unwrap();
        let held: Vec<&str> = held.lines().collect();
        let socket = Path::new(held[4]).join(format!(".s.PGSQL.{}", held[3]));
        let pids = self.signal(name, "KILL");
        let dead = |pid: &String| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // The state follows the command's name in parentheses.
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !pids.iter().all(dead) {
            assert!(
                Instant::now() < deadline,
                "the server's processes outlived SIGKILL by 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_file(&lock);
        let _ = std::fs::remove_file(&socket);
        let _ = std::fs::remove_file(socket.with_extension(format!("{}.lock", held[3])));
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for name in self.names.lock().unwrap().iter() {
            // A paused server would not hear the stop.
            if self.root().join(name).join("postmaster.pid").exists() {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(self.signal(name, "CONT"))));
            }
            let _ = self.run("pg_ctl", &["-D", &self.dir(name), "-m", "immediate", "stop"]);
        }
    }
}

/// What the writers said, line by line, and a wake-up for each line.
#[derive(Default)]
pub struct Said {
    pub lines: Mutex<Vec<Vec<String>>>,
    more: Condvar,
}

impl Said {
    /// Acknowledged writes of each writer so far.
    pub fn acks(&self) -> Vec<usize> {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .map(|l| l.iter().filter(|s| s.starts_with("ok ")).count())
            .collect()
    }

    /// Waits until every writer has at least `more` acknowledged writes
    /// beyond those it has now, at most `within`.
    pub fn wait_for_more(&self, more: usize, within: Duration, what: &str) {
        let wanted: Vec<usize> = self.acks().iter().map(|a| a + more).collect();
        self.wait_for(&wanted, within, what);
    }

    /// Waits until every writer has at least `at_least[i]` acknowledged
    /// writes, at most `within`.
    pub fn wait_for(&self, at_least: &[usize], within: Duration, what: &str) {
        let deadline = Instant::now() + within;
        let mut lines = self.lines.lock().unwrap();
        loop {
            let acks: Vec<usize> = lines
                .iter()
                .map(|l| l.iter().filter(|s| s.starts_with("ok ")).count())
                .collect();
            if acks.iter().zip(at_least).all(|(a, want)| a >= want) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let last: Vec<&[String]> = lines.iter().map(|l| &l[l.len().saturating_sub(3)..]).collect();
                panic!("{what}: acknowledged writes {acks:?}, wanted {at_least:?}; each writer's last lines: {last:?}");
            }
            lines = self.more.wait_timeout(lines, left).unwrap().0;
        }
    }

    /// Every acknowledged write: key and version.
    pub fn acked(&self) -> HashMap<String, String> {
        let lines = self.lines.lock().unwrap().concat();
        lines
            .iter()
            .filter_map(|l| l.strip_prefix("ok "))
            .map(|l| {
                let (key, version) = l.split_once(' ').unwrap();
                (key.to_owned(), version.to_owned())
            })
            .collect()
    }
}

/// App processes writing new keys to `location` (`pg-write`) until the
/// file `stop` exists, each line they print gathered in [`Said`].
pub struct Writers {
    pub said: Arc<Said>,
    children: Vec<Child>,
    stop: PathBuf,
}

impl Writers {
    pub fn start(location: &str, stop: PathBuf, writers: usize) -> Writers {
        let said = Arc::new(Said::default());
        said.lines.lock().unwrap().resize(writers, Vec::new());
        let children = (0..writers)
            .map(|w| {
                let mut c = common::child(
                    role::PG_WRITE,
                    &[location.as_ref(), format!("w{w}").as_ref(), stop.as_os_str()],
                )
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
                let out = c.stdout.take().unwrap();
                let said = said.clone();
                std::thread::spawn(move || {
                    for line in BufReader::new(out).lines() {
                        said.lines.lock().unwrap()[w].push(line.unwrap());
                        said.more.notify_all();
                    }
                });
                c
            })
            .collect();
        Writers { said, children, stop }
    }

    /// Stops the writers and checks that each ended cleanly.
    pub fn finish(self) -> Arc<Said> {
        std::fs::write(&self.stop, b"").unwrap();
        for c in self.children {
            let out = common::finish(c, Duration::from_secs(60));
            assert!(
                out.status.success(),
                "a writer failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        self.said
    }
}

/// Checks that every acknowledged write is at `location` with its version
/// and value, and that no version was given twice.
pub fn check_acked(location: &str, acked: &HashMap<String, String>, what: &str) {
    let versions: std::collections::HashSet<&String> = acked.values().collect();
    assert_eq!(versions.len(), acked.len(), "a version was given twice");
    let store = Store::open(location).unwrap();
    let orders = store.bucket::<i64>("orders").open().unwrap();
    let mut lost = Vec::new();
    for (key, version) in acked {
        match orders.entry(key.as_str()).unwrap() {
            Some(e) if e.version.to_string() == *version => {
                let i: i64 = key.rsplit('-').next().unwrap().parse().unwrap();
                assert_eq!(e.value, i, "{key}");
            }
            other => lost.push(format!("{key} at {version}: {:?}", other.map(|e| e.version))),
        }
    }
    assert!(lost.is_empty(), "acknowledged writes missing {what}: {lost:?}");
    store.close().unwrap();
}
