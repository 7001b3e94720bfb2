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
	return &Bucket[T]{branch: b.branch, base: b.base, h: native.TxBucket{Tx: native.TxOf(tx), B: b.base}, c: b.c}
}

// WithView is this bucket (or branch) read on the snapshot v: Get, Entry,
// Has, List and All see the file as it was at the snapshot's first read,
// and renew nothing. Its writes are tinystore.ErrInvalid, and after the
// view's function returns every call is tinystore.ErrClosed.
func (b *Bucket[T]) WithView(v *View) *Bucket[T] {
	return &Bucket[T]{branch: b.branch, base: b.base, h: native.ViewBucket{V: native.SnapshotOf(v), B: b.base}, c: b.c}
}
