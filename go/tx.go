package tinystore

import (
	"context"
	"runtime"

	"tinyshed.org/tinystore/internal/native"
)

// Tx is one transaction of Store.Tx (package kv calls it kv.Tx). Buckets
// join it with WithTx; it is valid only while its function runs, and a
// handle of it used later is ErrClosed. It is the engine's scope, which
// package kv converts back to run calls in it.
type Tx native.Scope

// View is one read snapshot of Store.View (kv.View in package kv). Buckets
// read it with WithView; it is valid only while its function runs, and a
// handle of it used later is ErrClosed. Like Tx, it is the engine's scope.
type View native.Scope

// Tx runs fn in one transaction: every write fn makes through
// bucket.WithTx(tx) commits together, durably, when fn returns nil, and
// none does when fn returns an error or panics (the error or panic goes on
// to the caller). Reads through the transaction see its own writes; other
// callers see none of them before the commit.
//
// Tx waits for the store's one writer, and holds it while fn runs, so keep
// fn short: a write to the same store outside the transaction (a bucket
// without WithTx, a counter, a run of Once, another Tx) from another
// goroutine waits until it ends, and one from fn's own goroutine, which
// would wait for itself, is ErrInvalid at once; a transaction held longer
// than ten seconds is rolled back by the store. If ctx ends before the
// transaction starts, or before fn returns, nothing is written and Tx
// answers ErrCancelled. A commit whose group fails is ErrOutcomeUnknown.
//
//	err := store.Tx(ctx, func(tx *kv.Tx) error {
//		left, _, err := stock.WithTx(tx).Take(ctx, "apples")
//		if err != nil {
//			return err
//		}
//		return orders.WithTx(tx).Set(ctx, "o-1", Order{Apples: left})
//	})
func (s *Store) Tx(ctx context.Context, fn func(tx *Tx) error) error {
	if fn == nil {
		return native.Refused("tx_needs_function", "nil", "")
	}
	// fn runs on this OS thread, where the transaction marks itself: the
	// thread is the caller's context the engine reads. A write of fn outside
	// the transaction (or a Tx inside it) would wait for the writer the
	// transaction holds, so the engine refuses it at once, as it does in
	// Rust, instead of a wait until the transaction's ten-second limit.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n, err := native.BeginTx(ctx, s.n())
	if err != nil {
		return err
	}
	n.HoldThread()
	committed := false
	defer func() {
		if !committed {
			n.End() // fn failed or panicked: rolled back
		}
	}()
	if err := fn((*Tx)(n)); err != nil {
		return err
	}
	committed = true
	return n.Commit(ctx)
}

// View runs fn on one read snapshot: every read fn makes through
// bucket.WithView(v) sees the file as it was at the snapshot's first read,
// whatever commits meanwhile. A View renews no idle key, and a write
// through it is ErrInvalid. Keep fn short: the file keeps every page the
// snapshot may still read. fn's error is View's.
func (s *Store) View(ctx context.Context, fn func(v *View) error) error {
	if fn == nil {
		return native.Refused("view_needs_function", "nil", "")
	}
	n, err := native.OpenView(ctx, s.n())
	if err != nil {
		return err
	}
	defer n.End()
	return fn((*View)(n))
}
