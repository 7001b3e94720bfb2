package native

/*
#include "tinystore.h"
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
)

// Scope is an open transaction or read snapshot: every call of a handle
// takes one, and a nil *Scope is the store itself. Calls hold mu for
// reading and the end holds it for writing, so the C scope is never freed
// under a call, and a call after the end is Closed.
type Scope struct {
	mu    sync.RWMutex
	ptr   *C.TsScope
	ended string // the word of the core's refusal of a call after the end
}

// BeginTx waits for the writer's turn and begins a transaction; ctx ending
// before it starts gives up on it.
func BeginTx(ctx context.Context, s *Store) (*Scope, error) {
	return open(ctx, s, "tx_ended",
		func(p *C.TsStore, out **C.TsScope, e **C.TsError) C.int32_t {
			return withCancel(ctx, func(c *C.TsCancel) C.int32_t { return C.ts_tx_begin(p, c, out, e) })
		})
}

// OpenView opens a read snapshot of s.
func OpenView(ctx context.Context, s *Store) (*Scope, error) {
	return open(ctx, s, "view_ended",
		func(p *C.TsStore, out **C.TsScope, e **C.TsError) C.int32_t { return C.ts_view_open(p, out, e) })
}

func open(ctx context.Context, s *Store, ended string, f func(p *C.TsStore, out **C.TsScope, e **C.TsError) C.int32_t) (*Scope, error) {
	if ctx.Err() != nil {
		return nil, Cancelled(ctx, "")
	}
	if err := s.SyncClock(); err != nil {
		return nil, err
	}
	var ptr *C.TsScope
	err := s.with(func(p *C.TsStore) error {
		var e *C.TsError
		return failure(f(p, &ptr, &e), e, ctx)
	})
	if err != nil {
		return nil, err
	}
	sc := &Scope{ptr: ptr, ended: ended}
	// A safety net: the API always ends a scope; a transaction dropped
	// unended would hold the writer until the core's limit.
	runtime.SetFinalizer(sc, (*Scope).End)
	return sc, nil
}

// Commit commits the transaction and waits until it is durable, or rolls
// it back when ctx has ended (the core's rule and text). The transaction
// has ended after it, whatever the result.
func (s *Scope) Commit(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return Refused(s.ended, "", "")
	}
	var e *C.TsError
	rc := withCancel(ctx, func(c *C.TsCancel) C.int32_t {
		if c != nil && ctx.Err() != nil {
			// AfterFunc fires on a goroutine of its own, maybe after the commit.
			C.ts_cancel_fire(c)
		}
		return C.ts_tx_commit(s.ptr, c, &e)
	})
	C.ts_scope_free(s.ptr)
	s.ptr = nil
	return failure(rc, e, ctx)
}

// HoldThread marks the calling OS thread as the transaction's until it
// ends: a call from that thread that would wait for the same store's writer
// outside the transaction is CodeInvalid at once instead of waiting for the
// transaction's limit. The caller must keep the transaction's calls on this
// thread (runtime.LockOSThread) until the transaction ends.
func (s *Scope) HoldThread() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ptr != nil {
		C.ts_tx_hold_thread(s.ptr)
	}
}

// End ends the scope: a transaction not committed is rolled back, writing
// nothing of it, and a view is closed. After the end it does nothing.
func (s *Scope) End() {
	release(&s.mu, &s.ptr, func(p *C.TsScope) { C.ts_scope_free(p) })
}
