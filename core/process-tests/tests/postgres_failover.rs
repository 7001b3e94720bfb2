//! Failover as PostgreSQL users run it: a primary and a synchronous standby
//! on loopback, three app processes writing through a location that names
//! both hosts (`target_session_attrs=read-write`), the primary killed with
//! SIGKILL under that load and the standby promoted. Every acknowledged
//! write is on the new primary, versions never repeat, and the stores find
//! the new primary by themselves.
//!
//! The test makes its own pair of servers in a temporary directory (the
//! primary is killed, so the CI server cannot serve: `pg_cluster`).

mod common;
mod pg_cluster;

use std::time::{Duration, Instant};

use pg_cluster::{Servers, Writers, check_acked, free_port, ok};
use tinystore::Store;

/// A primary and its synchronous standby.
struct Pair {
    servers: Servers,
    primary: u16,
    standby: u16,
}

impl Pair {
    /// Makes the primary and its synchronous standby, and waits until the
    /// standby is synchronous.
    fn new(servers: Servers) -> Pair {
        let pair = Pair {
            servers,
            primary: free_port(),
            standby: free_port(),
        };
        let s = &pair.servers;
        s.init("primary", pair.primary, "synchronous_standby_names = '*'\n");
        s.start("primary");
        ok(
            s.run(
                "pg_basebackup",
                &[
                    "-D",
                    &s.dir("standby"),
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
        pg_cluster::append(
            &s.root().join("standby/postgresql.conf"),
            // The copy of the primary's settings would make the promoted
            // standby wait for a synchronous standby of its own, which it
            // lacks: every commit would wait.
            &format!("port = {}\nsynchronous_standby_names = ''\n", pair.standby),
        );
        s.start("standby");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = s.sql(pair.primary, "SELECT sync_state FROM pg_stat_replication");
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

    fn promote_standby(&self) {
        ok(
            self.servers.run(
                "pg_ctl",
                &["-D", &self.servers.dir("standby"), "-w", "-t", "60", "promote"],
            ),
            "promoting the standby",
        );
    }
}

#[test]
fn kv15_acknowledged_writes_survive_a_failover_to_the_synchronous_standby() {
    let Some(servers) = Servers::here() else { return };
    let pair = Pair::new(servers);
    let location = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write&sslmode=disable&schema=failover",
        pair.primary, pair.standby
    );
    // Open once first, so that the writers find the tables made.
    drop(Store::open(&location).unwrap());

    let writers = Writers::start(&location, pair.servers.root().join("stop"), 3);
    writers
        .said
        .wait_for(&[30; 3], Duration::from_secs(60), "before the failover");
    pair.servers.kill("primary");
    pair.promote_standby();
    writers
        .said
        .wait_for_more(20, Duration::from_secs(90), "after the standby was promoted");
    let said = writers.finish();

    let promoted = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable&schema=failover",
        pair.standby
    );
    check_acked(&promoted, &said.acked(), "after the failover");
}
