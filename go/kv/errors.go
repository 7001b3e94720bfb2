package kv

import (
	"tinyshed.org/tinystore/internal/native"
)

// KeyError is an error about one key: it names the bucket and the path of
// owners and key, and wraps the *tinystore.Error, so that errors.Is finds
// the kind (tinystore.ErrConflict...) in it.
//
// Its fields: Bucket, the name of the bucket (or limit, quota, once); Path,
// the owners and the key, as owner/owner/key; Err, the *tinystore.Error.
// Error() is the text of the error it wraps, which the core rendered with
// the bucket and path; Unwrap gives the *tinystore.Error.
type KeyError = native.KeyError

// invalid is an ErrInvalid about a handle, not one key.
func invalid(bucket, message string) error {
	return native.Made(native.CodeInvalid, message, bucket)
}
