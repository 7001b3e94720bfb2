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
type Once struct{ *handle }

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
	how := C.TsOpen{kind: C.TS_OPEN_ONCE, has_keep: C.bool(hasKeep), keep_ns: C.int64_t(keep)}
	return openedAs(s, name, how, nil, func(h *handle) *Once { return &Once{h} })
}

// Begin waits for any run of the key to end, then answers the value kept
// for it (kept true), or a claim to run it. ctx ending ends the wait. caller
// is the runs the call is inside (nil: none), for the engine's refusal of a
// run inside its own run.
func (o *Once) Begin(ctx context.Context, caller *Caller, owners []byte, key string, want Kind) (kept bool, v Value, claim *Claim, err error) {
	c := C.TsCall{want: C.int32_t(want)}
	if caller != nil {
		c.caller = caller.ptr
	}
	out, err := o.run(ctx, nil, C.TS_OP_BEGIN, owners, key, &c)
	runtime.KeepAlive(caller)
	if err != nil {
		return false, Value{}, nil, err
	}
	if bool(out.found) {
		return true, value(&out.entry.value), nil, nil
	}
	return false, Value{}, &Claim{ptr: out.claim, once: o}, nil
}

// run makes the call c of op about key in scope s; begin is a write, for
// its wait to end with ctx.
func (o *Once) run(ctx context.Context, s *Scope, op C.int32_t, owners []byte, key string, c *C.TsCall) (out C.TsResult, err error) {
	c.op = op
	err = o.handle.run(ctx, s, op != C.TS_OP_GET, owners, key, nil, c, &out, nil)
	return out, err
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
	out, err := o.run(ctx, s, C.TS_OP_GET, owners, key, &C.TsCall{want: C.int32_t(want)})
	if err != nil || !bool(out.found) {
		return Value{}, false, err
	}
	return value(&out.entry.value), true, nil
}

// Delete forgets the answer kept for a key, in scope s.
func (o *Once) Delete(ctx context.Context, s *Scope, owners []byte, key string) (bool, error) {
	out, err := o.run(ctx, s, C.TS_OP_DELETE, owners, key, &C.TsCall{})
	return bool(out.found), err
}
