package tinystore

import (
	"errors"

	"tinyshed.org/tinystore/internal/native"
)

// The kinds of error, the same in every language of TinyStore. Test for one
// with errors.Is(err, tinystore.ErrConflict). A missing key is not an
// error: calls answer found == false.
var (
	// ErrInvalid is bad input: a name, key, value, duration, rate, window
	// or option. Nothing was written.
	ErrInvalid = errors.New("tinystore: invalid")
	// ErrLimit is a bound reached: a value over 1 MiB, a key path over
	// 1 KiB, a counter past the int64 range.
	ErrLimit = errors.New("tinystore: limit")
	// ErrConflict is a version check that failed: the key is absent,
	// expired or at another version.
	ErrConflict = errors.New("tinystore: conflict")
	// ErrCorrupt is a row that does not decode as the type asked for (it
	// stays in place), or a damaged file.
	ErrCorrupt = errors.New("tinystore: corrupt")
	// ErrClosed is a call on a store, or one of its handles, after Close.
	ErrClosed = errors.New("tinystore: closed")
	// ErrOutcomeUnknown is a write whose group failed to commit: it may or
	// may not be in the file. Read the key before writing it again.
	ErrOutcomeUnknown = errors.New("tinystore: outcome unknown")
	// ErrIO is a failure of the file system or SQLite; nothing of the call
	// was written.
	ErrIO = errors.New("tinystore: i/o")
	// ErrCancelled is a call whose context ended before it started; nothing
	// was written. errors.Is also finds the context's own error in it.
	ErrCancelled = errors.New("tinystore: cancelled")
)

// Error is an error of the store: its Kind is one of the Err sentinels.
// An error about one key is a *kv.KeyError wrapping an *Error.
type Error struct {
	// Kind is ErrInvalid, ErrLimit, ErrConflict, ErrCorrupt, ErrClosed,
	// ErrOutcomeUnknown, ErrIO or ErrCancelled.
	Kind error
	// Message says what went wrong, without the kind.
	Message string
	// Bucket is the handle the error is about, if any.
	Bucket string
	// Cause is the context's error behind ErrCancelled, else nil.
	Cause error
	// text is the message with the bucket and key it is about, as the core
	// renders every error; an Error made by hand shows its Message.
	text string
}

// Error gives the kind, then the message with the bucket and key it is
// about, in the core's words.
func (e *Error) Error() string {
	if e.text == "" {
		return e.Kind.Error() + ": " + e.Message
	}
	return e.Kind.Error() + ": " + e.text
}

// Unwrap gives the kind and, for a cancellation, the context's error, so
// errors.Is(err, context.Canceled) holds as well.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

var kinds = map[int]error{
	native.CodeInvalid:        ErrInvalid,
	native.CodeLimit:          ErrLimit,
	native.CodeConflict:       ErrConflict,
	native.CodeCorrupt:        ErrCorrupt,
	native.CodeClosed:         ErrClosed,
	native.CodeOutcomeUnknown: ErrOutcomeUnknown,
	native.CodeIO:             ErrIO,
	native.CodeCancelled:      ErrCancelled,
}

func init() {
	native.NewError = func(code int, message, bucket, text string, cause error) error {
		kind, ok := kinds[code]
		if !ok {
			kind = ErrIO
		}
		return &Error{Kind: kind, Message: message, Bucket: bucket, Cause: cause, text: text}
	}
}
