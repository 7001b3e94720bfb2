package kv

import (
	"context"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/native"
)

// Allowance is the answer of a rate limit or a quota: a refusal is an
// answer, never an error.
type Allowance struct {
	// OK says whether the request passed, and was counted.
	OK bool
	// Left is how many more requests would pass now: for a quota, the
	// least over its windows.
	Left int64
	// RetryAt is, after a refusal, when the same request would pass: for a
	// quota, when the windows that refused reset. The zero time when OK.
	RetryAt time.Time
	// Windows are a quota's windows by name; nil for a rate limit.
	Windows map[string]WindowUsage
}

// WindowUsage is one window of a quota in an answer.
type WindowUsage struct {
	// Used is how many uses the window counted since it started.
	Used int64
	// Limit is the window's limit.
	Limit int64
	// Left is how many uses are left before the window refuses.
	Left int64
	// ResetsAt is when the window resets; the zero time while it has not
	// started (no use since the last one ended).
	ResetsAt time.Time
}

func allowanceOf(a native.Allowance) Allowance {
	out := Allowance{OK: a.OK, Left: int64(a.Left)}
	if a.HasRetryAt {
		out.RetryAt = time.Unix(0, a.RetryAtNs)
	}
	if len(a.Windows) > 0 {
		out.Windows = make(map[string]WindowUsage, len(a.Windows))
		for _, w := range a.Windows {
			u := WindowUsage{Used: int64(w.Used), Limit: int64(w.Limit), Left: int64(w.Left)}
			if w.HasResetsAt {
				u.ResetsAt = time.Unix(0, w.ResetsAtNs)
			}
			out.Windows[w.Name] = u
		}
	}
	return out
}

// RateLimit limits requests by key with the generic cell rate algorithm:
// Rate(n, per) lets n requests through every per, Burst(b) b at once. Its
// state lives in memory, written every second and on Close. Safe for
// concurrent use.
type RateLimit struct {
	branch
	h     *native.RateLimit
	scope *native.Scope // set by WithTx: every call is refused
}

// OpenRateLimit opens the rate limit name of store; Rate is required.
//
//	guesses, err := kv.OpenRateLimit(store, "sign-in-guesses", kv.Rate(5, time.Minute), kv.Burst(5))
func OpenRateLimit(store *tinystore.Store, name string, opts ...RateLimitOption) (*RateLimit, error) {
	cfg := applied(opts, RateLimitOption.applyRateLimit)
	h, err := native.OpenRateLimit((*native.Store)(store), name, int64(cfg.count), cfg.per, cfg.hasRate, int64(cfg.burst), cfg.hasBurst)
	return opened(name, h, err, func(b branch, h *native.RateLimit) *RateLimit { return &RateLimit{branch: b, h: h} })
}

// Name is the rate limit's name.
func (r *RateLimit) Name() string { return r.name }

// Under is the branch of owners: their keys are limited apart from the others.
func (r *RateLimit) Under(owners ...any) *RateLimit {
	return &RateLimit{branch: r.branch.under(owners), h: r.h, scope: r.scope}
}

// Allow takes one request of key: Allowance.OK says whether it passes.
//
//	guess, err := guesses.Allow(ctx, ip)
//	if err == nil && !guess.OK { /* 429, retry at guess.RetryAt */ }
func (r *RateLimit) Allow(ctx context.Context, key any) (Allowance, error) {
	return r.AllowN(ctx, key, 1)
}

// AllowN takes n requests of key together, or none. More than the burst is
// tinystore.ErrInvalid: it could never pass.
func (r *RateLimit) AllowN(ctx context.Context, key any, n int) (Allowance, error) {
	return use(ctx, r.branch, r.h, r.scope, key, native.OpAllow, n)
}

// Peek gives the answer one request would get now, counting nothing.
func (r *RateLimit) Peek(ctx context.Context, key any) (Allowance, error) {
	return use(ctx, r.branch, r.h, r.scope, key, native.OpPeek, 1)
}

// Reset forgets key: its next request has the full burst.
func (r *RateLimit) Reset(ctx context.Context, key any) error {
	_, err := use(ctx, r.branch, r.h, r.scope, key, native.OpReset, 1)
	return err
}

// user is a native handle that counts uses of a key: a rate limit or a quota.
type user interface {
	Use(ctx context.Context, s *native.Scope, owners []byte, key string, op int32, n int64) (native.Allowance, error)
}

// use runs op on key of the branch b of h in scope s, n times; the core
// refuses a negative n.
func use(ctx context.Context, b branch, h user, s *native.Scope, key any, op int32, n int) (Allowance, error) {
	k, err := b.key(key)
	if err != nil {
		return Allowance{}, err
	}
	a, err := h.Use(ctx, s, b.owners, k, op, int64(n))
	return allowanceOf(a), err
}

// Quota counts uses by key against one to eight windows, each of which
// resets on its own, in one durable write per call. Safe for concurrent
// use: N racing Allows pass exactly the limit.
type Quota struct {
	branch
	h     *native.Quota
	scope *native.Scope // set by WithTx: every call runs inside it
}

// OpenQuota opens the quota name of store with its windows.
//
//	messages, err := kv.OpenQuota(store, "messages",
//		kv.Window("session", 100, 5*time.Hour), kv.Window("weekly", 300, 7*24*time.Hour))
func OpenQuota(store *tinystore.Store, name string, opts ...QuotaOption) (*Quota, error) {
	var windows []native.QuotaWindow
	for _, o := range opts {
		o.applyQuota(&windows)
	}
	h, err := native.OpenQuota((*native.Store)(store), name, windows)
	return opened(name, h, err, func(b branch, h *native.Quota) *Quota { return &Quota{branch: b, h: h} })
}

// Name is the quota's name.
func (q *Quota) Name() string { return q.name }

// Under is the branch of owners: their keys count apart from the others.
func (q *Quota) Under(owners ...any) *Quota {
	return &Quota{branch: q.branch.under(owners), h: q.h, scope: q.scope}
}

// Allow counts one use of key in every window, or in none when one has no
// room: a use refused by the weekly window does not use up the others.
//
//	used, err := messages.Allow(ctx, strconv.FormatInt(userID, 10))
//	if err == nil && !used.OK { /* 429 until used.RetryAt; used.Windows["weekly"].Left */ }
func (q *Quota) Allow(ctx context.Context, key any) (Allowance, error) {
	return use(ctx, q.branch, q.h, q.scope, key, native.OpAllow, 1)
}

// AllowN counts n uses together, in every window or in none; n over the
// smallest window's limit is tinystore.ErrInvalid.
func (q *Quota) AllowN(ctx context.Context, key any, n int) (Allowance, error) {
	return use(ctx, q.branch, q.h, q.scope, key, native.OpAllow, n)
}

// Peek gives the answer one use would get now, counting nothing.
func (q *Quota) Peek(ctx context.Context, key any) (Allowance, error) {
	return use(ctx, q.branch, q.h, q.scope, key, native.OpPeek, 1)
}

// Refund gives one use back to every window that has not reset since it
// was counted, never below zero: for work that failed after its Allow.
func (q *Quota) Refund(ctx context.Context, key any) error {
	_, err := use(ctx, q.branch, q.h, q.scope, key, native.OpRefund, 1)
	return err
}

// RefundN gives n uses back, as Refund does one.
func (q *Quota) RefundN(ctx context.Context, key any, n int) error {
	_, err := use(ctx, q.branch, q.h, q.scope, key, native.OpRefund, n)
	return err
}

// Reset forgets key: every window starts again at its next use.
func (q *Quota) Reset(ctx context.Context, key any) error {
	_, err := use(ctx, q.branch, q.h, q.scope, key, native.OpReset, 1)
	return err
}
