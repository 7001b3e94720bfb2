//! `tinystore`: look inside a store's kv.db, or its PostgreSQL database
//! (`--url postgres://...`), from a shell, and copy a store from one to the
//! other (`kv copy`).
//!
//! The commands that look open the file read-only, so they can look at a
//! store an application has open without blocking it, and they never create
//! a store that is not there; on PostgreSQL they only send `SELECT`s. `kv
//! copy` reads its source the same way and writes only to an empty target.

mod show;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tinystore::Inspector;

/// Look inside a TinyStore kv.db.
#[derive(Parser)]
#[command(name = "tinystore", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Top,
}

#[derive(Subcommand)]
enum Top {
    /// Buckets, counters, limits and answers kept in kv.db.
    #[command(subcommand)]
    Kv(Kv),
}

/// Options every kv command takes.
#[derive(clap::Args)]
struct Where {
    /// The store's directory (kv.db lives inside it).
    #[arg(long, default_value = "data", global = true)]
    dir: PathBuf,
    /// A store in PostgreSQL instead: postgres://user@host:5432/db, with
    /// `?schema=` when the store's tables are not in `public`.
    #[arg(long, global = true, conflicts_with = "dir")]
    url: Option<String>,
    /// Print JSON instead of a table, for scripts.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum Kv {
    /// List a bucket's keys: key, kind of value, a preview, version, expiry.
    List {
        /// The bucket (or counters, rate limit, quota, once) name.
        bucket: String,
        /// Only the branch of these owners, outermost first (repeat it).
        #[arg(long = "under", value_name = "OWNER")]
        under: Vec<String>,
        /// At most this many keys.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[command(flatten)]
        at: Where,
    },
    /// Show one key.
    Get {
        /// The bucket name.
        bucket: String,
        /// The key.
        key: String,
        /// The owners of the key's branch, outermost first (repeat it).
        #[arg(long = "under", value_name = "OWNER")]
        under: Vec<String>,
        #[command(flatten)]
        at: Where,
    },
    /// Every name in the file, its kind and how many keys it holds.
    Buckets {
        #[command(flatten)]
        at: Where,
    },
    /// The file's size, its rows, and expired rows waiting for maintenance.
    Stats {
        #[command(flatten)]
        at: Where,
    },
    /// Copy a store into an empty one, keeping every live key's value,
    /// version and expiry: a directory to PostgreSQL, and back again.
    ///
    /// Each of SRC and DST is a store's directory (kv.db lives inside it)
    /// or a postgres:// location. Every name is copied with its kind, and
    /// DST's versions go on above SRC's, so that no version repeats. Keys
    /// expired or cleared are not copied. DST must hold no name yet: a
    /// store that does is refused, and nothing is written to it. Stop the
    /// applications first: a copy carries what the store holds when it is
    /// read.
    #[command(
        after_help = "Examples:\n  tinystore kv copy data/ postgres://app@db.internal:5432/app\n  \
                            tinystore kv copy 'postgres://app@db.internal/app?schema=shop' restored/"
    )]
    Copy {
        /// The store to read: a directory, or postgres://...
        src: PathBuf,
        /// The empty store to write: a directory (created if missing), or postgres://...
        dst: PathBuf,
        /// Print JSON instead of a table, for scripts.
        #[arg(long)]
        json: bool,
    },
}

impl Where {
    /// The store these options name: `--url`, else `--dir`.
    fn open(&self) -> tinystore::Result<Inspector> {
        match &self.url {
            Some(url) if tinystore::is_postgres(url) => Inspector::open(url),
            Some(url) => Err(tinystore::Error::new(
                tinystore::ErrorKind::Invalid,
                format!(
                    "--url takes a postgres:// or postgresql:// location, not {url:?}; a store in a directory is --dir"
                ),
            )),
            None => Inspector::open(&self.dir),
        }
    }

    /// The store as `stats` names it (never a password).
    fn shown(&self) -> PathBuf {
        match &self.url {
            Some(url) => PathBuf::from(tinystore::hide_password(url)),
            None => self.dir.clone(),
        }
    }
}

fn owners(under: &[String]) -> Vec<Vec<u8>> {
    under.iter().map(|o| o.as_bytes().to_vec()).collect()
}

fn run(cli: Cli) -> tinystore::Result<String> {
    let Top::Kv(kv) = cli.command;
    match kv {
        Kv::List {
            bucket,
            under,
            limit,
            at,
        } => {
            let ins = at.open()?;
            let (rows, next) = ins.list(&bucket, &owners(&under), None, limit.clamp(1, 10_000))?;
            Ok(if at.json {
                show::rows_json(&rows, next.is_some())
            } else {
                show::rows_table(&bucket, &rows, next.is_some())
            })
        }
        Kv::Get { bucket, key, under, at } => {
            let ins = at.open()?;
            match ins.get(&bucket, &owners(&under), key.as_bytes())? {
                Some(row) => Ok(if at.json {
                    show::row_json(&row).to_string()
                } else {
                    show::row_detail(&row)
                }),
                None => Err(tinystore::Error::new(
                    tinystore::ErrorKind::Invalid,
                    format!("no live key {key:?} in {bucket:?}"),
                )),
            }
        }
        Kv::Buckets { at } => {
            let names = at.open()?.names()?;
            Ok(if at.json {
                show::names_json(&names)
            } else {
                show::names_table(&names)
            })
        }
        Kv::Copy { src, dst, json } => {
            let copied = tinystore::moving::copy(&src, &dst)?;
            Ok(if json {
                show::copied_json(&copied)
            } else {
                show::copied_text(&copied)
            })
        }
        Kv::Stats { at } => {
            let stats = at.open()?.stats()?;
            Ok(if at.json {
                show::stats_json(&stats)
            } else {
                show::stats_text(&at.shown(), &stats)
            })
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tinystore: {}", e.message());
            ExitCode::FAILURE
        }
    }
}
