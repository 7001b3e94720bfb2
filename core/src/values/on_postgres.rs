//! The calls of a value bucket on a PostgreSQL store. The rules are the
//! ones the SQLite path applies (`target`, `bucket_core`): version checks
//! with the same messages, the expiry a write gives, what `create` finds.
//! They decide here, on the row the backend locked and the database's
//! clock it read ([`cells::row_write`]); the backend only runs statements.

use super::{
    BucketCore, Created, Entry, Expiry, ListOptions, MAX_PAGE_BYTES, Page, RawBucket, Target, Version, WriteOptions,
};
use std::future::Future;
use std::sync::Arc;

use crate::budget::Held;
use crate::clock::from_millis;
use crate::error::Result;
use crate::group_commit::Ticket;
use crate::postgres::cells::{self, Change, Found, SetExpiry, Taken};
use crate::postgres::{PgStore, Pool, SentFlag};
use crate::raw::Raw;
use crate::storage::{Cell, CellMeta};

/// The store's test clock, passed to every statement; `None` lets the
/// database's own clock judge.
pub(crate) fn clock_of(core: &BucketCore) -> Option<i64> {
    let clock = &core.store.inner.clock;
    clock.is_manual().then(|| clock.now_millis())
}

/// [`BucketCore::set_expiry`] as the one statement of a `set` applies it
/// on the database's clock: a time, a span from now, or a live key's own
/// expiry kept (else the bucket's ttl from now).
pub(crate) fn set_expiry(core: &BucketCore, own: Option<Expiry>) -> SetExpiry {
    let at = |at, span, keep_live| SetExpiry { at, span, keep_live };
    match (own, core.idle) {
        (Some(Expiry::At(t)), _) => at(Some(crate::clock::to_millis(t)), None, false),
        (Some(Expiry::In(d)), _) => at(None, Some(crate::clock::duration_millis(d)), false),
        (None, Some(term)) => at(None, Some(term), false),
        (None, None) => at(None, core.ttl, true),
    }
}

/// A locked row as the version check reads it: only a live row has a version.
fn live_meta(found: Option<&Found>) -> Option<CellMeta> {
    found.filter(|f| f.live).map(|f| CellMeta {
        version: f.cell.version,
        expires: f.cell.expires,
        spill: None,
        live: true,
    })
}

/// A `set`: one statement, or, with `if_version`, a write on the locked row.
pub(crate) async fn set(pg: &Pool, sent: &SentFlag, t: &Target, value: &Raw, opts: WriteOptions) -> Result<Version> {
    value.check_size().map_err(|e| t.name(e))?;
    let now = clock_of(&t.core);
    let r = async {
        if opts.if_version.is_none() {
            let v = cells::set(
                pg,
                sent,
                t.core.id,
                t.path(),
                value,
                set_expiry(&t.core, opts.expiry),
                now,
            )
            .await?;
            return Ok(Version(v));
        }
        let (_, v) = cells::row_write(pg, sent, t.core.id, t.path(), now, decide_set(t, value, opts)).await?;
        Ok(Version(v.expect("a put has a version")))
    };
    r.await.map_err(|e| t.name(e))
}

/// What a write decided on a key's locked row, and what it answers.
type Decision<R> = Result<(Change, R)>;

/// What a `set` writes on a key's locked row: the version check and the
/// expiry the core gives.
pub(crate) fn decide_set<'a>(
    t: &'a Target,
    value: &'a Raw,
    opts: WriteOptions,
) -> impl FnMut(i64, Option<&Found>) -> Decision<()> + 'a {
    move |now, found| {
        let live = live_meta(found);
        t.check_version(live.as_ref(), opts.if_version)?;
        let expires = t.core.expiry(now, opts.expiry, live.map(|m| m.expires));
        Ok((
            Change::Put {
                value: value.clone(),
                expires,
            },
            (),
        ))
    }
}

/// What a `create` does on a key's locked row: the live entry it found, or
/// the value written and the expiry it got.
pub(crate) fn decide_create<'a>(
    t: &'a Target,
    value: &'a Raw,
    expiry: Option<Expiry>,
) -> impl FnMut(i64, Option<&Found>) -> Decision<CreateDecided> + 'a {
    move |now, found| {
        if let Some(f) = found.filter(|f| f.live) {
            return Ok((Change::Keep, CreateDecided::Found(t.entry(f.cell.clone()))));
        }
        let expires = t.core.expiry(now, expiry, None);
        Ok((
            Change::Put {
                value: value.clone(),
                expires,
            },
            CreateDecided::Put { expires },
        ))
    }
}

/// What [`decide_create`] chose, before the backend wrote it.
pub(crate) enum CreateDecided {
    /// The live entry, unchanged.
    Found(Entry<Raw>),
    /// The value put, to expire then (ms), if ever.
    Put { expires: Option<i64> },
}

impl CreateDecided {
    /// The answer of `create`, with the version the backend's put gave.
    fn created(self, version: Option<i64>) -> Created<Raw> {
        match self {
            CreateDecided::Found(e) => Created::Found(e),
            CreateDecided::Put { expires } => Created::Written {
                version: Version(version.expect("a put has a version")),
                expires_at: expires.map(from_millis),
            },
        }
    }
}

/// What a `delete` does on a key's locked row; says whether it was live.
pub(crate) fn decide_delete(
    t: &Target,
    if_version: Option<Version>,
) -> impl FnMut(i64, Option<&Found>) -> Decision<bool> + '_ {
    move |_, found| {
        let live = live_meta(found);
        t.check_version(live.as_ref(), if_version)?;
        match found {
            None => Ok((Change::Keep, false)),
            Some(_) => Ok((Change::Delete, live.is_some())),
        }
    }
}

/// What an `expire` does on a key's locked row; says whether it was live.
pub(crate) fn decide_expire(
    t: &Target,
    expiry: Expiry,
    if_version: Option<Version>,
) -> impl FnMut(i64, Option<&Found>) -> Decision<bool> + '_ {
    move |now, found| {
        let live = live_meta(found);
        t.check_version(live.as_ref(), if_version)?;
        if live.is_none() {
            return Ok((Change::Keep, false));
        }
        Ok((Change::Expires(Some(expiry.at(now))), true))
    }
}

/// What a `take` does on a key's locked row inside a transaction: the
/// version check, then `decode` of the live entry (an error keeps the
/// value), then the delete.
fn decide_take<'a, T>(
    t: &'a Target,
    if_version: Option<Version>,
    decode: impl FnOnce(Entry<Raw>) -> Result<T> + 'a,
) -> impl FnMut(i64, Option<&Found>) -> Decision<Option<T>> + 'a {
    let mut decode = Some(decode);
    move |_, found| {
        let live = live_meta(found);
        t.check_version(live.as_ref(), if_version)?;
        let (Some(f), Some(decode)) = (found.filter(|f| f.live), decode.take()) else {
            return Ok((Change::Keep, None));
        };
        Ok((Change::Delete, Some(decode(t.entry(f.cell.clone()))?)))
    }
}

/// The calls of a bucket inside a transaction or a view on PostgreSQL: the
/// decisions above, on the transaction's connection and clock.
pub(crate) mod in_tx {
    use super::*;
    use crate::key::Branch;
    use crate::postgres::tx::PgTx;

    pub(crate) fn entry(p: &PgTx, t: &Target) -> Result<Option<Entry<Raw>>> {
        let cell = p.get(t.core.id, t.path()).map_err(|e| t.name(e))?;
        Ok(cell.map(|c| t.entry(c)))
    }

    pub(crate) fn list(p: &PgTx, core: &BucketCore, branch: &Branch, opts: &ListOptions) -> Result<Page<Raw>> {
        super::super::reads::list_with(core, branch, opts, |after, hi, limit| {
            p.scan(core.id, (after, hi), limit, MAX_PAGE_BYTES)
        })
    }

    pub(crate) fn set(p: &PgTx, t: &Target, value: &Raw, opts: WriteOptions) -> Result<Version> {
        value.check_size().map_err(|e| t.name(e))?;
        let (_, v) = p
            .write(t.core.id, t.path(), decide_set(t, value, opts))
            .map_err(|e| t.name(e))?;
        Ok(Version(v.expect("a put has a version")))
    }

    pub(crate) fn create(p: &PgTx, t: &Target, value: &Raw, expiry: Option<Expiry>) -> Result<Created<Raw>> {
        value.check_size().map_err(|e| t.name(e))?;
        let (decided, v) = p
            .write(t.core.id, t.path(), decide_create(t, value, expiry))
            .map_err(|e| t.name(e))?;
        Ok(decided.created(v))
    }

    pub(crate) fn take<T>(
        p: &PgTx,
        t: &Target,
        if_version: Option<Version>,
        decode: impl FnOnce(Entry<Raw>) -> Result<T>,
    ) -> Result<Option<T>> {
        let (out, _) = p
            .write(t.core.id, t.path(), decide_take(t, if_version, decode))
            .map_err(|e| t.name(e))?;
        Ok(out)
    }

    pub(crate) fn delete(p: &PgTx, t: &Target, if_version: Option<Version>) -> Result<bool> {
        let (was_live, _) = p
            .write(t.core.id, t.path(), decide_delete(t, if_version))
            .map_err(|e| t.name(e))?;
        Ok(was_live)
    }

    pub(crate) fn expire(p: &PgTx, t: &Target, expiry: Expiry, if_version: Option<Version>) -> Result<bool> {
        let (was_live, _) = p
            .write(t.core.id, t.path(), decide_expire(t, expiry, if_version))
            .map_err(|e| t.name(e))?;
        Ok(was_live)
    }

    /// A branch's clear: one statement, whatever its size.
    pub(crate) fn clear(p: &PgTx, core: &BucketCore, branch: &Branch) -> Result<()> {
        branch.check(&core.name)?;
        let (lo, hi) = branch.subtree();
        p.clear(core.id, &lo, &hi)
            .map_err(|e| e.at(&core.name, branch.show_with(None)))
    }
}

pub(crate) async fn create(
    pg: &Pool,
    sent: &SentFlag,
    t: &Target,
    value: &Raw,
    expiry: Option<Expiry>,
) -> Result<Created<Raw>> {
    value.check_size().map_err(|e| t.name(e))?;
    let now = clock_of(&t.core);
    let (decided, v) = cells::row_write(pg, sent, t.core.id, t.path(), now, decide_create(t, value, expiry))
        .await
        .map_err(|e| t.name(e))?;
    Ok(decided.created(v))
}

/// `take`: `decode` runs before the delete commits; an error from it keeps
/// the value.
pub(crate) async fn take<T>(
    pg: &Pool,
    sent: &SentFlag,
    t: &Target,
    if_version: Option<Version>,
    decode: impl FnOnce(Entry<Raw>) -> Result<T>,
) -> Result<Option<T>> {
    let now = clock_of(&t.core);
    let run = async {
        let mut out = None;
        let taken = cells::take(
            pg,
            sent,
            t.core.id,
            t.path(),
            if_version.map(|v| v.0),
            now,
            |cell: &Cell| {
                out = Some(decode(t.entry(cell.clone()))?);
                Ok(())
            },
        )
        .await?;
        match taken {
            Taken::Row => Ok(out),
            Taken::Missing => match if_version {
                None => Ok(None),
                // Why it missed, in the words of the version check.
                Some(v) => {
                    let live = cells::has(pg, t.core.id, t.path(), now)
                        .await?
                        .map(|(version, expires, _)| CellMeta {
                            version,
                            expires,
                            spill: None,
                            live: true,
                        });
                    // Versions never repeat: a live key it missed is at another.
                    t.check_version(live.as_ref(), Some(v)).map(|_| None)
                }
            },
        }
    };
    run.await.map_err(|e| t.name(e))
}

pub(crate) async fn delete(pg: &Pool, sent: &SentFlag, t: &Target, if_version: Option<Version>) -> Result<bool> {
    let now = clock_of(&t.core);
    let (was_live, _) = cells::row_write(pg, sent, t.core.id, t.path(), now, decide_delete(t, if_version))
        .await
        .map_err(|e| t.name(e))?;
    Ok(was_live)
}

pub(crate) async fn expire(
    pg: &Pool,
    sent: &SentFlag,
    t: &Target,
    expiry: Expiry,
    if_version: Option<Version>,
) -> Result<bool> {
    let now = clock_of(&t.core);
    let (was_live, _) = cells::row_write(pg, sent, t.core.id, t.path(), now, decide_expire(t, expiry, if_version))
        .await
        .map_err(|e| t.name(e))?;
    Ok(was_live)
}

pub(crate) async fn clear(pg: &Pool, sent: &SentFlag, core: &BucketCore, branch: &crate::key::Branch) -> Result<()> {
    let named = |e: crate::Error| e.at(&core.name, branch.show_with(None));
    branch.check(&core.name)?;
    let (lo, hi) = branch.subtree();
    cells::clear(pg, sent, core.id, &lo, &hi).await.map_err(named)?;
    Ok(())
}

/// The point reads and listing, blocking.
impl RawBucket {
    /// This bucket's PostgreSQL store, if it is on one.
    #[inline]
    pub(crate) fn pg(&self) -> Option<&PgStore> {
        self.core.store.inner.postgres()
    }

    pub(super) fn pg_cell(&self, pg: &PgStore, path: &[u8], key: &[u8]) -> Result<Option<Cell>> {
        let now = clock_of(&self.core);
        let found = pg
            .block(async |pool, _| cells::get(pool, self.core.id, path, now).await)
            .map_err(|e| self.named(key, e))?;
        let Some((mut cell, now)) = found else { return Ok(None) };
        if let Some(renewed) = self.renew(path, key, cell.version, cell.expires, now)? {
            cell.expires = Some(renewed);
        }
        Ok(Some(cell))
    }

    pub(super) fn pg_has(&self, pg: &PgStore, path: &[u8], key: &[u8]) -> Result<bool> {
        let now = clock_of(&self.core);
        let found = pg
            .block(async |pool, _| cells::has(pool, self.core.id, path, now).await)
            .map_err(|e| self.named(key, e))?;
        let Some((version, expires, now)) = found else {
            return Ok(false);
        };
        self.renew(path, key, version, expires, now)?;
        Ok(true)
    }

    /// Renews an idle key now, as [`RawBucket::renew`] decided.
    pub(super) fn pg_renew(
        &self,
        pg: &PgStore,
        path: &[u8],
        key: &[u8],
        version: i64,
        expires: Option<i64>,
        until: i64,
    ) -> Result<Option<i64>> {
        let done = pg
            .block(async |pool, sent| cells::renew(pool, sent, self.core.id, path, version, expires, until).await)
            .map_err(|e| self.named(key, e))?;
        Ok(done.then_some(until))
    }

    pub(super) fn pg_list(&self, pg: &PgStore, opts: &ListOptions) -> Result<Page<Raw>> {
        let now = clock_of(&self.core);
        super::reads::list_with(&self.core, &self.branch, opts, |after, hi, limit| {
            pg.block(async |pool, _| cells::scan(pool, self.core.id, (after, hi), now, limit, MAX_PAGE_BYTES).await)
        })
    }
}

/// A blocking `take` whose `decode` runs before the delete commits.
pub(crate) fn pg_take<T>(
    pg: &PgStore,
    t: &Target,
    if_version: Option<Version>,
    decode: impl FnOnce(Entry<Raw>) -> Result<T>,
) -> Result<Option<T>> {
    pg.block(async |pool, sent| take(pool, sent, t, if_version, decode).await)
        .map_err(|e| t.name(e))
}

/// The completion form of [`pg_take`].
pub(crate) fn pg_take_then<T: Send + 'static>(
    pg: &PgStore,
    t: Target,
    if_version: Option<Version>,
    decode: impl FnOnce(Entry<Raw>) -> Result<T> + Send + 'static,
    done: impl FnOnce(Result<Option<T>>) + Send + 'static,
) -> Result<Ticket> {
    let t2 = t.clone();
    let f =
        move |pool: Arc<Pool>, sent: Arc<SentFlag>| async move { take(&pool, &sent, &t2, if_version, decode).await };
    pg_then(pg, &t, Held::nothing(), f, done)
}

/// Runs a write's statements on `pg` and answers `done` on the answers
/// thread, holding `held` of the memory budget until then; errors name `t`'s
/// key. The ticket is finished: the statements are sent at once, so a write
/// cannot be cancelled once it is handed over.
pub(crate) fn pg_then<T, F, Fut>(
    pg: &PgStore,
    t: &Target,
    held: Held,
    f: F,
    done: impl FnOnce(Result<T>) + Send + 'static,
) -> Result<Ticket>
where
    T: Send + 'static,
    F: FnOnce(Arc<Pool>, Arc<SentFlag>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T>> + Send + 'static,
{
    let named = t.clone();
    pg.spawn(f, move |r| {
        drop(held);
        done(r.map_err(|e| named.name(e)))
    })
    .map_err(|e| t.name(e))?;
    Ok(Ticket::finished())
}
