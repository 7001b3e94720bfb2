package tinystore

import "tinyshed.org/tinystore/internal/native"

// The kinds of error, the same in every language of TinyStore. Test for one
// with errors.Is(err, tinystore.ErrConflict). A missing key is not an
// error: calls answer found == false.
var (
	// ErrInvalid is bad input: a name, key, value, duration, rate, window
	// or option. Nothing was written.
	ErrInvalid = native.ErrInvalid
	// ErrLimit is a bound reached: a value over 1 MiB, a key path over
	// 1 KiB, a counter past the int64 range.
	ErrLimit = native.ErrLimit
	// ErrConflict is a version check that failed: the key is absent,
	// expired or at another version.
	ErrConflict = native.ErrConflict
	// ErrCorrupt is a row that does not decode as the type asked for (it
	// stays in place), or a damaged file.
	ErrCorrupt = native.ErrCorrupt
	// ErrClosed is a call on a store, or one of its handles, after Close.
	ErrClosed = native.ErrClosed
	// ErrOutcomeUnknown is a write whose group failed to commit: it may or
	// may not be in the file. Read the key before writing it again.
	ErrOutcomeUnknown = native.ErrOutcomeUnknown
	// ErrIO is a failure of the file system or SQLite; nothing of the call
	// was written.
	ErrIO = native.ErrIO
	// ErrCancelled is a call whose context ended before it started; nothing
	// was written. errors.Is also finds the context's own error in it.
	ErrCancelled = native.ErrCancelled
)

// Error is an error of the store: its Kind is one of the Err sentinels.
// An error about one key is a *kv.KeyError wrapping an *Error.
//
// Its fields: Kind, one of ErrInvalid, ErrLimit, ErrConflict, ErrCorrupt,
// ErrClosed, ErrOutcomeUnknown, ErrIO or ErrCancelled; Message, what went
// wrong, without the kind; Bucket, the handle the error is about, if any;
// Cause, the context's error behind ErrCancelled, else nil. Error() gives
// the kind, then the message with the bucket and key it is about, in the
// core's words; errors.Is finds the kind, and the context's error of a
// cancellation.
type Error = native.Error
