package kv

import (
	"context"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/native"
)

// Counters are an int64 a key, or one branch of them (Under). A missing or
// expired counter is 0. They are safe for concurrent use: N racing Adds
// count exactly.
type Counters struct {
	branch
	h     *native.Counters
	scope *native.Scope // set by WithTx: every call but Clear runs inside it
}

// OpenCounters opens the counters name of store. With TTL a counter
// expires d after its first change and starts again from 0 (the window
// does not slide); with FlushEvery it lives in memory and is written every
// period.
//
//	attempts, err := kv.OpenCounters(store, "login-attempts", kv.TTL(15*time.Minute), kv.FlushEvery(time.Second))
//	n, err := attempts.Under("ip").Add(ctx, clientIP, 1)
func OpenCounters(store *tinystore.Store, name string, opts ...CountersOption) (*Counters, error) {
	cfg := applied(opts, CountersOption.applyCounters)
	h, err := native.OpenCounters((*native.Store)(store), name, cfg.ttl, cfg.hasTTL, cfg.flushEvery, cfg.hasFlushEvery)
	return opened(name, h, err, func(b branch, h *native.Counters) *Counters { return &Counters{branch: b, h: h} })
}

// Name is the counters' name.
func (c *Counters) Name() string { return c.name }

// Under is the branch of owners: the counters that belong to them.
func (c *Counters) Under(owners ...any) *Counters {
	return &Counters{branch: c.branch.under(owners), h: c.h, scope: c.scope}
}

// Add adds n to a counter and returns the new value. A sum past the int64
// range is tinystore.ErrLimit and changes nothing.
func (c *Counters) Add(ctx context.Context, key any, n int64) (int64, error) {
	k, err := c.key(key)
	if err != nil {
		return 0, err
	}
	return c.h.Add(ctx, c.scope, c.owners, k, n, false)
}

// Max keeps the larger of a counter and n, and returns it.
func (c *Counters) Max(ctx context.Context, key any, n int64) (int64, error) {
	k, err := c.key(key)
	if err != nil {
		return 0, err
	}
	return c.h.Add(ctx, c.scope, c.owners, k, n, true)
}

// Get reads a counter: 0 when it is missing or expired.
func (c *Counters) Get(ctx context.Context, key any) (int64, error) {
	k, err := c.key(key)
	if err != nil {
		return 0, err
	}
	return c.h.Get(ctx, c.scope, c.owners, k)
}

// Delete deletes a counter and says whether a live one was there.
func (c *Counters) Delete(ctx context.Context, key any) (bool, error) {
	k, err := c.key(key)
	if err != nil {
		return false, err
	}
	return c.h.Delete(ctx, c.scope, c.owners, k)
}

// Clear removes this branch of counters and every branch under it.
func (c *Counters) Clear(ctx context.Context) error {
	if c.err != nil {
		return c.err
	}
	return c.h.Clear(ctx, c.owners)
}
