package kv

import (
	"tinyshed.org/tinystore/internal/native"
)

// KeyError is an error about one key: it names the bucket and the path of
// owners and key, and wraps the *tinystore.Error, so that errors.Is finds
// the kind (tinystore.ErrConflict...) in it.
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

func init() {
	native.NewKeyError = func(err error, bucket, path string) error {
		return &KeyError{Bucket: bucket, Path: path, Err: err}
	}
}

// invalid is an ErrInvalid about a handle, not one key.
func invalid(bucket, message string) error {
	return native.Made(native.CodeInvalid, message, bucket)
}
