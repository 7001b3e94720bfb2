//! The PostgreSQL backend: a store whose rows live in a PostgreSQL database
//! shared by every app server, opened by a location (`postgres://...`).
//!
//! The rules stay above this module, in the handles: a write here is a
//! statement, or a short transaction that locks a key's row, reads the
//! database's clock, lets the core decide ([`cells::Change`]) and applies
//! the decision. `docs/postgres.md` describes the tables, the statements
//! each call sends.
//!
//! The driver is async (tokio-postgres); the store's calls block. A runtime
//! of two threads drives the connections, a blocking call waits on its own
//! thread for its statement, bounded by the deadline, and completion forms
//! (`*_then`) get their answer on one thread of their own, in order, so
//! that a completion may call the store again.

pub(crate) mod cells;
pub(crate) mod clock;
pub(crate) mod copy;
mod errors;
pub(crate) mod held;
pub(crate) mod inspect;
pub(crate) mod kept;
pub(crate) mod limit_rows;
pub(crate) mod limits;
mod location;
pub(crate) mod once;
mod pool;
mod schema;
mod sql;
mod tls;
pub(crate) mod tx;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

pub use location::{DEFAULT_DEADLINE, hide_password, is_postgres};
pub use once::POLL as ONCE_POLL_POSTGRES;

pub(crate) use errors::{Sent, unsupported};

use crate::error::{Error, Result};
pub(crate) use pool::Pool;

/// An answer for a completion, run on the answers thread.
type Answer = Box<dyn FnOnce() + Send>;

/// One open PostgreSQL store.
pub(crate) struct PgStore {
    rt: tokio::runtime::Runtime,
    pool: Arc<Pool>,
    deadline: Duration,
    answers: std::sync::Mutex<Option<mpsc::Sender<Answer>>>,
    closed: AtomicBool,
    /// The runs of once: this store's holder id, session and waiters.
    pub(crate) claims: Arc<once::Claims>,
    /// The bindings' transactions still open, for their bound.
    pub(crate) held: held::Held,
}

impl PgStore {
    /// Connects, creates the tables if they are missing, and refuses a
    /// database written by a newer TinyStore.
    pub(crate) fn open(location: &str) -> Result<PgStore> {
        PgStore::connect(location, true)
    }

    /// Connects to a store's database without creating or changing
    /// anything: a database without a store, or at a newer schema, is
    /// refused. What the inspector opens.
    pub(crate) fn open_existing(location: &str) -> Result<PgStore> {
        PgStore::connect(location, false)
    }

    fn connect(location: &str, create: bool) -> Result<PgStore> {
        let loc = location::parse(location)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            // Two threads read the sockets, so that an answer that came in
            // does not wait for the one thread to be scheduled again on a
            // busy machine (`make bench-postgres` measures point reads).
            .worker_threads(2)
            .thread_name("tinystore-postgres")
            .enable_all()
            .build()?;
        let pool = Arc::new(Pool::new(loc.config, loc.tls, loc.shown));
        let deadline = DEFAULT_DEADLINE;
        {
            let pool = pool.clone();
            let schema = loc.schema.clone();
            let shown = pool.shown.clone();
            // Creating the tables takes a few statements: give it four deadlines.
            rt.block_on(async move {
                let made = async {
                    match create {
                        true => schema::create(&pool, &schema).await,
                        false => schema::check(&pool, &schema).await,
                    }
                };
                match tokio::time::timeout(deadline * 4, made).await {
                    Ok(r) => r,
                    Err(_) => Err(errors::timed_out(&shown, deadline * 4, Sent::No)),
                }
            })?;
        }
        let (tx, rx) = mpsc::channel::<Answer>();
        std::thread::Builder::new()
            .name("tinystore-postgres-answers".into())
            .spawn(move || {
                for answer in rx {
                    answer();
                }
            })?;
        Ok(PgStore {
            rt,
            pool,
            deadline,
            answers: std::sync::Mutex::new(Some(tx)),
            closed: AtomicBool::new(false),
            claims: Arc::new(once::Claims::new()),
            held: held::Held::default(),
        })
    }

    /// Runs one call's statements and waits for them, at most the deadline.
    /// `sent` tells, when the deadline passes, whether a commit had been sent.
    pub(crate) fn block<T>(&self, f: impl AsyncFnOnce(&Pool, &SentFlag) -> Result<T>) -> Result<T> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        let flag = SentFlag::default();
        let pool = &*self.pool;
        let deadline = self.deadline;
        // The statements' futures only wait for answers that the runtime's
        // thread reads off the sockets, so the caller's thread polls them
        // itself, parked in between, and keeps the deadline on its own
        // clock rather than a tokio timer, which a thread outside the
        // runtime registers through the runtime's thread. Not
        // `Runtime::block_on`, which refuses to run inside another runtime:
        // a blocking call from an app's tokio task blocks its thread, as a
        // call on kv.db does.
        let _in = self.rt.enter();
        let until = std::time::Instant::now() + deadline;
        wait_until(f(pool, &flag), until).unwrap_or_else(|| Err(errors::timed_out(&pool.shown, deadline, flag.get())))
    }

    /// Runs one call's statements on the runtime and gives `done` the result
    /// on the answers thread.
    pub(crate) fn spawn<T, F, Fut>(&self, f: F, done: impl FnOnce(Result<T>) + Send + 'static) -> Result<()>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Pool>, Arc<SentFlag>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        let Some(answers) = self.answers.lock().unwrap_or_else(|p| p.into_inner()).clone() else {
            return Err(Error::closed());
        };
        let pool = self.pool.clone();
        let deadline = self.deadline;
        self.rt.spawn(async move {
            let flag = Arc::new(SentFlag::default());
            let shown = pool.shown.clone();
            let r = match tokio::time::timeout(deadline, f(pool, flag.clone())).await {
                Ok(r) => r,
                Err(_) => Err(errors::timed_out(&shown, deadline, flag.get())),
            };
            let _ = answers.send(Box::new(move || done(r)));
        });
        Ok(())
    }

    /// The connections, for a transaction that holds one across calls.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Stops taking calls and closes the connections no call holds. Calls
    /// in flight finish on the runtime until it is dropped with the store.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.answers.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.claims.close();
        self.pool.drop_connections();
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        self.close();
        // The runtime may be dropped from a completion's thread; never wait
        // there for its tasks.
        let rt = std::mem::replace(
            &mut self.rt,
            tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("an empty runtime"),
        );
        rt.shutdown_background();
    }
}

/// Polls `f` on this thread until it is ready, parking the thread until
/// its waker is called; `None` once `until` passed first (`f` is dropped,
/// which gives up its statements).
fn wait_until<F: Future>(f: F, until: std::time::Instant) -> Option<F::Output> {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return Some(out);
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return None;
        }
        std::thread::park_timeout(left);
    }
}

/// Whether a call had sent its commit, for the answer when the deadline
/// passes before the database answered.
#[derive(Default)]
pub(crate) struct SentFlag(AtomicBool);

impl SentFlag {
    pub(crate) fn commit_sent(&self) {
        self.0.store(true, Ordering::Release);
    }

    fn get(&self) -> Sent {
        if self.0.load(Ordering::Acquire) {
            Sent::Commit
        } else {
            Sent::No
        }
    }
}
