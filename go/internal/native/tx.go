package native

/*
#include "tinystore.h"
extern int32_t tsGoCheck(uint64_t ctx, TsValue *value);
*/
import "C"

import (
	"context"
	"runtime"
	"runtime/cgo"
	"sync"
)

// Calls are a bucket's calls: made on their own (*Bucket), inside a
// transaction (TxBucket) or on a snapshot (ViewBucket). Package kv routes a
// bucket through one of them.
type Calls interface {
	Get(ctx context.Context, owners []byte, key string, want Kind) (Entry, bool, error)
	Has(ctx context.Context, owners []byte, key string) (bool, error)
	Set(ctx context.Context, owners []byte, key string, v Value, opts WriteOptions) (int64, error)
	Create(ctx context.Context, owners []byte, key string, v Value, opts WriteOptions, want Kind) (written bool, version int64, found Entry, err error)
	Take(ctx context.Context, owners []byte, key string, opts WriteOptions, want Kind, check func(Value) bool) (Entry, bool, error)
	Delete(ctx context.Context, owners []byte, key string, opts WriteOptions) (bool, error)
	Expire(ctx context.Context, owners []byte, key string, opts WriteOptions) (bool, error)
	Clear(ctx context.Context, owners []byte) error
	List(ctx context.Context, owners []byte, after string, hasAfter bool, limit int, want Kind) (entries []Entry, next string, more bool, err error)
}

var _ Calls = (*Bucket)(nil)

// Tx is an open transaction. Calls hold mu for reading and the end holds it
// for writing, so the handle is never freed under a call, and a call after
// the end is Closed.
type Tx struct {
	mu  sync.RWMutex
	ptr *C.TsTx
}

// BeginTx waits for the writer's turn and begins a transaction; ctx ending
// before it starts gives up on it.
func BeginTx(ctx context.Context, s *Store) (*Tx, error) {
	if ctx.Err() != nil {
		return nil, Cancelled(ctx, "")
	}
	if err := s.SyncClock(); err != nil {
		return nil, err
	}
	var ptr *C.TsTx
	err := s.with(func(p *C.TsStore) error {
		var e *C.TsError
		rc := withCancel(ctx, func(c *C.TsCancel) C.int32_t { return C.ts_tx_begin(p, c, &ptr, &e) })
		return failure(rc, e, ctx)
	})
	if err != nil {
		return nil, err
	}
	t := &Tx{ptr: ptr}
	// A safety net: the kv API always ends a transaction; one dropped
	// unended would hold the writer until the core's limit.
	runtime.SetFinalizer(t, (*Tx).Rollback)
	return t, nil
}

// Commit commits the transaction and waits until it is durable. The
// transaction has ended after it, whatever the result.
func (t *Tx) Commit() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ptr == nil {
		return txEnded("")
	}
	var e *C.TsError
	rc := C.ts_tx_commit(t.ptr, &e)
	C.ts_tx_free(t.ptr)
	t.ptr = nil
	return failure(rc, e, nil)
}

// HoldThread marks the calling OS thread as the transaction's until it
// ends: a call from that thread that would wait for the same store's writer
// outside the transaction is CodeInvalid at once instead of waiting for the
// transaction's limit. The caller must keep the transaction's calls on this
// thread (runtime.LockOSThread) until the transaction ends.
func (t *Tx) HoldThread() {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.ptr != nil {
		C.ts_tx_hold_thread(t.ptr)
	}
}

// Rollback ends the transaction writing nothing of it; after the end it
// does nothing.
func (t *Tx) Rollback() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ptr != nil {
		C.ts_tx_rollback(t.ptr)
		C.ts_tx_free(t.ptr)
		t.ptr = nil
	}
}

func txEnded(bucket string) error {
	return Made(CodeClosed, "the transaction has ended: a handle of Tx works only inside its function", bucket)
}

// call runs f on the live transaction, or answers Closed.
func (t *Tx) call(ctx context.Context, b *Bucket, f func(p *C.TsTx, e **C.TsError) C.int32_t) error {
	if err := b.begin(ctx); err != nil {
		return err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.ptr == nil {
		return txEnded(b.Name)
	}
	var e *C.TsError
	rc := f(t.ptr, &e)
	runtime.KeepAlive(b)
	return failure(rc, e, ctx)
}

// TxBucket is a bucket's calls inside a transaction.
type TxBucket struct {
	Tx *Tx
	B  *Bucket
}

// Get reads a live key as the transaction sees it.
func (x TxBucket) Get(ctx context.Context, owners []byte, key string, want Kind) (Entry, bool, error) {
	o, ol := bytes(owners)
	k, kl := text(key)
	var out C.TsEntry
	var found C.bool
	err := x.Tx.call(ctx, x.B, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_get(p, x.B.ptr, o, ol, k, kl, C.int32_t(want), &out, &found, e)
	})
	if err != nil || !bool(found) {
		return Entry{}, false, err
	}
	return entry(&out), true, nil
}

// Has says whether a live key is there, as the transaction sees it.
func (x TxBucket) Has(ctx context.Context, owners []byte, key string) (bool, error) {
	_, found, err := x.Get(ctx, owners, key, KindRaw)
	return found, err
}

// Set writes a value inside the transaction.
func (x TxBucket) Set(ctx context.Context, owners []byte, key string, v Value, opts WriteOptions) (int64, error) {
	o, ol := bytes(owners)
	k, kl := text(key)
	vb, vl := bytes(v.Bytes)
	co := opts.c()
	var version C.int64_t
	err := x.Tx.call(ctx, x.B, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_set(p, x.B.ptr, o, ol, k, kl, C.int32_t(v.Kind), C.int64_t(v.Int), vb, vl, &co, &version, e)
	})
	runtime.KeepAlive(v.Bytes)
	return int64(version), err
}

// Create writes a value inside the transaction if the key is absent.
func (x TxBucket) Create(ctx context.Context, owners []byte, key string, v Value, opts WriteOptions, want Kind) (bool, int64, Entry, error) {
	o, ol := bytes(owners)
	k, kl := text(key)
	vb, vl := bytes(v.Bytes)
	co := opts.c()
	var w C.bool
	var ver C.int64_t
	var out C.TsEntry
	err := x.Tx.call(ctx, x.B, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_create(p, x.B.ptr, o, ol, k, kl, C.int32_t(v.Kind), C.int64_t(v.Int), vb, vl, &co, C.int32_t(want), &w, &ver, &out, e)
	})
	runtime.KeepAlive(v.Bytes)
	if err != nil {
		return false, 0, Entry{}, err
	}
	if bool(w) {
		return true, int64(ver), Entry{}, nil
	}
	return false, 0, entry(&out), nil
}

// Take reads and deletes a key inside the transaction; check, when not
// nil, runs on the value first: false keeps it and makes the take Corrupt.
func (x TxBucket) Take(ctx context.Context, owners []byte, key string, opts WriteOptions, want Kind, check func(Value) bool) (Entry, bool, error) {
	o, ol := bytes(owners)
	k, kl := text(key)
	co := opts.c()
	var fn C.TsCheckFn
	var h cgo.Handle
	if check != nil {
		h = cgo.NewHandle(checkFunc(check))
		defer h.Delete()
		fn = C.TsCheckFn(C.tsGoCheck)
	}
	var out C.TsEntry
	var found C.bool
	err := x.Tx.call(ctx, x.B, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_take(p, x.B.ptr, o, ol, k, kl, &co, C.int32_t(want), fn, C.uint64_t(h), &out, &found, e)
	})
	if err != nil || !bool(found) {
		return Entry{}, false, err
	}
	return entry(&out), true, nil
}

// Delete deletes a key inside the transaction.
func (x TxBucket) Delete(ctx context.Context, owners []byte, key string, opts WriteOptions) (bool, error) {
	o, ol := bytes(owners)
	k, kl := text(key)
	co := opts.c()
	var found C.bool
	err := x.Tx.call(ctx, x.B, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_delete(p, x.B.ptr, o, ol, k, kl, &co, &found, e)
	})
	return bool(found), err
}

// Expire gives a live key a new expiry inside the transaction.
func (x TxBucket) Expire(ctx context.Context, owners []byte, key string, opts WriteOptions) (bool, error) {
	o, ol := bytes(owners)
	k, kl := text(key)
	co := opts.c()
	var found C.bool
	err := x.Tx.call(ctx, x.B, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_expire(p, x.B.ptr, o, ol, k, kl, &co, &found, e)
	})
	return bool(found), err
}

// Clear clears a branch inside the transaction.
func (x TxBucket) Clear(ctx context.Context, owners []byte) error {
	o, ol := bytes(owners)
	return x.Tx.call(ctx, x.B, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_clear(p, x.B.ptr, o, ol, e)
	})
}

// List reads a page of the branch as the transaction sees it.
func (x TxBucket) List(ctx context.Context, owners []byte, after string, hasAfter bool, limit int, want Kind) ([]Entry, string, bool, error) {
	if limit < 0 || limit > 1<<31 {
		limit = 1 << 31 // the core refuses it, naming the limit
	}
	o, ol := bytes(owners)
	a, al := text(after)
	var page *C.TsPage
	err := x.Tx.call(ctx, x.B, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_list(p, x.B.ptr, o, ol, a, al, C.bool(hasAfter), C.uint32_t(limit), C.int32_t(want), &page, e)
	})
	if err != nil {
		return nil, "", false, err
	}
	entries, next, more := readPage(page)
	return entries, next, more, nil
}

// Snapshot is an open read snapshot, guarded as Tx is.
type Snapshot struct {
	mu  sync.RWMutex
	ptr *C.TsSnapshot
}

// OpenSnapshot opens a read snapshot of s.
func OpenSnapshot(ctx context.Context, s *Store) (*Snapshot, error) {
	if ctx.Err() != nil {
		return nil, Cancelled(ctx, "")
	}
	if err := s.SyncClock(); err != nil {
		return nil, err
	}
	var ptr *C.TsSnapshot
	err := s.with(func(p *C.TsStore) error {
		var e *C.TsError
		return failure(C.ts_snapshot_open(p, &ptr, &e), e, nil)
	})
	if err != nil {
		return nil, err
	}
	v := &Snapshot{ptr: ptr}
	runtime.SetFinalizer(v, (*Snapshot).Close)
	return v, nil
}

// Close ends the snapshot; reads after it are Closed.
func (v *Snapshot) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ptr != nil {
		C.ts_snapshot_close(v.ptr)
		C.ts_snapshot_free(v.ptr)
		v.ptr = nil
	}
}

func (v *Snapshot) call(ctx context.Context, b *Bucket, f func(p *C.TsSnapshot, e **C.TsError) C.int32_t) error {
	if err := b.begin(ctx); err != nil {
		return err
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.ptr == nil {
		return Made(CodeClosed, "the view has ended: a handle of View works only inside its function", b.Name)
	}
	var e *C.TsError
	rc := f(v.ptr, &e)
	runtime.KeepAlive(b)
	return failure(rc, e, ctx)
}

// ViewBucket is a bucket's calls on a snapshot: reads only.
type ViewBucket struct {
	V *Snapshot
	B *Bucket
}

// Get reads a live key in the snapshot.
func (x ViewBucket) Get(ctx context.Context, owners []byte, key string, want Kind) (Entry, bool, error) {
	o, ol := bytes(owners)
	k, kl := text(key)
	var out C.TsEntry
	var found C.bool
	err := x.V.call(ctx, x.B, func(p *C.TsSnapshot, e **C.TsError) C.int32_t {
		return C.ts_snapshot_get(p, x.B.ptr, o, ol, k, kl, C.int32_t(want), &out, &found, e)
	})
	if err != nil || !bool(found) {
		return Entry{}, false, err
	}
	return entry(&out), true, nil
}

// Has says whether a live key is in the snapshot.
func (x ViewBucket) Has(ctx context.Context, owners []byte, key string) (bool, error) {
	_, found, err := x.Get(ctx, owners, key, KindRaw)
	return found, err
}

// List reads a page of the branch in the snapshot.
func (x ViewBucket) List(ctx context.Context, owners []byte, after string, hasAfter bool, limit int, want Kind) ([]Entry, string, bool, error) {
	if limit < 0 || limit > 1<<31 {
		limit = 1 << 31
	}
	o, ol := bytes(owners)
	a, al := text(after)
	var page *C.TsPage
	err := x.V.call(ctx, x.B, func(p *C.TsSnapshot, e **C.TsError) C.int32_t {
		return C.ts_snapshot_list(p, x.B.ptr, o, ol, a, al, C.bool(hasAfter), C.uint32_t(limit), C.int32_t(want), &page, e)
	})
	if err != nil {
		return nil, "", false, err
	}
	entries, next, more := readPage(page)
	return entries, next, more, nil
}

// refused is the error of a write inside a view, naming the key.
func (x ViewBucket) refused(owners []byte, key, call string) error {
	return KeyError(x.B.Name, owners, key, CodeInvalid, "a View reads one snapshot and cannot write: "+call+" inside View")
}

// Set is refused: a view cannot write.
func (x ViewBucket) Set(_ context.Context, owners []byte, key string, _ Value, _ WriteOptions) (int64, error) {
	return 0, x.refused(owners, key, "Set")
}

// Create is refused: a view cannot write.
func (x ViewBucket) Create(_ context.Context, owners []byte, key string, _ Value, _ WriteOptions, _ Kind) (bool, int64, Entry, error) {
	return false, 0, Entry{}, x.refused(owners, key, "Create")
}

// Take is refused: a view cannot write.
func (x ViewBucket) Take(_ context.Context, owners []byte, key string, _ WriteOptions, _ Kind, _ func(Value) bool) (Entry, bool, error) {
	return Entry{}, false, x.refused(owners, key, "Take")
}

// Delete is refused: a view cannot write.
func (x ViewBucket) Delete(_ context.Context, owners []byte, key string, _ WriteOptions) (bool, error) {
	return false, x.refused(owners, key, "Delete")
}

// Expire is refused: a view cannot write.
func (x ViewBucket) Expire(_ context.Context, owners []byte, key string, _ WriteOptions) (bool, error) {
	return false, x.refused(owners, key, "Expire")
}

// Clear is refused: a view cannot write.
func (x ViewBucket) Clear(_ context.Context, _ []byte) error {
	return Made(CodeInvalid, "a View reads one snapshot and cannot write: Clear inside View", x.B.Name)
}

// FailNextCommitForTests is a TEST HOOK, not for applications: the store's
// next group commit fails as a failed fsync would, so that each of its
// writes answers OutcomeUnknown.
func (s *Store) FailNextCommitForTests() error {
	return s.with(func(p *C.TsStore) error {
		var e *C.TsError
		return failure(C.ts_store_fail_next_commit_for_tests(p, &e), e, nil)
	})
}

// TxOf gives the native transaction of a *tinystore.Tx, and SnapshotOf the
// snapshot of a *tinystore.View, so that package kv reaches them without
// their being public; package tinystore sets both in its init.
var (
	TxOf       func(tx any) *Tx
	SnapshotOf func(view any) *Snapshot
)
