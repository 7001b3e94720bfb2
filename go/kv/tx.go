package kv

import (
	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/native"
)

// Tx is a transaction of Store.Tx: tinystore.Tx, named here so that a
// transaction's function reads func(tx *kv.Tx) error next to the buckets it
// writes.
type Tx = tinystore.Tx

// View is a read snapshot of Store.View: tinystore.View, named here beside Tx.
type View = tinystore.View

// txScope is the engine's scope of tx. A nil tx would run the calls
// outside any transaction, so it panics instead, as a nil handle does.
func txScope(tx *Tx) *native.Scope {
	if tx == nil {
		panic("kv: WithTx needs the *kv.Tx of a Store.Tx function; it was nil")
	}
	return (*native.Scope)(tx)
}

// viewScope is the engine's scope of v; a nil v panics, as for txScope.
func viewScope(v *View) *native.Scope {
	if v == nil {
		panic("kv: WithView needs the *kv.View of a Store.View function; it was nil")
	}
	return (*native.Scope)(v)
}

// WithTx is this bucket (or branch) inside tx: its writes commit with the
// transaction's, or not at all, and its reads see the transaction's own
// writes. Reads renew no idle key. A value that does not decode as T is
// ErrCorrupt at Take and stays, as outside. After the transaction's
// function returns, every call of the handle is tinystore.ErrClosed.
//
//	err := store.Tx(ctx, func(tx *kv.Tx) error {
//		userID, found, err := codes.WithTx(tx).Take(ctx, digest(code))
//		if err != nil || !found {
//			return err
//		}
//		return sessions.Under(userID).WithTx(tx).Set(ctx, digest(token), Session{UserID: userID, Device: "web"})
//	})
func (b *Bucket[T]) WithTx(tx *Tx) *Bucket[T] {
	return &Bucket[T]{branch: b.branch, h: b.h, scope: txScope(tx), c: b.c}
}

// WithView is this bucket (or branch) read on the snapshot v: Get, Entry,
// Has, List and All see the file as it was at the snapshot's first read,
// and renew nothing. Its writes are tinystore.ErrInvalid, and after the
// view's function returns every call is tinystore.ErrClosed.
func (b *Bucket[T]) WithView(v *View) *Bucket[T] {
	return &Bucket[T]{branch: b.branch, h: b.h, scope: viewScope(v), c: b.c}
}

// WithTx is these counters (or branch) inside tx: Add, Max, Get and Delete
// commit with the transaction's writes, or not at all, and see its own
// writes. Counters opened with FlushEvery keep their counts in memory, so
// they cannot join a transaction: every call is tinystore.ErrInvalid,
// saying so. After the transaction's function returns, every call is
// tinystore.ErrClosed.
//
//	err := store.Tx(ctx, func(tx *kv.Tx) error {
//		if _, found, err := codes.WithTx(tx).Take(ctx, digest(code)); err != nil || !found {
//			return err
//		}
//		_, err := attempts.WithTx(tx).Add(ctx, email, 1)
//		return err
//	})
func (c *Counters) WithTx(tx *Tx) *Counters {
	return &Counters{branch: c.branch, h: c.h, scope: txScope(tx)}
}

// WithTx is this quota (or branch) inside tx: Allow, Refund, Peek and
// Reset commit or roll back with the transaction, and see its own uses.
func (q *Quota) WithTx(tx *Tx) *Quota {
	return &Quota{branch: q.branch, h: q.h, scope: txScope(tx)}
}

// WithTx is this once's answers inside tx: Get and Delete run inside the
// transaction (an answer deleted with the row it describes). Run is
// tinystore.ErrInvalid inside a transaction: its claim and its answer are
// writes of their own, which would wait for it.
func (o *Once[T]) WithTx(tx *Tx) *Once[T] {
	return &Once[T]{branch: o.branch, h: o.h, c: o.c, scope: txScope(tx)}
}

// WithTx is tinystore.ErrInvalid for every call: a rate limit keeps its
// state in memory and cannot join a transaction. Call it outside (a Quota
// joins one).
func (r *RateLimit) WithTx(tx *Tx) *RateLimit {
	return &RateLimit{branch: r.branch, h: r.h, scope: txScope(tx)}
}
