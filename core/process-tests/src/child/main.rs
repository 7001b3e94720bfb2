//! `tinystore-test-child ROLE ARGS...`: the other process of the process
//! tests (`tests/`). Each role is one module here; the roles and what the
//! two sides share are in the library ([`tinystore_process_tests::role`]).

mod clock;
mod crash;
mod disk_full;
mod failover;
mod faults;
mod limits;
mod postgres;
mod postgres_limits;
mod processes;

use tinystore_process_tests::role;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((which, rest)) = args.split_first() else {
        eprintln!("usage: tinystore-test-child ROLE ARGS... (the process tests start it)");
        std::process::exit(2);
    };
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    match (which.as_str(), rest.as_slice()) {
        (role::CRASH_WRITER, [dir, round]) => crash::writer(dir, round),
        (role::FAULT_WRITER, [dir, tag, big]) => faults::writer(dir, tag, big.parse().unwrap()),
        (role::DISK_FULL, [base]) => disk_full::run(base),
        (role::CLOCK, [dir]) => clock::steps(dir),
        (role::READER, [dir]) => processes::reader(dir),
        (role::BUSY_WRITER, [dir]) => processes::busy_writer(dir),
        (role::QUOTA_ALLOW, [dir]) => limits::quota_allow(dir),
        (role::ONCE_RUN, [dir]) => limits::once_run(dir),
        (role::ONCE_HANG, [dir]) => limits::once_hang(dir),
        (role::ONCE_TAKE_OVER, [dir]) => limits::once_take_over(dir),
        (role::LIMIT_STORE_COUNT, [dir, n]) => limits::limit_store_count(dir, n.parse().unwrap()),
        (role::CONFIG_UPDATE, [dir]) => limits::config_update(dir),
        (role::RATE_CRASH, [dir]) => limits::rate_crash(dir),
        (role::COUNTERS_CRASH, [dir]) => limits::counters_crash(dir),
        (role::PG_TAKE, [location, n]) => postgres::take(location, n.parse().unwrap()),
        (role::PG_LIMITS, [location]) => postgres_limits::run(location),
        (role::PG_ONCE_HANG, [location]) => postgres::once_hang(location),
        (role::PG_ONCE_TAKE_OVER, [location, dir]) => postgres::once_take_over(location, dir),
        (role::PG_WRITE, [location, tag, stop]) => failover::write_until_stopped(location, tag, stop),
        _ => {
            eprintln!("tinystore-test-child: unknown role or arguments: {args:?}");
            std::process::exit(2);
        }
    }
}
