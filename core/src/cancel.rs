//! Giving up on a call from outside it: a timeout, a client that went
//! away, an `AbortSignal`. The one place that says what a caller may give
//! up on and when, for every binding:
//!
//! - a write whose group has not started is never run, and is answered
//!   `Cancelled` at once, even while a transaction or another group holds
//!   the writer; a write whose group started finishes with it and is
//!   answered as it ended (written, or failed);
//! - a transaction waiting for the writer's turn is a write of its own: it
//!   is given up the same way, and once its turn came its function runs;
//!   [`BindingTx::commit_unless`](crate::BindingTx::commit_unless) rolls
//!   it back, writing nothing, when the caller gave up before the commit;
//! - a run of `once` waiting for another run of its key stops waiting and
//!   runs nothing ([`crate::waiter_gave_up`]); a claim that comes after is
//!   let go at once.
//!
//! A binding makes a [`Cancel`] per call, submits the call inside
//! [`cancellable`], and fires the cancel from wherever the caller gives up.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use crate::error::{Error, ErrorKind, Result};

/// A caller's way to give up on a call: fired once, from any thread.
#[derive(Default)]
pub struct Cancel {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    fired: bool,
    on_fire: Vec<Box<dyn FnOnce() + Send>>,
}

impl Cancel {
    /// A cancel not fired, to share between the call and whoever gives up.
    pub fn new() -> Arc<Cancel> {
        Arc::new(Cancel::default())
    }

    /// Gives up on the calls submitted under this cancel (see the module).
    /// Firing again does nothing.
    pub fn fire(&self) {
        let todo = {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            s.fired = true;
            std::mem::take(&mut s.on_fire)
        };
        // Outside the lock: what they answer may fire or read this cancel.
        for f in todo {
            f();
        }
    }

    /// Whether it has fired.
    pub fn fired(&self) -> bool {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).fired
    }

    /// Runs `f` when the cancel fires, or now if it has fired.
    pub fn on_fire(&self, f: impl FnOnce() + Send + 'static) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.fired {
            drop(s);
            f();
        } else {
            s.on_fire.push(Box::new(f));
        }
    }
}

thread_local! {
    /// The cancel of the call [`cancellable`] is submitting on this thread.
    static CURRENT: RefCell<Option<Arc<Cancel>>> = const { RefCell::new(None) };
}

/// Runs `submit`, which hands one call to the engine (a write's completion
/// form, a transaction's `transaction_then`, a run's `begin`), so that
/// `cancel` gives up on it as the module says. A cancel fired already
/// submits nothing: the answer is [`cancelled_before_start`].
pub fn cancellable<R>(cancel: &Arc<Cancel>, submit: impl FnOnce() -> Result<R>) -> Result<R> {
    if cancel.fired() {
        return Err(cancelled_before_start());
    }
    /// Puts back the outer cancel however `submit` ends, a panic too.
    struct Restore(Option<Arc<Cancel>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = outer);
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(cancel.clone())));
    submit()
}

/// The cancel of the call being submitted on this thread, if any.
pub(crate) fn current() -> Option<Arc<Cancel>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// The answer of a call given up before it was handed to the engine.
pub fn cancelled_before_start() -> Error {
    Error::new(
        ErrorKind::Cancelled,
        "the caller gave up before the call started; nothing was written",
    )
}

/// The answer of a transaction given up after its function ran.
pub(crate) fn cancelled_before_commit() -> Error {
    Error::new(
        ErrorKind::Cancelled,
        "the caller gave up before the transaction committed; nothing was written",
    )
}
