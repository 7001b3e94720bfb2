package native

/*
#include "tinystore.h"
*/
import "C"

import (
	"context"
	"runtime"
)

// The calls of durable counters inside a transaction (TxCounter's op).
const (
	TxCounterAdd    = int32(C.TS_TX_COUNTER_ADD)
	TxCounterMax    = int32(C.TS_TX_COUNTER_MAX)
	TxCounterGet    = int32(C.TS_TX_COUNTER_GET)
	TxCounterDelete = int32(C.TS_TX_COUNTER_DELETE)
)

// callHandle runs f on the live transaction for a call of handle h, or
// answers Closed.
func (t *Tx) callHandle(ctx context.Context, h *handle, f func(p *C.TsTx, e **C.TsError) C.int32_t) error {
	if err := h.begin(ctx); err != nil {
		return err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.ptr == nil {
		return txEnded(h.Name)
	}
	var e *C.TsError
	return failure(f(t.ptr, &e), e, ctx)
}

// CheckCounters is CodeInvalid when c cannot join the transaction: counters
// with a flush period keep their counts in memory.
func (t *Tx) CheckCounters(ctx context.Context, c *Counters) error {
	err := t.callHandle(ctx, &c.handle, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_check_counters(p, c.ptr, e)
	})
	runtime.KeepAlive(c)
	return err
}

// RefuseRateLimit is the engine's refusal of a rate limit inside a
// transaction: its state is in memory.
func (t *Tx) RefuseRateLimit(ctx context.Context, r *RateLimit) error {
	err := t.callHandle(ctx, &r.handle, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_refuse_rate_limit(p, r.ptr, e)
	})
	runtime.KeepAlive(r)
	return err
}

// Counter runs op (TxCounterAdd, Max, Get or Delete) on a durable counter
// inside the transaction: the value, and a delete's answer.
func (t *Tx) Counter(ctx context.Context, c *Counters, owners []byte, key string, op int32, n int64) (int64, bool, error) {
	o, ol := bytes(owners)
	k, kl := text(key)
	var out C.int64_t
	var found C.bool
	err := t.callHandle(ctx, &c.handle, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_counters(p, c.ptr, o, ol, k, kl, C.int32_t(op), C.int64_t(n), &out, &found, e)
	})
	runtime.KeepAlive(c)
	return int64(out), bool(found), err
}

// Quota runs op (QuotaAllow, QuotaRefund, QuotaPeek or QuotaReset) on a
// quota's key inside the transaction.
func (t *Tx) Quota(ctx context.Context, q *Quota, owners []byte, key string, op int32, n uint64) (Allowance, error) {
	o, ol := bytes(owners)
	k, kl := text(key)
	var out C.TsAllowance
	err := t.callHandle(ctx, &q.handle, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_quota(p, q.ptr, o, ol, k, kl, C.int32_t(op), C.uint64_t(n), &out, e)
	})
	runtime.KeepAlive(q)
	if err != nil {
		return Allowance{}, err
	}
	return allowance(&out), nil
}

// OnceGet reads the answer a once keeps for a key, as the transaction sees it.
func (t *Tx) OnceGet(ctx context.Context, once *Once, owners []byte, key string, want Kind) (Value, bool, error) {
	ow, ol := bytes(owners)
	k, kl := text(key)
	var cv C.TsValue
	var found C.bool
	err := t.callHandle(ctx, &once.handle, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_once_get(p, once.ptr, ow, ol, k, kl, C.int32_t(want), &cv, &found, e)
	})
	runtime.KeepAlive(once)
	if err != nil || !bool(found) {
		return Value{}, false, err
	}
	return value(&cv), true, nil
}

// OnceDelete forgets the answer a once keeps for a key, inside the transaction.
func (t *Tx) OnceDelete(ctx context.Context, once *Once, owners []byte, key string) (bool, error) {
	ow, ol := bytes(owners)
	k, kl := text(key)
	var found C.bool
	err := t.callHandle(ctx, &once.handle, func(p *C.TsTx, e **C.TsError) C.int32_t {
		return C.ts_tx_once_delete(p, once.ptr, ow, ol, k, kl, &found, e)
	})
	runtime.KeepAlive(once)
	return bool(found), err
}
