package kv

import (
	"context"
	"iter"
	"sync"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/native"
)

// Bucket holds values of type T by key, or one branch of them (Under). It
// is safe for concurrent use. Values are kept by their type (see the
// package doc), so the other languages read them back.
type Bucket[T any] struct {
	branch
	h     *native.Bucket
	scope *native.Scope // set by WithTx or WithView: every call runs in it
	c     *codec[T]
}

// OpenBucket opens the bucket name of store, with TTL or Idle (not both).
// The name is [a-z0-9][a-z0-9_-]{0,63} and keeps its kind: a name holding
// counters or a quota does not open as a bucket.
//
//	sessions, err := kv.OpenBucket[Session](store, "sessions", kv.Idle(30*24*time.Hour))
func OpenBucket[T any](store *tinystore.Store, name string, opts ...BucketOption) (*Bucket[T], error) {
	cfg := applied(opts, BucketOption.applyBucket)
	h, err := native.OpenBucket((*native.Store)(store), name, cfg.ttl, cfg.hasTTL, cfg.idle, cfg.hasIdle)
	if err != nil {
		return nil, err
	}
	c := newCodec[T]()
	if cfg.codec != nil {
		c = c.withCustom(cfg.codec)
	}
	return &Bucket[T]{branch: branch{name: name}, h: h, c: c}, nil
}

// Name is the bucket's name.
func (b *Bucket[T]) Name() string { return b.name }

// Under is the branch of owners under this one: the keys that belong to
// them. An owner is a string, a []byte or an integer, like a key. Clear on
// a branch removes it and every branch under it.
//
//	err := sessions.Under(userID).Clear(ctx) // sign out everywhere
func (b *Bucket[T]) Under(owners ...any) *Bucket[T] {
	return &Bucket[T]{branch: b.branch.under(owners), h: b.h, scope: b.scope, c: b.c}
}

// writeOptions carries the options as they were given; the core checks
// their shape for the call they go to.
func (b *Bucket[T]) writeOptions(opts []CallOption) native.WriteOptions {
	cfg := applied(opts, CallOption.applyCall)
	wo := native.WriteOptions{HasTTL: cfg.hasTTL, TTL: int64(cfg.ttl), HasAt: cfg.hasAt}
	if cfg.hasAt {
		wo.At = cfg.at.UnixMilli()
	}
	if cfg.hasIfVersion {
		wo.HasIfVersion, wo.IfVersion = true, cfg.ifVersion.rev
	}
	return wo
}

// Get gives the value of a live key; found is false when the key is
// absent or expired. In an Idle bucket it renews the key.
//
//	session, found, err := sessions.Under(userID).Get(ctx, digest(token))
func (b *Bucket[T]) Get(ctx context.Context, key any) (value T, found bool, err error) {
	e, found, err := b.Entry(ctx, key)
	return e.Value, found, err
}

// Entry gives a live key's value with its version and expiry. In an Idle
// bucket it renews the key.
func (b *Bucket[T]) Entry(ctx context.Context, key any) (Entry[T], bool, error) {
	k, err := b.key(key)
	if err != nil {
		return Entry[T]{}, false, err
	}
	e, found, err := b.h.Get(ctx, b.scope, b.owners, k, b.c.want)
	if err != nil || !found {
		return Entry[T]{}, false, err
	}
	v, err := b.c.decode(e.Value)
	if err != nil {
		return Entry[T]{}, false, b.keyErr(k, native.CodeCorrupt, err)
	}
	e.Key = k
	return entryOf(e, v), true, nil
}

// Has says whether a live key is there. In an Idle bucket it renews the key.
func (b *Bucket[T]) Has(ctx context.Context, key any) (bool, error) {
	k, err := b.key(key)
	if err != nil {
		return false, err
	}
	return b.h.Has(ctx, b.scope, b.owners, k)
}

// Set writes a value and returns once it is durable. A live key keeps its
// expiry, a new key gets the bucket's TTL; TTL or ExpireAt replace it.
// With IfVersion it writes only a live key at that version, else
// ErrConflict. A value JSON cannot write is ErrInvalid, over 1 MiB ErrLimit.
func (b *Bucket[T]) Set(ctx context.Context, key any, value T, opts ...CallOption) error {
	_, err := b.SetVersion(ctx, key, value, opts...)
	return err
}

// SetVersion is Set, answering the version it wrote.
func (b *Bucket[T]) SetVersion(ctx context.Context, key any, value T, opts ...CallOption) (Version, error) {
	k, err := b.key(key)
	if err != nil {
		return Version{}, err
	}
	wo := b.writeOptions(opts)
	v, err := b.c.encode(value)
	if err != nil {
		return Version{}, b.keyErr(k, native.CodeInvalid, err)
	}
	rev, err := b.h.Set(ctx, b.scope, b.owners, k, v, wo)
	return Version{rev}, err
}

// Create writes a value only if the key is absent (or expired), and says
// whether it did: of racing creators exactly one gets true.
func (b *Bucket[T]) Create(ctx context.Context, key any, value T, opts ...CallOption) (bool, error) {
	_, written, err := b.create(ctx, key, value, opts, false)
	return written, err
}

// CreateEntry is Create, answering the key's entry as well: the one it
// wrote (value, version and expiry) or the live one it found. Its Version
// is the claim a later write binds to with IfVersion:
//
//	claim, first, err := seen.CreateEntry(ctx, event.ID, struct{}{}, kv.TTL(10*time.Minute))
//	err = seen.Set(ctx, event.ID, struct{}{}, kv.IfVersion(claim.Version), kv.TTL(7*24*time.Hour))
func (b *Bucket[T]) CreateEntry(ctx context.Context, key any, value T, opts ...CallOption) (Entry[T], bool, error) {
	return b.create(ctx, key, value, opts, true)
}

// create is Create and CreateEntry; a found entry's value is read and
// decoded only when the caller wants the entry.
func (b *Bucket[T]) create(ctx context.Context, key any, value T, opts []CallOption, wantEntry bool) (Entry[T], bool, error) {
	k, err := b.key(key)
	if err != nil {
		return Entry[T]{}, false, err
	}
	wo := b.writeOptions(opts)
	v, err := b.c.encode(value)
	if err != nil {
		return Entry[T]{}, false, b.keyErr(k, native.CodeInvalid, err)
	}
	want := native.KindRaw
	if wantEntry {
		want = b.c.want
	}
	written, e, err := b.h.Create(ctx, b.scope, b.owners, k, v, wo, want)
	if err != nil || !wantEntry {
		return Entry[T]{}, written, err
	}
	e.Key = k
	if written {
		return entryOf(e, value), true, nil
	}
	found, err := b.c.decode(e.Value)
	if err != nil {
		return Entry[T]{}, false, b.keyErr(k, native.CodeCorrupt, err)
	}
	return entryOf(e, found), false, nil
}

// Take reads a key and deletes it in one write: of racing callers, in any
// process, exactly one gets the value. found is false when the key is
// absent or expired. A value that no longer decodes as T is ErrCorrupt
// and stays in place.
//
//	userID, found, err := codes.Take(ctx, digest(code)) // found is false if wrong, used or expired
func (b *Bucket[T]) Take(ctx context.Context, key any, opts ...CallOption) (value T, found bool, err error) {
	var zero T
	k, err := b.key(key)
	if err != nil {
		return zero, false, err
	}
	wo := b.writeOptions(opts)
	var check func(native.Value) bool
	var mu sync.Mutex // the check runs on the store's writer thread
	var why error
	if b.c.check {
		check = func(v native.Value) bool {
			_, err := b.c.decode(v)
			mu.Lock()
			why = err
			mu.Unlock()
			return err == nil
		}
	}
	e, found, err := b.h.Take(ctx, b.scope, b.owners, k, wo, b.c.want, check)
	mu.Lock()
	reason := why
	mu.Unlock()
	if err != nil {
		if reason != nil {
			return zero, false, b.keyErr(k, native.CodeCorrupt, reason)
		}
		return zero, false, err
	}
	if !found {
		return zero, false, nil
	}
	v, err := b.c.decode(e.Value)
	if err != nil {
		return zero, false, b.keyErr(k, native.CodeCorrupt, err)
	}
	return v, true, nil
}

// Delete deletes a key and says whether a live key was there; deleting a
// missing key succeeds. With IfVersion it deletes only a live key at that
// version, else ErrConflict.
func (b *Bucket[T]) Delete(ctx context.Context, key any, opts ...CallOption) (bool, error) {
	return b.found(ctx, key, opts, b.h.Delete)
}

// Expire gives a live key a new expiry, TTL(d) from now or ExpireAt(t),
// keeping its value and version, and says whether a live key was there.
//
//	found, err := sessions.Under(userID).Expire(ctx, digest(token), kv.TTL(time.Hour))
func (b *Bucket[T]) Expire(ctx context.Context, key any, opts ...CallOption) (bool, error) {
	return b.found(ctx, key, opts, b.h.Expire)
}

// found runs a write of one key that answers whether a live key was there
// (Delete, Expire) in the bucket's scope.
func (b *Bucket[T]) found(ctx context.Context, key any, opts []CallOption,
	write func(context.Context, *native.Scope, []byte, string, native.WriteOptions) (bool, error)) (bool, error) {
	k, err := b.key(key)
	if err != nil {
		return false, err
	}
	return write(ctx, b.scope, b.owners, k, b.writeOptions(opts))
}

// Clear removes this branch (the whole bucket, at its root) and every
// branch under it, for every reader at once, and nothing beside it. A key
// written after the Clear is a new key.
func (b *Bucket[T]) Clear(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	return b.h.Clear(ctx, b.scope, b.owners)
}

// List gives a page of this branch's own keys, in the byte order of their
// text: at most opts.Limit keys (100 when 0, 1000 at most) and 4 MiB of
// values. Page.Next is the After of the next page. List renews nothing.
func (b *Bucket[T]) List(ctx context.Context, opts ListOptions) (Page[T], error) {
	if b.err != nil {
		return Page[T]{}, b.err
	}
	entries, next, _, err := b.h.List(ctx, b.scope, b.owners, opts.After, opts.After != "", opts.Limit, b.c.want)
	if err != nil {
		return Page[T]{}, err
	}
	page := Page[T]{Entries: make([]Entry[T], 0, len(entries)), Next: next}
	for _, e := range entries {
		v, err := b.c.decode(e.Value)
		if err != nil {
			return Page[T]{}, b.keyErr(e.Key, native.CodeCorrupt, err)
		}
		page.Entries = append(page.Entries, entryOf(e, v))
	}
	return page, nil
}

// All walks every key of this branch, page by page, holding no snapshot
// between pages: a key written during the walk may or may not be met. It
// renews nothing. An error ends the walk.
//
//	for entry, err := range sessions.Under(userID).All(ctx) { ... }
func (b *Bucket[T]) All(ctx context.Context) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		after := ""
		for {
			page, err := b.List(ctx, ListOptions{After: after, Limit: native.MaxPage})
			if err != nil {
				yield(Entry[T]{}, err)
				return
			}
			for _, e := range page.Entries {
				if !yield(e, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			after = page.Next
		}
	}
}
