// Package kv opens the handles of a tinystore.Store: buckets of values,
// counters, rate limits, quotas and once.
//
// Every call takes a context.Context first. A context that has ended
// before a call starts ends it with tinystore.ErrCancelled (and the
// context's error); a write whose group has started finishes with it. A
// write returns once it is durable: writes from many goroutines commit
// together, one fsync per group.
//
// # Keys
//
// A key is a string, a []byte or an integer; an integer is its decimal
// spelling, so 42 and "42" are one key. Under(owners...) names a branch of
// keys by the same rule, and branches nest. An empty key, a key of another
// type, or a path of owners and key over 1 KiB is tinystore.ErrInvalid.
//
// # Values
//
// A bucket's type T decides how its values are kept, by T's kind, named or
// not, so that the other languages read them: json.RawMessage as the JSON
// it holds (checked when written and read); []byte and string as bytes
// (a string must be UTF-8); bool and integers up to 32 unsigned bits as an
// integer; uint, uint64 and uintptr as eight big-endian bytes; float64 and
// float32 as their big-endian bits (-0, infinities and NaN payloads come
// back bit for bit); struct{} as nothing, so a bucket of them is a set; Raw
// as the row is; anything else as JSON through encoding/json. A value JSON
// cannot write is tinystore.ErrInvalid at Set, with nothing written; one
// over 1 MiB is tinystore.ErrLimit. A row that does not decode as T is
// tinystore.ErrCorrupt, naming the key. WithCodec replaces the choice: a
// bucket's own Codec keeps its values as the bytes it encodes.
//
// # Expiry
//
// A bucket's TTL is given to a key when it is created, and a later Set
// keeps a live key's expiry; a write's own TTL or ExpireAt replaces it.
// Idle keeps a key for a span after its last read or write. An expired key
// is absent to every call. Expiry is judged on the store's clock, which a
// Manual store lets a test move.
//
// # Transactions
//
// Store.Tx runs a function in one transaction: writes of buckets joined to
// it with WithTx commit together when it returns nil, and none does when it
// returns an error or panics. Store.View reads one snapshot through
// WithView, and refuses writes. A handle of either used after its function
// returned is tinystore.ErrClosed.
//
//	err := store.Tx(ctx, func(tx *kv.Tx) error {
//		userID, found, err := codes.WithTx(tx).Take(ctx, digest(code))
//		if err != nil || !found {
//			return err
//		}
//		return sessions.Under(userID).WithTx(tx).Set(ctx, digest(token), Session{UserID: userID, Device: "web"})
//	})
//
// # Not yet
//
// Config joins this package as the core exposes it.
package kv
