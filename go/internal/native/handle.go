package native

/*
#include "tinystore.h"

// ts_call keeps no Go pointer past the call and calls no Go function (a
// take with a check goes through ts_call_back, bucket.go), so its
// arguments and answer stay on the caller's stack: no allocation for a Get
// or a Set.
#cgo noescape ts_call
#cgo nocallback ts_call
*/
import "C"

import (
	"context"
	"runtime"
)

// handle is an open handle of a store (a bucket, counters, a rate limit,
// a quota or a once): its store, its name and its C handle, freed by a
// finalizer once it is unreachable, since it holds nothing else.
type handle struct {
	store *Store
	Name  string // the handle's name
	ptr   *C.TsHandle
}

// begin checks ctx and moves a manual store's clock before a call.
func (h *handle) begin(ctx context.Context) error {
	if ctx.Err() != nil {
		return Cancelled(ctx, h.Name)
	}
	if h.store.manual {
		return h.store.SyncClock()
	}
	return nil
}

// Store is the store the handle was opened on.
func (h *handle) Store() *Store { return h.store }

// opened is the handle name of s that open (a ts_*_open call, given the
// store, the name and the out pointers) makes, wrapped by wrap.
func opened[H any](s *Store, name string, open func(p *C.TsStore, n *C.uint8_t, l C.size_t, out **C.TsHandle, e **C.TsError) C.int32_t,
	wrap func(*handle) *H) (*H, error) {
	var ptr *C.TsHandle
	err := s.with(func(p *C.TsStore) error {
		n, l := text(name)
		var e *C.TsError
		return failure(open(p, n, l, &ptr, &e), e, nil)
	})
	if err != nil {
		return nil, err
	}
	h := &handle{store: s, Name: name, ptr: ptr}
	runtime.SetFinalizer(h, func(h *handle) { C.ts_handle_free(h.ptr) })
	return wrap(h), nil
}

// openedAs is the handle name of s that ts_open makes as how says (a
// quota's with its windows), wrapped by wrap.
func openedAs[H any](s *Store, name string, how C.TsOpen, windows []QuotaWindow, wrap func(*handle) *H) (*H, error) {
	var names []byte
	limits := make([]C.int64_t, len(windows))
	spans := make([]C.int64_t, len(windows))
	for i, w := range windows {
		names = AppendOwner(names, w.Name)
		limits[i], spans[i] = C.int64_t(w.Limit), C.int64_t(w.Span)
	}
	var lp, sp *C.int64_t
	if len(windows) > 0 {
		lp, sp = &limits[0], &spans[0]
	}
	wn, wl := bytes(names)
	return opened(s, name, func(p *C.TsStore, n *C.uint8_t, l C.size_t, out **C.TsHandle, e **C.TsError) C.int32_t {
		return C.ts_open(p, n, l, &how, wn, wl, lp, sp, C.size_t(len(windows)), out, e)
	}, wrap)
}

// run makes the call c about key of the branch owners in scope s, with the
// bytes of a value; a bucket, counters or a once answers in out, a rate
// limit or quota in a. writes says whether it writes (on the store, a
// write gets a cancel that ctx fires).
func (h *handle) run(ctx context.Context, s *Scope, writes bool, owners []byte, key string, value []byte, c *C.TsCall, out *C.TsResult, a *C.TsAllowance) error {
	return h.onKey(ctx, s, writes, owners, key, value, c, func(x at) C.int32_t {
		return C.ts_call(h.ptr, x.sc, x.o, x.ol, x.k, x.kl, x.v, x.vl, c, out, a, x.e)
	})
}

// at is the C arguments of a ts_call but the handle, the call and the
// answers: its scope (nil: the store), the encoded owners, the key, a
// value's bytes, and where its error goes.
type at struct {
	sc *C.TsScope
	o  *C.uint8_t
	ol C.size_t
	k  *C.uint8_t
	kl C.size_t
	v  *C.uint8_t
	vl C.size_t
	e  **C.TsError
}

// onKey is call for the call c about key of the branch owners, with the
// bytes of a value: f gets the arguments every ts_call takes, and c the
// cancel of a write on the store.
func (h *handle) onKey(ctx context.Context, s *Scope, writes bool, owners []byte, key string, value []byte, c *C.TsCall, f func(a at) C.int32_t) error {
	o, ol := bytes(owners)
	k, kl := text(key)
	v, vl := bytes(value)
	err := h.call(ctx, s, writes, func(sc *C.TsScope, cn *C.TsCancel, e **C.TsError) C.int32_t {
		c.cancel = cn
		return f(at{sc, o, ol, k, kl, v, vl, e})
	})
	runtime.KeepAlive(value)
	return err
}

// call runs f for a call of h in scope s (nil: the store itself), after
// h.begin. On the store, a write (writes true) gets a cancel that ctx
// fires, which gives up on it before its group starts; in a scope, f runs
// while the scope is held open, and a scope that has ended is Closed.
func (h *handle) call(ctx context.Context, s *Scope, writes bool, f func(sc *C.TsScope, cn *C.TsCancel, e **C.TsError) C.int32_t) error {
	if err := h.begin(ctx); err != nil {
		return err
	}
	var e *C.TsError
	var rc C.int32_t
	switch {
	case s != nil:
		s.mu.RLock()
		defer s.mu.RUnlock()
		if s.ptr == nil {
			return Refused(s.ended, "", h.Name)
		}
		rc = f(s.ptr, nil, &e)
	case writes:
		rc = withCancel(ctx, func(cn *C.TsCancel) C.int32_t { return f(nil, cn, &e) })
	default:
		rc = f(nil, nil, &e)
	}
	runtime.KeepAlive(h) // the handle's C pointer is in use until f returns
	return failure(rc, e, ctx)
}
