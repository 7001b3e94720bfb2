//! Passing an `AbortSignal` through: the package makes a [`NativeCancel`]
//! for a call given a signal, arms it just before the call, and fires it
//! when the signal aborts. What a fired cancel gives up on, and when, is
//! the core's (`tinystore::Cancel`); this only hands it the call.
//!
//! Why armed rather than an argument of every write: the writes of every
//! handle reach the engine through one function ([`crate::completions::write`]),
//! which takes the armed cancel, so no call's signature changes.
//!
//! Invariant: the package disarms ([`disarm_cancel`]) right after the call,
//! however it ended, so an armed cancel never reaches a later call.

use std::cell::RefCell;
use std::sync::Arc;

use napi_derive::napi;

thread_local! {
    /// The cancel of the next write this thread makes, if any.
    static ARMED: RefCell<Option<Arc<tinystore::Cancel>>> = const { RefCell::new(None) };
}

/// One call's cancel: `fire` gives up on the call it was armed for.
#[napi]
pub struct NativeCancel {
    cancel: Arc<tinystore::Cancel>,
}

#[napi]
impl NativeCancel {
    /// A cancel not fired.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)] // napi's constructor
    pub fn new() -> NativeCancel {
        NativeCancel {
            cancel: tinystore::Cancel::new(),
        }
    }

    /// Makes this the cancel of the next write made on this thread.
    #[napi]
    pub fn arm(&self) {
        ARMED.with(|a| *a.borrow_mut() = Some(self.cancel.clone()));
    }

    /// Gives up on the call, as the engine allows.
    #[napi]
    pub fn fire(&self) {
        self.cancel.fire();
    }
}

impl NativeCancel {
    /// The engine's cancel, for a call given it explicitly (a commit).
    pub(crate) fn cancel(&self) -> &tinystore::Cancel {
        &self.cancel
    }
}

/// Clears the armed cancel, if the call did not take it.
#[napi]
pub fn disarm_cancel() {
    ARMED.with(|a| a.borrow_mut().take());
}

/// Takes the armed cancel: the write being made is the one it is for.
pub(crate) fn take_armed() -> Option<Arc<tinystore::Cancel>> {
    ARMED.with(|a| a.borrow_mut().take())
}
