package native

/*
#include "tinystore.h"
*/
import "C"

import (
	"context"
	"runtime"
	"time"
)

// Once is an open once.
type Once struct {
	handle
	ptr *C.TsOnce
}

// Claim is the run of one key, held until Keep or Abandon. Exactly one of
// them must be called.
type Claim struct {
	ptr  *C.TsClaim
	once *Once
}

// Caller is the runs of once a context is inside, kept as a value of the
// context: Begin hands it to the engine, which refuses a run of a key inside
// its own run. Nil is a context inside no run.
type Caller struct{ ptr *C.TsCaller }

// InsideRun is c (nil: inside nothing) inside the run claim holds.
func (c *Caller) InsideRun(claim *Claim) *Caller {
	var outer *C.TsCaller
	if c != nil {
		outer = c.ptr
	}
	inner := &Caller{ptr: C.ts_caller_inside_run(outer, claim.ptr)}
	runtime.KeepAlive(c)
	runtime.KeepAlive(claim)
	runtime.SetFinalizer(inner, func(c *Caller) { C.ts_caller_free(c.ptr) })
	return inner
}

// OpenOnce opens the once name of s, keeping answers keep long.
func OpenOnce(s *Store, name string, keep time.Duration, hasKeep bool) (*Once, error) {
	return opened(s, name, func(p *C.TsStore, n *C.uint8_t, l C.size_t, out **C.TsOnce, e **C.TsError) C.int32_t {
		return C.ts_once_open(p, n, l, C.int64_t(keep), C.bool(hasKeep), out, e)
	}, func(h handle, p *C.TsOnce) *Once { return &Once{h, p} }, func(o *Once) { C.ts_once_free(o.ptr) })
}

// Begin waits for any run of the key to end, then answers the value kept
// for it (kept true), or a claim to run it. ctx ending ends the wait. caller
// is the runs the call is inside (nil: none), for the engine's refusal of a
// run inside its own run.
func (o *Once) Begin(ctx context.Context, caller *Caller, owners []byte, key string, want Kind) (kept bool, v Value, claim *Claim, err error) {
	if err := o.begin(ctx); err != nil {
		return false, Value{}, nil, err
	}
	ow, ol := bytes(owners)
	k, kl := text(key)
	var ck C.bool
	var cv C.TsValue
	var cc *C.TsClaim
	var e *C.TsError
	var cp *C.TsCaller
	if caller != nil {
		cp = caller.ptr
	}
	rc := withCancel(ctx, func(cn *C.TsCancel) C.int32_t {
		return C.ts_once_begin(o.ptr, ow, ol, k, kl, C.int32_t(want), cp, cn, &ck, &cv, &cc, &e)
	})
	runtime.KeepAlive(o)
	runtime.KeepAlive(caller)
	if err := failure(rc, e, ctx); err != nil {
		return false, Value{}, nil, err
	}
	if bool(ck) {
		return true, value(&cv), nil, nil
	}
	return false, Value{}, &Claim{ptr: cc, once: o}, nil
}

// Keep keeps v as the key's answer and lets go of the run, durably. The
// claim is spent, whatever the result.
func (c *Claim) Keep(v Value) error {
	vb, vl := bytes(v.Bytes)
	var e *C.TsError
	rc := C.ts_claim_keep(c.ptr, C.int32_t(v.Kind), C.int64_t(v.Int), vb, vl, &e)
	c.ptr = nil
	runtime.KeepAlive(c.once)
	runtime.KeepAlive(v.Bytes)
	return failure(rc, e, nil)
}

// Abandon lets go of the run keeping nothing; after Keep it does nothing.
func (c *Claim) Abandon() {
	if c.ptr != nil {
		C.ts_claim_abandon(c.ptr)
		c.ptr = nil
	}
	runtime.KeepAlive(c.once)
}

// Get reads the answer kept for a key, in scope s.
func (o *Once) Get(ctx context.Context, s *Scope, owners []byte, key string, want Kind) (Value, bool, error) {
	var cv C.TsValue
	var found C.bool
	err := o.onKey(ctx, s, false, owners, key, func(a at) C.int32_t {
		return C.ts_once_get(o.ptr, a.sc, a.o, a.ol, a.k, a.kl, C.int32_t(want), &cv, &found, a.e)
	})
	if err != nil || !bool(found) {
		return Value{}, false, err
	}
	return value(&cv), true, nil
}

// Delete forgets the answer kept for a key, in scope s.
func (o *Once) Delete(ctx context.Context, s *Scope, owners []byte, key string) (bool, error) {
	var found C.bool
	err := o.onKey(ctx, s, true, owners, key, func(a at) C.int32_t {
		return C.ts_once_delete(o.ptr, a.sc, a.o, a.ol, a.k, a.kl, a.cn, &found, a.e)
	})
	return bool(found), err
}
