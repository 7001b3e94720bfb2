//! An update driven by a binding whose `apply` must run on its own thread
//! (JavaScript's on the JS thread, Python's under the GIL, or on an asyncio
//! loop): [`UpdateSteps`] holds the update between runs of `apply`, checks
//! what `apply` returned, commits it and keeps the retried update and the
//! events, so a binding's loop is `while !commit(apply(entries, now))` and
//! holds no rule of its own.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::group_commit::Ticket;

use super::{Change, Commit, LimitEntry, LimitEvent, LimitStore, LimitUpdate};

/// What `apply` returned for one key, as a binding converts it: the entry
/// to write, or `None` to delete.
pub type Returned = Option<ReturnedEntry>;

/// An entry `apply` returned, its value already turned to JSON text by the
/// binding (the language's own JSON), or the reason it could not be.
#[derive(Clone, Debug, PartialEq)]
pub struct ReturnedEntry {
    /// The value as JSON text, or why the language could not write it as JSON.
    pub json: std::result::Result<String, String>,
    /// When the entry expires, in ms on the store's clock (a whole number
    /// is kept as it is, a fraction rounded down).
    pub expires_at: f64,
}

#[derive(Default)]
struct State {
    /// The update waiting for `apply`'s changes; `None` while its write is
    /// in the writer, and once it is written or given up.
    update: Option<LimitUpdate>,
    /// The keys' entries for `apply`, or after the write the entries written.
    entries: Vec<Option<LimitEntry>>,
    now: i64,
    /// The events to log, kept until the binding takes them.
    events: Vec<LimitEvent>,
}

/// One update in progress, between runs of `apply`. Cheap to clone; every
/// clone is the same update.
#[derive(Clone)]
pub struct UpdateSteps {
    keys: Arc<Vec<String>>,
    state: Arc<Mutex<State>>,
}

impl LimitStore {
    /// Starts an update of `keys` for a binding: reads their live entries
    /// (see [`UpdateSteps::entries`] and [`UpdateSteps::now`]).
    pub fn steps(&self, keys: Vec<String>) -> Result<UpdateSteps> {
        let u = self.begin(&keys)?;
        let state = State {
            entries: u.entries().to_vec(),
            now: u.now(),
            update: Some(u),
            events: Vec::new(),
        };
        Ok(UpdateSteps {
            keys: Arc::new(keys),
            state: Arc::new(Mutex::new(state)),
        })
    }
}

impl UpdateSteps {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The keys, in their order.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The live entries of the keys in their order, for `apply`; once the
    /// update is written, the entries it wrote.
    pub fn entries(&self) -> Vec<Option<LimitEntry>> {
        self.lock().entries.clone()
    }

    /// The store's clock when the entries were read, in ms, for `apply`.
    pub fn now(&self) -> i64 {
        self.lock().now
    }

    /// Gives the update up (`apply` raised): nothing is written, and its
    /// call in flight is freed.
    pub fn give_up(&self) {
        self.lock().update.take();
    }

    /// The events to log since the last call, whether the update was
    /// written or failed.
    pub fn take_events(&self) -> Vec<LimitEvent> {
        std::mem::take(&mut self.lock().events)
    }

    /// Checks what `apply` returned (keys left out are kept), then writes it:
    /// `done` gets `Ok(true)` once written, `Ok(false)` when another update
    /// changed a key meanwhile and `apply` must run again on [`entries`]
    /// (read anew), or the error. A bad change gives the update up, with
    /// nothing written and `done` never called.
    ///
    /// [`entries`]: UpdateSteps::entries
    pub fn commit_then(
        &self,
        returned: Vec<(String, Returned)>,
        done: impl FnOnce(Result<bool>) + Send + 'static,
    ) -> Result<Ticket> {
        let u = self
            .lock()
            .update
            .take()
            .ok_or_else(|| Error::invalid("this update was already committed or given up"))?;
        let changes = changes(&u, &self.keys, returned)?;
        let state = self.state.clone();
        u.commit_then(changes, move |c| {
            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
            let answer = match c {
                Commit::Done(d) => {
                    s.entries = d.entries;
                    s.events.extend(d.events);
                    Ok(true)
                }
                Commit::Retry(next) => {
                    s.entries = next.entries().to_vec();
                    s.now = next.now();
                    s.update = Some(next);
                    Ok(false)
                }
                Commit::Failed(e, events) => {
                    s.events.extend(events);
                    Err(e)
                }
            };
            drop(s);
            done(answer);
        })
    }
}

/// One [`Change`] a key, in the keys' order, from `apply`'s answer by key.
fn changes(u: &LimitUpdate, keys: &[String], returned: Vec<(String, Returned)>) -> Result<Vec<Change>> {
    let name = &u.shared.core.name;
    let mut out = vec![Change::Keep; keys.len()];
    for (key, r) in returned {
        let Some(i) = keys.iter().position(|k| *k == key) else {
            return Err(Error::invalid("apply returned a key that is not one of the keys of the update").at(name, key));
        };
        let Some(e) = r else {
            out[i] = Change::Delete;
            continue;
        };
        let value = e
            .json
            .map_err(|why| crate::codec_fault::CodecFault::JsonEncode(&why).error().at(name, &key))?;
        if !e.expires_at.is_finite() {
            let shown = match e.expires_at {
                at if at.is_nan() => "NaN",
                at if at > 0.0 => "infinity",
                _ => "minus infinity",
            };
            let message = format!("an entry's expiry must be a finite number of ms, not {shown}");
            return Err(Error::invalid(message).at(name, key));
        }
        out[i] = Change::Put(LimitEntry {
            value,
            expires_at: e.expires_at.floor() as i64,
        });
    }
    Ok(out)
}
