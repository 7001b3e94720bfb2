//! What a failure of the database means for the caller, in the store's
//! error kinds: a statement the server refused wrote nothing (`Io`, or
//! `Corrupt` for a row the store cannot read); a write whose statement or
//! `COMMIT` was sent and never answered may be in the database
//! (`OutcomeUnknown`), never a success; a database that cannot be reached
//! or does not answer within the deadline is `Io`, saying so.

use std::time::Duration;

use crate::error::{Error, ErrorKind};

/// Whether a write had been sent when it failed: a statement that commits
/// by itself, or the `COMMIT` of a transaction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Sent {
    /// Nothing that commits was sent: nothing was written.
    No,
    /// A commit was sent: it may or may not have happened.
    Commit,
}

/// The database refused the connection or could not be reached.
pub(crate) fn unreachable(shown: &str, e: &tokio_postgres::Error) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("PostgreSQL at {shown} cannot be reached: {}", detail(e)),
    )
}

/// A statement failed.
pub(crate) fn failed(shown: &str, e: &tokio_postgres::Error, sent: Sent) -> Error {
    if let Some(db) = e.as_db_error() {
        use tokio_postgres::error::SqlState;
        if *db.code() == SqlState::T_R_SERIALIZATION_FAILURE || *db.code() == SqlState::T_R_DEADLOCK_DETECTED {
            return Error::conflict(format!(
                "a transaction on another connection to PostgreSQL at {shown} changed what this one read or \
                 wrote ({}); nothing of this transaction was written: run it again",
                db.code().code()
            ));
        }
        // The server answered: the statement (or its transaction) did not
        // commit. That holds for COMMIT too: a COMMIT the server refuses
        // rolls back.
        return Error::new(
            ErrorKind::Io,
            format!(
                "PostgreSQL at {shown} refused a statement: {} ({})",
                db.message(),
                db.code().code()
            ),
        );
    }
    match sent {
        Sent::No => Error::new(
            ErrorKind::Io,
            format!(
                "the connection to PostgreSQL at {shown} failed ({}); nothing of this call was written",
                detail(e)
            ),
        ),
        Sent::Commit => outcome_unknown(shown, &detail(e)),
    }
}

/// A write whose commit was sent and not answered.
pub(crate) fn outcome_unknown(shown: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::OutcomeUnknown,
        format!(
            "the connection to PostgreSQL at {shown} failed after the write was sent ({why}); the write may or \
             may not be in the database: read the key before writing again"
        ),
    )
}

/// No answer within the deadline.
pub(crate) fn timed_out(shown: &str, deadline: Duration, sent: Sent) -> Error {
    let waited = format!("no answer within {} ms", deadline.as_millis());
    match sent {
        Sent::No => Error::new(
            ErrorKind::Io,
            format!("PostgreSQL at {shown} gave {waited}: it is down, paused or overloaded; nothing was written"),
        ),
        Sent::Commit => outcome_unknown(shown, &waited),
    }
}

fn detail(e: &tokio_postgres::Error) -> String {
    use std::error::Error as _;
    match e.source() {
        Some(s) => format!("{e}: {s}"),
        None => e.to_string(),
    }
}

/// What a PostgreSQL store does not do yet, by operation.
pub(crate) fn unsupported(what: &str) -> Error {
    Error::invalid(format!(
        "{what} is not supported on PostgreSQL yet (docs/postgres.md lists what is): use a store in a directory"
    ))
}
