// Package tinystore opens a TinyStore: an application's current state in
// one SQLite file, kv.db, inside a directory. Sessions, one-time codes,
// rate limits, plan quotas, counters and the answers of requests sent
// twice live there, with expiry that needs no cleanup job. Package kv opens
// the handles; the same file is shared with the Rust, Python and
// TypeScript APIs of TinyStore, in this process or another.
//
//	store, err := tinystore.Open(ctx, "data", tinystore.Options{})
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	codes, err := kv.OpenBucket[int64](store, "sign-in-codes", kv.TTL(15*time.Minute))
//
// # Errors
//
// Every error has a kind, one of the Err sentinels, found with errors.Is.
// An error about one key is a *kv.KeyError naming the bucket and the path
// of owners and key. A missing key is not an error.
//
// # Testing without waiting
//
// A Manual store runs nothing in the background, and reads its clock from
// Options.Clock before every call, so a test moves time by itself and runs
// Maintain when it wants expired rows deleted:
//
//	now := time.Now()
//	store, err := tinystore.Open(ctx, t.TempDir(), tinystore.Options{Manual: true, Clock: func() time.Time { return now }})
//	now = now.Add(16 * time.Minute) // codes written before are expired now
//	_, err = store.Maintain(ctx)    // deletes them
//
// # Building
//
// The package calls the engine through cgo and a static library, which the
// published module carries for linux/amd64 and which `make go-lib` builds in
// a checkout of the repository (see go/README.md).
package tinystore
