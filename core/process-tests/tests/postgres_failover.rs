//! Failover as PostgreSQL users run it: a primary and a synchronous standby
//! on loopback, three app processes writing through a location that names
//! both hosts (`target_session_attrs=read-write`), the primary killed with
//! SIGKILL under that load and the standby promoted. Every acknowledged
//! write is on the new primary, versions never repeat, and the stores find
//! the new primary by themselves.
//!
//! The test makes its own pair of servers in a temporary directory (the
//! primary is killed, so the CI server cannot serve): it needs PostgreSQL's
//! binaries and root, to run them as the user postgres. Without them it
//! fails when `CI` is set.

mod common;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tinystore::Store;
use tinystore_process_tests::role;

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

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Two servers in `root`, stopped however the test ends.
struct Pair {
    root: PathBuf,
    bin: PathBuf,
    primary: u16,
    standby: u16,
}

impl Pair {
    /// Runs one of PostgreSQL's programs as the user postgres.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join(program))
            .args(args)
            .current_dir(&self.root)
            .output()
            .unwrap()
    }

    fn dir(&self, name: &str) -> String {
        self.root.join(name).display().to_string()
    }

    fn start(&self, name: &str) {
        let log = self.dir(&format!("{name}.log"));
        ok(
            self.run(
                "pg_ctl",
                &["-D", &self.dir(name), "-l", &log, "-w", "-t", "60", "start"],
            ),
            &format!("starting the {name}"),
        );
    }

    fn sql(&self, port: u16, sql: &str) -> Output {
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

    /// Makes the primary and its synchronous standby, and waits until the
    /// standby is synchronous.
    fn new(root: &Path, bin: PathBuf) -> Pair {
        let pair = Pair {
            root: root.to_owned(),
            bin,
            primary: free_port(),
            standby: free_port(),
        };
        ok(
            pair.run(
                "initdb",
                &[
                    "-D",
                    &pair.dir("primary"),
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
        let conf = format!(
            "port = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             fsync = on\nsynchronous_standby_names = '*'\nmax_connections = 100\n",
            pair.primary,
            root.display()
        );
        append(&root.join("primary/postgresql.conf"), &conf);
        pair.start("primary");
        ok(
            pair.run(
                "pg_basebackup",
                &[
                    "-D",
                    &pair.dir("standby"),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &pair.primary.to_string(),
                    "-U",
                    "postgres",
                    "-R",
                    "--no-sync",
                ],
            ),
            "pg_basebackup",
        );
        append(
            &root.join("standby/postgresql.conf"),
            // The copy of the primary's settings would make the promoted
            // standby wait for a synchronous standby of its own, which it
            // lacks: every commit would wait.
            &format!("port = {}\nsynchronous_standby_names = ''\n", pair.standby),
        );
        pair.start("standby");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = pair.sql(pair.primary, "SELECT sync_state FROM pg_stat_replication");
            if String::from_utf8_lossy(&out.stdout).trim() == "sync" {
                break pair;
            }
            assert!(
                Instant::now() < deadline,
                "the standby is not synchronous after 60 s: {out:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILL of the primary's postmaster and every process of it, as a
    /// machine that dies.
    fn kill_primary(&self) {
        let pid = std::fs::read_to_string(self.root.join("primary/postmaster.pid")).unwrap();
        let pid = pid.lines().next().unwrap().trim().to_owned();
        // Its children, found before it dies: then they are init's.
        let children = Command::new("pgrep").args(["-P", &pid]).output().unwrap();
        let children = String::from_utf8_lossy(&children.stdout).to_string();
        ok(Command::new("kill").args(["-KILL", &pid]).output().unwrap(), "kill");
        for c in children.split_whitespace() {
            let _ = Command::new("kill").args(["-KILL", c]).output();
        }
    }

    fn promote_standby(&self) {
        ok(
            self.run("pg_ctl", &["-D", &self.dir("standby"), "-w", "-t", "60", "promote"]),
            "promoting the standby",
        );
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for name in ["primary", "standby"] {
            let _ = self.run("pg_ctl", &["-D", &self.dir(name), "-m", "immediate", "stop"]);
        }
    }
}

fn append(file: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// What the writers said, line by line, and a wake-up for each line.
#[derive(Default)]
struct Said {
    lines: Mutex<Vec<Vec<String>>>,
    more: Condvar,
}

impl Said {
    /// Acknowledged writes of each writer so far.
    fn acks(&self) -> Vec<usize> {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .map(|l| l.iter().filter(|s| s.starts_with("ok ")).count())
            .collect()
    }

    /// Waits until every writer has at least `at_least[i]` acknowledged
    /// writes, at most `within`.
    fn wait_for(&self, at_least: &[usize], within: Duration, what: &str) {
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
}

#[test]
fn kv15_acknowledged_writes_survive_a_failover_to_the_synchronous_standby() {
    let Some(bin) = binaries() else {
        return common::cannot_run_here("no PostgreSQL binaries in /usr/lib/postgresql/*/bin");
    };
    let root_user = Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n");
    if root_user.ok() != Some(true) || !Path::new("/usr/sbin/runuser").exists() && !Path::new("/sbin/runuser").exists()
    {
        return common::cannot_run_here(
            "the failover test runs PostgreSQL as the user postgres: it needs root and runuser",
        );
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
    let pair = Pair::new(tmp.path(), bin);
    let location = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write&sslmode=disable&schema=failover",
        pair.primary, pair.standby
    );
    // Open once first, so that the writers find the tables made.
    drop(Store::open(&location).unwrap());

    let stop = tmp.path().join("stop");
    let said = Arc::new(Said::default());
    let writers = 3;
    said.lines.lock().unwrap().resize(writers, Vec::new());
    let children: Vec<_> = (0..writers)
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

    said.wait_for(&[30; 3], Duration::from_secs(60), "before the failover");
    pair.kill_primary();
    pair.promote_standby();
    let at_promote = said.acks();
    let wanted: Vec<usize> = at_promote.iter().map(|a| a + 20).collect();
    said.wait_for(&wanted, Duration::from_secs(90), "after the standby was promoted");
    std::fs::write(&stop, b"").unwrap();
    for c in children {
        let out = common::finish(c, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "a writer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let lines = said.lines.lock().unwrap().concat();
    let acked: HashMap<String, String> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("ok "))
        .map(|l| {
            let (key, version) = l.split_once(' ').unwrap();
            (key.to_owned(), version.to_owned())
        })
        .collect();
    let versions: HashSet<&String> = acked.values().collect();
    assert_eq!(versions.len(), acked.len(), "a version was given twice");

    let promoted = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable&schema=failover",
        pair.standby
    );
    let store = Store::open(&promoted).unwrap();
    let orders = store.bucket::<i64>("orders").open().unwrap();
    let mut lost = Vec::new();
    for (key, version) in &acked {
        match orders.entry(key.as_str()).unwrap() {
            Some(e) if e.version.to_string() == *version => {
                let i: i64 = key.rsplit('-').next().unwrap().parse().unwrap();
                assert_eq!(e.value, i, "{key}");
            }
            other => lost.push(format!("{key} at {version}: {:?}", other.map(|e| e.version))),
        }
    }
    assert!(
        lost.is_empty(),
        "acknowledged writes missing after the failover: {lost:?}"
    );
}
