//! Who runs a key of `once` (KV-11) when the store is a PostgreSQL database
//! shared by several servers.
//!
//! A run is a row of `tinystore_runs` naming its holder: a random 63-bit id
//! of one open store. The store proves that it is alive by holding the
//! session advisory lock of that id on a connection of its own (the
//! session) for as long as it is open; when its process dies, PostgreSQL
//! ends the session and the lock goes with it. A claim that finds another
//! holder's row tries that holder's lock: granted, the holder is dead and
//! the claim takes the row over; refused, the holder is alive and the
//! caller waits. Keeping an answer writes it, deletes the row and notifies
//! `tinystore_once` in one statement; a release deletes and notifies. The
//! session `LISTEN`s, so waiters in every store wake at once, and they poll
//! every [`POLL`] as well, for a notification lost while the session was
//! reconnecting and for a holder that died.
//!
//! The rules (what a claim finds, when to wait, the answer's expiry) stay in
//! the core's `once`; this runs its statements.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Mutex as AsyncMutex;
use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use super::SentFlag;
use super::errors::{self, Sent};
use super::pool::Pool;
use crate::error::Result;
use crate::raw::Raw;

/// How often a waiter looks at a key another store holds, besides waking
/// at its notification: the bound on taking over from a dead holder.
pub const POLL: Duration = Duration::from_millis(250);

/// The schema's version 3: the runs of once. Idempotent.
pub const SCHEMA_V3: &str = "
CREATE TABLE IF NOT EXISTS tinystore_runs (
    bucket bigint NOT NULL,
    path bytea NOT NULL,
    holder bigint NOT NULL,
    PRIMARY KEY (bucket, path));
";

/// The channel keeps and releases are announced on; the payload is the
/// key, `bucket:hex(path)`.
const CHANNEL: &str = "tinystore_once";

const LISTEN: &str = "LISTEN tinystore_once";
const HOLD: &str = "SELECT pg_advisory_lock($1)";
const RUN_INSERT: &str = "INSERT INTO tinystore_runs (bucket, path, holder) VALUES ($1, $2, $3)
    ON CONFLICT (bucket, path) DO NOTHING RETURNING holder";
const RUN_LOCK: &str = "SELECT holder FROM tinystore_runs WHERE bucket = $1 AND path = $2 FOR UPDATE";
/// Granted only when no session holds the holder's lock: it is dead. The
/// lock ends with the claim's transaction.
const HOLDER_DEAD: &str = "SELECT pg_try_advisory_xact_lock($1)";
const RUN_TAKE_OVER: &str = "UPDATE tinystore_runs SET holder = $3 WHERE bucket = $1 AND path = $2";
/// The answer, kept until `$4` ms after the clock, the run's row gone and
/// its waiters told, in one statement that commits by itself.
const KEEP: &str = "WITH n AS (SELECT tinystore_now($3) AS now),
c AS (INSERT INTO tinystore_cells AS c (bucket, path, version, expires, int_value, bytes_value)
    SELECT $1::bigint, $2::bytea, nextval('tinystore_versions'), n.now + $4::bigint, $5::bigint, $6::bytea FROM n
    ON CONFLICT (bucket, path) DO UPDATE SET version = excluded.version, expires = excluded.expires,
        int_value = excluded.int_value, bytes_value = excluded.bytes_value
    RETURNING 1),
r AS (DELETE FROM tinystore_runs WHERE bucket = $1 AND path = $2 AND holder = $7)
SELECT pg_notify($8, $9) FROM c";
const RELEASE: &str =
    "WITH r AS (DELETE FROM tinystore_runs WHERE bucket = $1 AND path = $2 AND holder = $3 RETURNING 1)
SELECT pg_notify($4, $5) FROM r";

/// A key of once: the name's id and the path.
type Key = (i64, Vec<u8>);

/// Called when a key's run may have ended: at its notification, or when
/// the session reconnected and may have missed one.
pub(crate) type Wake = Box<dyn FnOnce() + Send>;

/// The waiters of each key: whether each woke already, and its wake.
type Waiters = HashMap<Key, Vec<(Arc<AtomicBool>, Wake)>>;

/// The once state of one open store: its holder id, its session, and the
/// waiters for keys other stores hold.
pub(crate) struct Claims {
    pub(crate) holder: i64,
    session: AsyncMutex<Option<Client>>,
    waiters: Arc<Mutex<Waiters>>,
    closed: AtomicBool,
}

/// What a claim found.
pub(crate) enum Claimed {
    /// The key is this store's to run.
    Run,
    /// An answer is kept.
    Kept(Raw),
    /// A live holder runs the key.
    Busy,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn payload(bucket: i64, path: &[u8]) -> String {
    let mut s = format!("{bucket}:");
    for b in path {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn parse_payload(p: &str) -> Option<Key> {
    let (bucket, hex) = p.split_once(':')?;
    let path = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some((bucket.parse().ok()?, path))
}

impl Claims {
    pub(crate) fn new() -> Claims {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        Claims {
            holder: (h.finish() >> 1) as i64,
            session: AsyncMutex::new(None),
            waiters: Arc::new(Mutex::new(HashMap::new())),
            closed: AtomicBool::new(false),
        }
    }

    /// Calls `wake` when the key's run may have ended. `fired` is set by
    /// the waiter once it woke, by this or by its poll: a waiter fired
    /// already is forgotten at the key's next wait.
    pub(crate) fn wait(&self, bucket: i64, path: &[u8], fired: Arc<AtomicBool>, wake: Wake) {
        if self.closed.load(Ordering::Acquire) {
            return; // dropping `wake` answers its waiter: the store closed
        }
        let mut w = lock(&self.waiters);
        let list = w.entry((bucket, path.to_vec())).or_default();
        list.retain(|(f, _)| !f.load(Ordering::Acquire));
        list.push((fired, wake));
    }

    /// Forgets every waiter and the session: the store closed.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let waiting = std::mem::take(&mut *lock(&self.waiters));
        drop(waiting);
        if let Ok(mut s) = self.session.try_lock() {
            s.take();
        }
    }

    /// Opens the session if it is not open: it holds the holder's lock and
    /// listens. Waiters wake when it (re)opens: they may have missed a
    /// notification meanwhile.
    async fn session(&self, pool: &Pool) -> Result<()> {
        let mut s = self.session.lock().await;
        if s.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(());
        }
        s.take();
        let waiters = self.waiters.clone();
        let client = pool
            .connect_hearing(move |m| {
                if let tokio_postgres::AsyncMessage::Notification(n) = m
                    && n.channel() == CHANNEL
                    && let Some(key) = parse_payload(n.payload())
                {
                    let woken = lock(&waiters).remove(&key).unwrap_or_default();
                    wake_all(woken);
                }
            })
            .await?;
        let fail = |e: tokio_postgres::Error| errors::failed(&pool.shown, &e, Sent::No);
        client.execute(HOLD, &[&self.holder]).await.map_err(fail)?;
        client.batch_execute(LISTEN).await.map_err(fail)?;
        *s = Some(client);
        drop(s);
        let woken: Vec<_> = lock(&self.waiters).drain().flat_map(|(_, v)| v).collect();
        wake_all(woken);
        Ok(())
    }
}

/// Calls each waiter; a waiter whose poll came first does nothing.
fn wake_all(woken: Vec<(Arc<AtomicBool>, Wake)>) {
    for (_, wake) in woken {
        wake();
    }
}

/// Claims the run of a key for this store, unless an answer is kept or a
/// live holder has it. `now` is the store's test clock, if it has one.
pub(crate) async fn claim(pool: &Pool, claims: &Claims, bucket: i64, path: &[u8], now: Option<i64>) -> Result<Claimed> {
    claims.session(pool).await?;
    let held = pool.exclusive().await?;
    let c = held.conn();
    let fail = |e: tokio_postgres::Error| errors::failed(&pool.shown, &e, Sent::No);
    let me = claims.holder;
    let key: [&(dyn ToSql + Sync); 2] = [&bucket, &path];
    let claim: [&(dyn ToSql + Sync); 3] = [&bucket, &path, &me];
    let (_, inserted) = futures_util::try_join!(
        c.client.execute(&c.st.begin, &[]),
        c.client.query_opt(RUN_INSERT, &claim),
    )
    .map_err(fail)?;
    let mine = match inserted {
        Some(_) => true,
        None => match c.client.query_opt(RUN_LOCK, &key).await.map_err(fail)? {
            // Released since the insert looked: the next poll claims it.
            None => false,
            Some(r) => {
                let holder: i64 = r.get(0);
                let dead = holder == me
                    || c.client
                        .query_one(HOLDER_DEAD, &[&holder])
                        .await
                        .map_err(fail)?
                        .get::<_, bool>(0);
                if dead && holder != me {
                    c.client
                        .execute(RUN_TAKE_OVER, &[&bucket, &path, &me])
                        .await
                        .map_err(fail)?;
                }
                dead
            }
        },
    };
    if !mine {
        c.client.execute(&c.st.rollback, &[]).await.map_err(fail)?;
        held.release();
        return Ok(Claimed::Busy);
    }
    // Read after the claim: an answer kept by a holder that let go just
    // before is seen here.
    if let Some(r) = c
        .client
        .query_opt(&c.st.get, &[&bucket, &path, &now])
        .await
        .map_err(fail)?
    {
        c.client.execute(&c.st.rollback, &[]).await.map_err(fail)?;
        held.release();
        let value = match (r.get::<_, Option<i64>>(2), r.get::<_, Option<Vec<u8>>>(3)) {
            (Some(i), _) => Raw::Int(i),
            (None, Some(b)) => Raw::Bytes(b),
            (None, None) => Raw::Null,
        };
        return Ok(Claimed::Kept(value));
    }
    // A claim whose COMMIT is lost is this store's row or none: a later
    // claim of this store finds it its own, and it goes with the session.
    c.client.execute(&c.st.commit, &[]).await.map_err(fail)?;
    held.release();
    Ok(Claimed::Run)
}

/// Keeps `value` for `keep_ms` on the database's clock (or `now`), lets go
/// of this store's run and wakes the waiters, in one statement.
pub(crate) async fn keep(
    pool: &Pool,
    claims: &Claims,
    sent: &SentFlag,
    (bucket, path): (i64, &[u8]),
    value: &Raw,
    keep_ms: i64,
    now: Option<i64>,
) -> Result<()> {
    let c = pool.shared().await?;
    let (int, bytes): (Option<i64>, Option<&[u8]>) = match value {
        Raw::Null => (None, None),
        Raw::Int(i) => (Some(*i), None),
        Raw::Bytes(b) => (None, Some(b.as_slice())),
    };
    let note = payload(bucket, path);
    sent.commit_sent();
    c.client
        .execute(
            KEEP,
            &[
                &bucket,
                &path,
                &now,
                &keep_ms,
                &int,
                &bytes,
                &claims.holder,
                &CHANNEL,
                &note,
            ],
        )
        .await
        .map_err(|e| errors::failed(&pool.shown, &e, Sent::Commit))?;
    Ok(())
}

/// Lets go of this store's run of a key, keeping nothing, and wakes the
/// waiters.
pub(crate) async fn release(pool: &Pool, claims: &Claims, sent: &SentFlag, bucket: i64, path: &[u8]) -> Result<()> {
    let c = pool.shared().await?;
    let note = payload(bucket, path);
    sent.commit_sent();
    c.client
        .execute(RELEASE, &[&bucket, &path, &claims.holder, &CHANNEL, &note])
        .await
        .map_err(|e| errors::failed(&pool.shown, &e, Sent::Commit))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_names_its_key_and_reads_back() {
        let p = payload(42, &[0, 0x7f, 0xff]);
        assert_eq!(p, "42:007fff");
        assert_eq!(parse_payload(&p), Some((42, vec![0, 0x7f, 0xff])));
        assert_eq!(parse_payload("42:0"), None);
        assert_eq!(parse_payload("x:00"), None);
    }

    #[test]
    fn holders_differ_between_opens() {
        assert_ne!(Claims::new().holder, Claims::new().holder);
        assert!(Claims::new().holder >= 0);
    }
}
