package kv

import (
	"context"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/native"
)

// Once runs a key's function once and keeps its answer of type T, Keep
// long (a day unless set), for the same key asked again: the answers of
// requests sent twice. Safe for concurrent use.
type Once[T any] struct {
	branch
	h     *native.Once
	c     *codec[T]
	scope *native.Scope // set by WithTx: Get and Delete run inside it
}

// OpenOnce opens the once name of store.
//
//	sends, err := kv.OpenOnce[Sent](store, "sends", kv.Keep(24*time.Hour))
func OpenOnce[T any](store *tinystore.Store, name string, opts ...OnceOption) (*Once[T], error) {
	cfg := applied(opts, OnceOption.applyOnce)
	h, err := native.OpenOnce((*native.Store)(store), name, cfg.keep, cfg.hasKeep)
	if err != nil {
		return nil, err
	}
	return &Once[T]{branch: branch{name: name}, h: h, c: newCodec[T]()}, nil
}

// Name is the once's name.
func (o *Once[T]) Name() string { return o.name }

// Under is the branch of owners: their keys run apart from the others.
func (o *Once[T]) Under(owners ...any) *Once[T] {
	return &Once[T]{branch: o.branch.under(owners), h: o.h, c: o.c, scope: o.scope}
}

// running is the key of the runs a context is inside (a *native.Caller),
// which Run hands to the engine: it refuses a Run of one of them inside
// itself instead of a wait for itself.
type running struct{}

// Run returns the answer kept for key, or runs fn and keeps what it
// returns. A Run of a key that another Run holds, in this process or
// another, in any language, waits for it and returns its answer (until
// ctx ends): fn runs once. An error of fn keeps nothing and is returned;
// the next Run runs again. An answer is kept even when ctx ends after fn
// returned, and an error keeping it is returned beside it. A Run of a key
// inside its own run (with the ctx fn was given) is tinystore.ErrInvalid.
//
//	sent, err := sends.Run(ctx, r.Header.Get("Idempotency-Key"), func(ctx context.Context) (Sent, error) {
//		return save(ctx, message)
//	})
func (o *Once[T]) Run(ctx context.Context, key any, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	k, err := o.key(key)
	if err != nil {
		return zero, err
	}
	if fn == nil {
		code, message := native.Refusal("run_needs_function", "nil")
		return zero, native.MadeAtKey(o.name, o.owners, k, code, message)
	}
	caller, _ := ctx.Value(running{}).(*native.Caller)
	kept, v, claim, err := o.h.Begin(ctx, caller, o.owners, k, o.c.want)
	if err != nil {
		return zero, err
	}
	if kept {
		answer, err := o.c.decode(v)
		if err != nil {
			return zero, o.keyErr(k, native.CodeCorrupt, err)
		}
		return answer, nil
	}
	defer claim.Abandon() // an error or a panic of fn keeps nothing; after Keep a no-op
	inner := context.WithValue(ctx, running{}, caller.InsideRun(claim))
	answer, err := fn(inner)
	if err != nil {
		return answer, err
	}
	enc, err := o.c.encode(answer)
	if err != nil {
		return answer, o.keyErr(k, native.CodeInvalid, err)
	}
	return answer, claim.Keep(enc)
}

// Get reads the answer kept for key; found is false when none is.
func (o *Once[T]) Get(ctx context.Context, key any) (answer T, found bool, err error) {
	var zero T
	k, err := o.key(key)
	if err != nil {
		return zero, false, err
	}
	v, found, err := o.h.Get(ctx, o.scope, o.owners, k, o.c.want)
	if err != nil || !found {
		return zero, false, err
	}
	answer, err = o.c.decode(v)
	if err != nil {
		return zero, false, o.keyErr(k, native.CodeCorrupt, err)
	}
	return answer, true, nil
}

// Delete forgets the answer kept for key, so that the next Run runs
// again, and says whether one was kept.
func (o *Once[T]) Delete(ctx context.Context, key any) (bool, error) {
	k, err := o.key(key)
	if err != nil {
		return false, err
	}
	return o.h.Delete(ctx, o.scope, o.owners, k)
}
