//! Connections to PostgreSQL: a few shared ones that pipeline the single
//! statements of every caller (tokio-postgres sends a statement as soon as
//! it is asked and matches answers in order, so many writes in flight share
//! one connection and PostgreSQL groups their commits), and a few held by
//! one transaction at a time. A connection that fails is dropped and a new
//! one is made at the next call: the store reconnects by itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Mutex as AsyncMutex, Semaphore};
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Socket, Statement};

use super::errors::{self, Sent};
use super::sql;
use super::tls::Tls;
use crate::error::Result;

/// The statements every connection prepares when it opens, by their use.
pub(crate) struct Statements {
    pub name_find: Statement,
    pub name_insert: Statement,
    pub name_list: Statement,
    pub get: Statement,
    pub has: Statement,
    pub set: Statement,
    pub lock: Statement,
    pub now: Statement,
    pub insert: Statement,
    pub update: Statement,
    pub delete: Statement,
    pub set_expires: Statement,
    pub take: Statement,
    pub renew: Statement,
    pub scan: Statement,
    pub subtree_delete: Statement,
    pub sweep: Statement,
    pub try_lock: Statement,
    pub unlock: Statement,
    pub begin: Statement,
    pub commit: Statement,
    pub rollback: Statement,
    pub limits: super::limits::Statements,
}

/// One connection with its statements.
pub(crate) struct Conn {
    pub client: Client,
    pub st: Statements,
    /// The limit store's, prepared at their first use on this connection.
    pub limit_st: tokio::sync::OnceCell<super::limit_rows::Statements>,
}

/// The shared connections. One connection commits its statements one after
/// another, each waiting for its WAL flush; PostgreSQL groups the flushes of
/// commits that wait at once on different connections, so writes in flight
/// are spread over several (six reached 0.4 of the sets/s of sixteen at 64
/// threads: docs/measurements.md).
const SHARED: usize = 16;
/// The most connections held by transactions at once.
const EXCLUSIVE: usize = 8;

pub(crate) struct Pool {
    config: tokio_postgres::Config,
    tls: Tls,
    pub(crate) shown: String,
    shared: Vec<AsyncMutex<Option<Arc<Conn>>>>,
    next: AtomicUsize,
    idle: std::sync::Mutex<Vec<Conn>>,
    exclusive: Arc<Semaphore>,
}

impl Pool {
    pub(crate) fn new(config: tokio_postgres::Config, tls: Tls, shown: String) -> Pool {
        Pool {
            config,
            tls,
            shown,
            shared: (0..SHARED).map(|_| AsyncMutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            idle: std::sync::Mutex::new(Vec::new()),
            exclusive: Arc::new(Semaphore::new(EXCLUSIVE)),
        }
    }

    /// Opens a connection with no statements prepared.
    pub(crate) async fn connect_raw(&self) -> Result<Client> {
        self.connect_hearing(|_| {}).await
    }

    /// Opens a connection with no statements prepared that hands what the
    /// server sends by itself (notifications) to `heard`.
    pub(crate) async fn connect_hearing(
        &self,
        heard: impl FnMut(tokio_postgres::AsyncMessage) + Send + 'static,
    ) -> Result<Client> {
        match &self.tls {
            Tls::Off => open_with(&self.config, tokio_postgres::NoTls, &self.shown, heard).await,
            Tls::On(tls) => open_with(&self.config, tls.clone(), &self.shown, heard).await,
        }
    }

    /// Opens a connection and prepares its statements, pipelined.
    pub(crate) async fn connect(&self) -> Result<Conn> {
        let client = self.connect_raw().await?;
        let st = prepare(&client)
            .await
            .map_err(|e| errors::failed(&self.shown, &e, Sent::No))?;
        Ok(Conn {
            client,
            st,
            limit_st: tokio::sync::OnceCell::new(),
        })
    }

    /// A shared connection, opening it if it is missing or closed.
    pub(crate) async fn shared(&self) -> Result<Arc<Conn>> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.shared.len();
        let mut slot = self.shared[i].lock().await;
        if let Some(c) = slot.as_ref()
            && !c.client.is_closed()
        {
            return Ok(c.clone());
        }
        *slot = None;
        let c = Arc::new(self.connect().await?);
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Forgets a shared connection that failed or stalled, so the next call
    /// opens a new one instead of queueing behind it.
    pub(crate) async fn drop_shared(&self, failed: &Arc<Conn>) {
        for s in &self.shared {
            let mut slot = s.lock().await;
            if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, failed)) {
                *slot = None;
            }
        }
    }

    /// Drops every connection no call holds now, so that a closed store
    /// keeps none open on the server while handles of it live on (a
    /// language's handles are freed when its garbage collector runs). A
    /// connection a call holds goes when the call ends.
    pub(crate) fn drop_connections(&self) {
        for slot in &self.shared {
            if let Ok(mut slot) = slot.try_lock() {
                slot.take();
            }
        }
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// A connection for one transaction, waiting for a turn when
    /// [`EXCLUSIVE`] are held.
    pub(crate) async fn exclusive(&self) -> Result<Held<'_>> {
        let permit = self.exclusive.acquire().await.expect("the semaphore is never closed");
        let kept = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match kept {
            Some(c) if !c.client.is_closed() => c,
            _ => self.connect().await?,
        };
        Ok(Held {
            pool: self,
            conn: Some(conn),
            _permit: permit,
        })
    }
}

/// A connection held by a caller's transaction (`tx`, a view) across
/// calls: the [`Held`] of a transaction that outlives one call.
pub(crate) struct Owned {
    pub(crate) conn: Conn,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Pool {
    /// [`Pool::exclusive`], held by the caller until it gives it back with
    /// [`Pool::give_back`] or drops it.
    pub(crate) async fn exclusive_owned(&self) -> Result<Owned> {
        let permit = self
            .exclusive
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let kept = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match kept {
            Some(c) if !c.client.is_closed() => c,
            _ => self.connect().await?,
        };
        Ok(Owned { conn, _permit: permit })
    }

    /// Takes back a connection whose transaction ended cleanly.
    pub(crate) fn give_back(&self, owned: Owned) {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(owned.conn);
    }
}

/// A connection held by one transaction. Given back by [`Held::release`]
/// once the transaction ended cleanly; dropped otherwise, since it may be
/// inside a transaction still.
pub(crate) struct Held<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
    _permit: tokio::sync::SemaphorePermit<'p>,
}

impl Held<'_> {
    pub(crate) fn conn(&self) -> &Conn {
        self.conn.as_ref().expect("held until released")
    }

    pub(crate) fn release(mut self) {
        if let Some(c) = self.conn.take() {
            self.pool.idle.lock().unwrap_or_else(|p| p.into_inner()).push(c);
        }
    }
}

async fn prepare(c: &Client) -> std::result::Result<Statements, tokio_postgres::Error> {
    use futures_util::future::try_join_all;
    let texts = [
        sql::NAME_FIND,
        sql::NAME_INSERT,
        sql::NAME_LIST,
        sql::CELL_GET,
        sql::CELL_HAS,
        sql::CELL_SET,
        sql::CELL_LOCK,
        sql::NOW,
        sql::CELL_INSERT,
        sql::CELL_UPDATE,
        sql::CELL_DELETE,
        sql::CELL_SET_EXPIRES,
        sql::CELL_TAKE,
        sql::CELL_RENEW,
        sql::CELL_SCAN,
        sql::SUBTREE_DELETE,
        sql::SWEEP_EXPIRED,
        sql::SWEEP_TRY_LOCK,
        sql::SWEEP_UNLOCK,
        sql::BEGIN,
        sql::COMMIT,
        sql::ROLLBACK,
    ];
    let (st, limits) = futures_util::try_join!(
        try_join_all(texts.iter().map(|t| c.prepare(t))),
        super::limits::prepare(c)
    )?;
    let mut st = st.into_iter();
    let mut next = || st.next().expect("one statement per text");
    Ok(Statements {
        name_find: next(),
        name_insert: next(),
        name_list: next(),
        get: next(),
        has: next(),
        set: next(),
        lock: next(),
        now: next(),
        insert: next(),
        update: next(),
        delete: next(),
        set_expires: next(),
        take: next(),
        renew: next(),
        scan: next(),
        subtree_delete: next(),
        sweep: next(),
        try_lock: next(),
        unlock: next(),
        begin: next(),
        commit: next(),
        rollback: next(),
        limits,
    })
}

/// Connects through `tls` and drives the connection on the runtime.
async fn open_with<T>(
    config: &tokio_postgres::Config,
    tls: T,
    shown: &str,
    mut heard: impl FnMut(tokio_postgres::AsyncMessage) + Send + 'static,
) -> Result<Client>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
{
    let (client, mut connection) = config.connect(tls).await.map_err(|e| errors::unreachable(shown, &e))?;
    tokio::spawn(async move {
        // Ends when the client is dropped or the server goes away; the next
        // call then finds the client closed and reconnects.
        let mut messages = std::pin::pin!(futures_util::stream::poll_fn(move |cx| connection.poll_message(cx)));
        while let Some(Ok(m)) = futures_util::StreamExt::next(&mut messages).await {
            heard(m);
        }
    });
    Ok(client)
}
