//! Views held past their bound (KV-16). A binding's view ([`crate::Snapshot`])
//! holds a read transaction, which keeps the file from checkpointing past
//! it. Its bound, [`crate::VIEW_LIMIT`] on the store's clock, is checked at
//! each read, and also here, without a read: maintenance (every second in an
//! ordinary store's background, and each [`crate::Store::maintain`]) ends
//! every view past its bound, giving its connection back to the store, so a
//! view left idle cannot hold back checkpoints. The view's next read answers
//! the same `Limit` as a read past the bound always does.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rusqlite::Connection;

use crate::error::Error;
use crate::readers::Readers;
use crate::storage;

/// The longest a view holds its snapshot (KV-16): a read after it is
/// `Limit`, and the snapshot has ended. The file keeps every page a
/// snapshot may still read, so a forgotten one must not hold them for good.
pub const VIEW_LIMIT: Duration = Duration::from_secs(5);

/// The refusal of a read of a view held past [`VIEW_LIMIT`].
pub(crate) fn view_expired() -> Error {
    Error::limit(format!(
        "the view was open longer than {VIEW_LIMIT:?}, so its snapshot has ended; read in a new view"
    ))
}

/// Whether a view opened at `opened` (ms on the store's clock) is past
/// [`VIEW_LIMIT`] at `now`.
pub(crate) fn view_past_limit(opened: i64, now: i64) -> bool {
    now.saturating_sub(opened) > VIEW_LIMIT.as_millis() as i64
}

/// The read transaction of one view, while it holds one.
pub(crate) struct ViewConn {
    conn: Mutex<Option<Connection>>,
    /// When the view opened, in ms on the store's clock.
    pub(crate) opened: i64,
}

impl ViewConn {
    /// The connection, while the view holds it.
    pub(crate) fn conn(&self) -> std::sync::MutexGuard<'_, Option<Connection>> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends the read transaction and gives the connection back to `readers`;
    /// nothing happens to a view that has ended.
    pub(crate) fn end(&self, readers: &Readers) {
        if let Some(c) = self.conn().take() {
            let _ = storage::run_tx_statement(&c, storage::sql::COMMIT);
            readers.give_back(c);
        }
    }
}

/// The views of one store that may still hold a read transaction.
#[derive(Default)]
pub(crate) struct OpenViews(Mutex<Vec<Weak<ViewConn>>>);

impl OpenViews {
    /// Keeps track of a view that opened at `opened` on `conn`.
    pub(crate) fn add(&self, conn: Connection, opened: i64) -> Arc<ViewConn> {
        let view = Arc::new(ViewConn {
            conn: Mutex::new(Some(conn)),
            opened,
        });
        let mut views = self.0.lock().unwrap_or_else(|p| p.into_inner());
        views.retain(|v| v.strong_count() > 0);
        views.push(Arc::downgrade(&view));
        view
    }

    /// Ends every view past its bound at `now`; says how many it ended.
    pub(crate) fn end_past_bound(&self, readers: &Readers, now: i64) -> usize {
        let past: Vec<Arc<ViewConn>> = {
            let mut views = self.0.lock().unwrap_or_else(|p| p.into_inner());
            views.retain(|v| v.strong_count() > 0);
            views
                .iter()
                .filter_map(Weak::upgrade)
                .filter(|v| view_past_limit(v.opened, now))
                .collect()
        };
        let mut ended = 0;
        for v in past {
            if v.conn().is_some() {
                v.end(readers);
                ended += 1;
            }
        }
        ended
    }
}
