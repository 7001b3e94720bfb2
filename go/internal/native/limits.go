package native

/*
#include "tinystore.h"
*/
import "C"

import (
	"context"
	"time"
	"unsafe"
)

// Window is one window of a quota in an answer.
type Window struct {
	Name              string // the window's name
	Used, Limit, Left uint64 // uses counted, allowed and left
	HasResetsAt       bool   // whether the window has started
	ResetsAtNs        int64  // when it resets, ns since the Unix epoch
}

// Allowance is the answer of a rate limit or a quota.
type Allowance struct {
	OK         bool     // whether the request passed
	Left       uint64   // how many more would pass now
	HasRetryAt bool     // whether RetryAtNs holds a time
	RetryAtNs  int64    // when the request would pass, ns since the Unix epoch
	Windows    []Window // a quota's windows
}

// allowance converts the answer of a call that succeeded.
func allowance(a *C.TsAllowance, err error) (Allowance, error) {
	if err != nil {
		return Allowance{}, err
	}
	out := Allowance{OK: bool(a.ok), Left: uint64(a.left), HasRetryAt: bool(a.has_retry_at), RetryAtNs: int64(a.retry_at_ns)}
	for i := 0; i < int(a.window_count) && i < len(a.windows); i++ {
		w := &a.windows[i]
		out.Windows = append(out.Windows, Window{
			Name: C.GoStringN((*C.char)(unsafe.Pointer(&w.name[0])), C.int(w.name_len)),
			Used: uint64(w.used), Limit: uint64(w.limit), Left: uint64(w.left),
			HasResetsAt: bool(w.has_resets_at), ResetsAtNs: int64(w.resets_at_ns),
		})
	}
	return out, nil
}

// Counters is an open counters handle.
type Counters struct{ *handle }

// OpenCounters opens the counters name of s.
func OpenCounters(s *Store, name string, ttl time.Duration, hasTTL bool, flushEvery time.Duration, hasFlush bool) (*Counters, error) {
	how := C.TsOpen{kind: C.TS_OPEN_COUNTERS, has_ttl: C.bool(hasTTL), ttl_ns: C.int64_t(ttl),
		has_flush_every: C.bool(hasFlush), flush_every_ns: C.int64_t(flushEvery)}
	return openedAs(s, name, how, nil, func(h *handle) *Counters { return &Counters{h} })
}

// run makes the call c of op about key in scope s.
func (c *Counters) run(ctx context.Context, s *Scope, op C.int32_t, owners []byte, key string, n int64) (out C.TsResult, err error) {
	call := C.TsCall{op: op, n: C.int64_t(n)}
	err = c.handle.run(ctx, s, op != C.TS_OP_GET, owners, key, nil, &call, &out, nil)
	return out, err
}

// Add adds n to a counter, or keeps the larger of it and n (max), in
// scope s, and returns the new value.
func (c *Counters) Add(ctx context.Context, s *Scope, owners []byte, key string, n int64, max bool) (int64, error) {
	op := C.int32_t(C.TS_OP_ADD)
	if max {
		op = C.TS_OP_MAX
	}
	out, err := c.run(ctx, s, op, owners, key, n)
	return int64(out.number), err
}

// Get reads a counter in scope s: 0 when missing or expired.
func (c *Counters) Get(ctx context.Context, s *Scope, owners []byte, key string) (int64, error) {
	out, err := c.run(ctx, s, C.TS_OP_GET, owners, key, 0)
	return int64(out.number), err
}

// Delete deletes a counter in scope s and says whether a live one was there.
func (c *Counters) Delete(ctx context.Context, s *Scope, owners []byte, key string) (bool, error) {
	out, err := c.run(ctx, s, C.TS_OP_DELETE, owners, key, 0)
	return bool(out.found), err
}

// Clear removes the branch of owners and every branch under it, on the store.
func (c *Counters) Clear(ctx context.Context, owners []byte) error {
	_, err := c.run(ctx, nil, C.TS_OP_CLEAR, owners, "", 0)
	return err
}

// RateLimit is an open rate limit.
type RateLimit struct{ *handle }

// OpenRateLimit opens the rate limit name of s: count every per when
// hasRate, burst at once when hasBurst. The core refuses a missing rate
// and a negative count or burst.
func OpenRateLimit(s *Store, name string, count int64, per time.Duration, hasRate bool, burst int64, hasBurst bool) (*RateLimit, error) {
	how := C.TsOpen{kind: C.TS_OPEN_RATE_LIMIT, has_rate: C.bool(hasRate), count: C.int64_t(count), per_ns: C.int64_t(per),
		has_burst: C.bool(hasBurst), burst: C.int64_t(burst)}
	return openedAs(s, name, how, nil, func(h *handle) *RateLimit { return &RateLimit{h} })
}

// The operations of RateLimit.Use and Quota.Use.
const (
	OpAllow  = int32(C.TS_OP_ALLOW)
	OpRefund = int32(C.TS_OP_REFUND)
	OpPeek   = int32(C.TS_OP_PEEK)
	OpReset  = int32(C.TS_OP_RESET)
)

// Use runs op (OpAllow, OpPeek or OpReset) on a key: allow takes n
// requests together, or none; peek counts nothing. In a transaction (s not
// nil) the core refuses it.
func (r *RateLimit) Use(ctx context.Context, s *Scope, owners []byte, key string, op int32, n int64) (Allowance, error) {
	return use(ctx, r.handle, s, false, owners, key, op, n)
}

// Quota is an open quota.
type Quota struct{ *handle }

// QuotaWindow is a window a quota opens with.
type QuotaWindow struct {
	Name  string        // [a-z][a-z0-9_]{0,31}
	Limit int64         // uses per span; the core refuses a negative one
	Span  time.Duration // how long the window lasts from its first use
}

// OpenQuota opens the quota name of s with its windows.
func OpenQuota(s *Store, name string, windows []QuotaWindow) (*Quota, error) {
	return openedAs(s, name, C.TsOpen{kind: C.TS_OPEN_QUOTA}, windows, func(h *handle) *Quota { return &Quota{h} })
}

// Use runs op (OpAllow, OpRefund, OpPeek or OpReset) on a key, in scope s.
func (q *Quota) Use(ctx context.Context, s *Scope, owners []byte, key string, op int32, n int64) (Allowance, error) {
	return use(ctx, q.handle, s, true, owners, key, op, n)
}

// use runs op on key of h, a rate limit or a quota, n times.
func use(ctx context.Context, h *handle, s *Scope, writes bool, owners []byte, key string, op int32, n int64) (Allowance, error) {
	var out C.TsAllowance
	call := C.TsCall{op: C.int32_t(op), uses: C.int64_t(n)}
	err := h.run(ctx, s, writes, owners, key, nil, &call, nil, &out)
	return allowance(&out, err)
}

// AppendOwner adds an owner (or a window name) to an encoded list: a
// little-endian u32 length and the bytes, as the C ABI reads them.
func AppendOwner(enc []byte, owner string) []byte {
	n := len(owner)
	enc = append(enc, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	return append(enc, owner...)
}
