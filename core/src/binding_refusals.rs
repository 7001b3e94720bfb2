//! The refusals a binding or package may find before its call reaches the
//! core (a handle of a scope that ended, a store closed, a function
//! missing), each one error with one text in every language. A package
//! names one by a word, as it names a codec's fault, so that no language
//! words it again.

use crate::cancel::cancelled_before_start;
use crate::error::{Error, ErrorKind};

/// A refusal a binding names by a word (see [`Refusal::named`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal<'a> {
    /// A call on a transaction, or a handle of it, after it ended.
    TxEnded,
    /// A read of a view (a snapshot), or a handle of it, after it ended.
    ViewEnded,
    /// A call on a store that is closed.
    StoreClosed,
    /// A call given up (its context, task or signal) before it started.
    CancelledBeforeStart,
    /// A call that runs a function (`run`, `tx`, `view`, a limit store's
    /// `update`), given this instead.
    NeedsFunction(&'a str, &'a str),
    /// A limit store's call, or what its `apply` returned, of a type the
    /// store does not take: what it must be, and what it was given.
    LimitStoreTakes(&'static str, &'a str),
}

impl<'a> Refusal<'a> {
    /// The refusal a binding names by a word (`tx_ended`, `view_ended`,
    /// `store_closed`, `cancelled_before_start`, and
    /// `run_needs_function`, `tx_needs_function`, `view_needs_function`,
    /// `update_needs_function`, and a limit store's `limit_store`,
    /// `limit_keys`, `limit_key`, `limit_changes`, `limit_changed_key`,
    /// `limit_entry`, `limit_expiry`, with what it was given as `detail`).
    pub fn named(word: &str, detail: &'a str) -> Option<Refusal<'a>> {
        Some(match word {
            "tx_ended" => Refusal::TxEnded,
            "view_ended" => Refusal::ViewEnded,
            "store_closed" => Refusal::StoreClosed,
            "cancelled_before_start" => Refusal::CancelledBeforeStart,
            "run_needs_function" => Refusal::NeedsFunction("a run", detail),
            "tx_needs_function" => Refusal::NeedsFunction("a transaction", detail),
            "view_needs_function" => Refusal::NeedsFunction("a view", detail),
            "update_needs_function" => Refusal::NeedsFunction("an update", detail),
            "limit_store" => Refusal::LimitStoreTakes("a limit store opens over an open store", detail),
            "limit_keys" => Refusal::LimitStoreTakes("a limit store's keys are a list of strings", detail),
            "limit_key" => Refusal::LimitStoreTakes("a limit store key is a string", detail),
            "limit_changes" => Refusal::LimitStoreTakes(
                "apply returns a map of key to entry (none to delete it), or nothing",
                detail,
            ),
            "limit_changed_key" => Refusal::LimitStoreTakes("a key apply returns is a string", detail),
            "limit_entry" => {
                Refusal::LimitStoreTakes("an entry is a value and its expiry, or none to delete the key", detail)
            }
            "limit_expiry" => Refusal::LimitStoreTakes("an entry's expiry is a number of ms", detail),
            _ => return None,
        })
    }

    /// The error: `Closed` for a scope or store that ended, `Cancelled`
    /// for a call given up, `Invalid` for a missing function.
    pub fn error(self) -> Error {
        match self {
            Refusal::TxEnded => scope_ended("transaction"),
            Refusal::ViewEnded => scope_ended("view"),
            Refusal::StoreClosed => Error::closed(),
            Refusal::CancelledBeforeStart => cancelled_before_start(),
            Refusal::NeedsFunction(call, got) => Error::new(
                ErrorKind::Invalid,
                format!("{call} needs a function to call, not {got}"),
            ),
            Refusal::LimitStoreTakes(takes, got) => Error::invalid(format!("{takes}, not {got}")),
        }
    }
}

fn scope_ended(kind: &str) -> Error {
    Error::new(
        ErrorKind::Closed,
        format!("the {kind} has ended: use its handles inside its function"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_names_its_refusal() {
        for (word, kind, text) in [
            (
                "tx_ended",
                ErrorKind::Closed,
                "the transaction has ended: use its handles inside its function",
            ),
            (
                "view_ended",
                ErrorKind::Closed,
                "the view has ended: use its handles inside its function",
            ),
            ("store_closed", ErrorKind::Closed, "the store is closed"),
            (
                "cancelled_before_start",
                ErrorKind::Cancelled,
                "the caller gave up before the call started; nothing was written",
            ),
            (
                "tx_needs_function",
                ErrorKind::Invalid,
                "a transaction needs a function to call, not nil",
            ),
        ] {
            let e = Refusal::named(word, "nil").expect(word).error();
            assert_eq!((e.kind(), e.message()), (kind, text), "{word}");
        }
        let e = Refusal::named("limit_expiry", "str '1'").expect("limit_expiry").error();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::Invalid, "an entry's expiry is a number of ms, not str '1'")
        );
        assert_eq!(Refusal::named("no such word", ""), None);
    }

    #[test]
    fn a_call_waiting_when_the_store_closed_says_so() {
        let e = Error::unanswered();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::Closed, "the store closed before the call was answered")
        );
    }
}
