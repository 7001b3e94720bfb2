package native

import "errors"

// The kinds of error, one per error code of the ABI. Package tinystore
// gives them their public names (tinystore.ErrInvalid...); they live here
// so that the errors this package converts carry them.
var (
	ErrInvalid        = errors.New("tinystore: invalid")
	ErrLimit          = errors.New("tinystore: limit")
	ErrConflict       = errors.New("tinystore: conflict")
	ErrCorrupt        = errors.New("tinystore: corrupt")
	ErrClosed         = errors.New("tinystore: closed")
	ErrOutcomeUnknown = errors.New("tinystore: outcome unknown")
	ErrIO             = errors.New("tinystore: i/o")
	ErrCancelled      = errors.New("tinystore: cancelled")
)

var kinds = map[int]error{
	CodeInvalid:        ErrInvalid,
	CodeLimit:          ErrLimit,
	CodeConflict:       ErrConflict,
	CodeCorrupt:        ErrCorrupt,
	CodeClosed:         ErrClosed,
	CodeOutcomeUnknown: ErrOutcomeUnknown,
	CodeIO:             ErrIO,
	CodeCancelled:      ErrCancelled,
}

// Error is tinystore.Error, documented there.
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

// NewError is the error of a code: text is the message with the bucket and
// path it is about, as the core renders it; cause, when not nil, is the
// context error behind a cancellation.
func NewError(code int, message, bucket, text string, cause error) *Error {
	kind, ok := kinds[code]
	if !ok {
		kind = ErrIO
	}
	return &Error{Kind: kind, Message: message, Bucket: bucket, Cause: cause, text: text}
}

// KeyError is kv.KeyError, documented there.
type KeyError struct {
	// Bucket is the name of the bucket (or limit, quota, once).
	Bucket string
	// Path is the owners and the key, as owner/owner/key.
	Path string
	// Err is the error, a *tinystore.Error.
	Err error
}

// Error gives the kind and message, then the bucket and path: the text of
// the error it wraps, which the core rendered with them.
func (e *KeyError) Error() string { return e.Err.Error() }

// Unwrap gives the *tinystore.Error.
func (e *KeyError) Unwrap() error { return e.Err }
