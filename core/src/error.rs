//! The one table of error kinds, shared by every language.
//!
//! Each binding maps [`ErrorKind`] to its own idiom (a Python subclass, a
//! TypeScript class with a `code`, a Go sentinel), so a kind added here is a
//! kind added everywhere. A missing key is never an error.

use std::fmt;

/// What went wrong, in the words every language uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Bad input: a name, key, value, duration, rate, option or type. Nothing was written.
    Invalid,
    /// A bound was reached: a value over 1 MiB, a counter past int64, a full memory bound.
    Limit,
    /// A version check failed: the key is absent, expired or at another version.
    Conflict,
    /// A row does not decode as the type asked for, or the file is damaged.
    Corrupt,
    /// The store, or a transaction's handle, is closed.
    Closed,
    /// The commit of a group failed: the write may or may not be in the file.
    /// Read the key before writing it again.
    OutcomeUnknown,
    /// The file system or SQLite failed; nothing of this call was written.
    Io,
    /// The caller gave up before its write started; nothing was written.
    Cancelled,
}

impl ErrorKind {
    /// The stable code of this kind, as bindings spell it (`"INVALID"`, ...).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "INVALID",
            ErrorKind::Limit => "LIMIT",
            ErrorKind::Conflict => "CONFLICT",
            ErrorKind::Corrupt => "CORRUPT",
            ErrorKind::Closed => "CLOSED",
            ErrorKind::OutcomeUnknown => "OUTCOME_UNKNOWN",
            ErrorKind::Io => "IO",
            ErrorKind::Cancelled => "CANCELLED",
        }
    }

    /// Every kind, in the order of the table (bindings test that they map each one).
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::Invalid,
        ErrorKind::Limit,
        ErrorKind::Conflict,
        ErrorKind::Corrupt,
        ErrorKind::Closed,
        ErrorKind::OutcomeUnknown,
        ErrorKind::Io,
        ErrorKind::Cancelled,
    ];

    fn word(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "invalid",
            ErrorKind::Limit => "limit",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Closed => "closed",
            ErrorKind::OutcomeUnknown => "outcome unknown",
            ErrorKind::Io => "i/o",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

/// An error of TinyStore: a kind, a message, and, when one key caused it,
/// the bucket and the path of owners and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    bucket: Option<String>,
    path: Option<String>,
}

/// The result of every fallible call of TinyStore.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` with a message that says what was wrong.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            bucket: None,
            path: None,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Invalid, message)
    }

    pub(crate) fn limit(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Limit, message)
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Corrupt, message)
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Conflict, message)
    }

    /// A call on a store that is closed (or closed while it waited): one
    /// text for every language.
    pub fn closed() -> Error {
        Error::new(ErrorKind::Closed, "the store is closed")
    }

    /// A call still waiting for its answer (a write, a transaction, a run
    /// of once's answer) when the store closed: one text for every
    /// language.
    pub fn unanswered() -> Error {
        Error::new(ErrorKind::Closed, "the store closed before the call was answered")
    }

    /// Names the bucket and the path of owners and key this error is about.
    pub fn at(mut self, bucket: &str, path: impl Into<String>) -> Error {
        self.bucket = Some(bucket.to_owned());
        self.path = Some(path.into());
        self
    }

    /// Names what a binding says this error is about: a bucket and a path
    /// ([`Error::at`]), a bucket alone ([`Error::in_bucket`]), or nothing (a
    /// path without its bucket names nothing).
    pub fn about(self, bucket: Option<&str>, path: Option<&str>) -> Error {
        match (bucket, path) {
            (Some(b), Some(p)) => self.at(b, p),
            (Some(b), None) => self.in_bucket(b),
            _ => self,
        }
    }

    /// Names the bucket this error is about, when no single key is.
    pub fn in_bucket(mut self, bucket: &str) -> Error {
        if self.bucket.is_none() {
            self.bucket = Some(bucket.to_owned());
        }
        self
    }

    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without the bucket and path.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message with what it is about, as every language shows it after
    /// its kind: `the key is absent (bucket codes, key 7/c)`. Bindings show
    /// this text and never append the bucket or key themselves.
    pub fn text(&self) -> String {
        match (&self.bucket, &self.path) {
            (Some(b), Some(p)) => format!("{} (bucket {b}, key {p})", self.message),
            (Some(b), None) => format!("{} (bucket {b})", self.message),
            _ => self.message.clone(),
        }
    }

    /// The kind's word that starts the error's text (`invalid`, `outcome unknown`).
    pub fn word(&self) -> &'static str {
        self.kind.word()
    }

    /// The bucket (or limit, quota, once, counters name) the error is about.
    pub fn bucket(&self) -> Option<&str> {
        self.bucket.as_deref()
    }

    /// The path of owners and key, as `owner/owner/key`.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// Turns a sure error into `OutcomeUnknown`: used when a group's commit fails
    /// after this write had succeeded inside it.
    pub(crate) fn outcome_unknown(cause: &Error) -> Error {
        Error::new(
            ErrorKind::OutcomeUnknown,
            format!(
                "the commit failed ({}); the write may or may not be in the file: read the key before writing again",
                cause.message
            ),
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.word(), self.text())
    }
}

impl std::error::Error for Error {}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        use rusqlite::ErrorCode as C;
        let kind = match e.sqlite_error_code() {
            Some(C::DatabaseCorrupt) | Some(C::NotADatabase) => ErrorKind::Corrupt,
            _ => ErrorKind::Io,
        };
        Error::new(kind, format!("sqlite: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::new(ErrorKind::Io, e.to_string())
    }
}

// The refusals that stand in for a wait on oneself. Written here, beside
// the kinds, so that the writer, the guards and every binding give one text.

/// What a write made from inside a transaction, through a handle outside
/// it, would do: wait for the writer the transaction holds, which the
/// transaction may be waiting for in turn. Every language refuses it at
/// once with this error (KV-16).
pub fn inside_tx_error() -> Error {
    Error::invalid(
        "this write, made inside a transaction through a handle outside it, would wait for the transaction: \
         write through the transaction (tx.with), or after it",
    )
}

/// A transaction opened inside a transaction of the same store: it would
/// wait for the writer the outer one holds (KV-16).
pub fn nested_tx_error() -> Error {
    Error::invalid("a transaction inside a transaction of the same store would wait for itself: use the open one")
}

/// A run of a key of once inside its own run: it would wait for its own
/// claim (KV-11).
pub fn rerun_error() -> Error {
    Error::invalid("a run of this key inside its own run would wait for itself")
}
