package kv

import (
	"time"

	"tinyshed.org/tinystore/internal/native"
)

// applied is the configuration opts make, each applied in turn by apply.
func applied[C, O any](opts []O, apply func(O, *C)) C {
	var cfg C
	for _, o := range opts {
		apply(o, &cfg)
	}
	return cfg
}

// BucketOption configures OpenBucket: TTL or Idle, and WithCodec.
type BucketOption interface{ applyBucket(*bucketConfig) }

// CallOption configures one write: TTL, ExpireAt or IfVersion.
type CallOption interface{ applyCall(*callConfig) }

type bucketConfig struct {
	ttl, idle       time.Duration
	hasTTL, hasIdle bool
	codec           Codec
}

type callConfig struct {
	ttl          time.Duration
	at           time.Time
	hasTTL       bool
	hasAt        bool
	ifVersion    Version
	hasIfVersion bool
}

// TTLOption is a time to live: see TTL.
type TTLOption struct{ d time.Duration }

// TTL gives a key a time to live. On OpenBucket, every key gets it when it
// is created, and a later Set keeps a live key's expiry; on a write, it
// replaces the key's expiry from now. (It fits counters too.)
func TTL(d time.Duration) TTLOption { return TTLOption{d} }

func (o TTLOption) applyBucket(c *bucketConfig) { c.ttl, c.hasTTL = o.d, true }
func (o TTLOption) applyCall(c *callConfig)     { c.ttl, c.hasTTL = o.d, true }

// IdleOption is an idle span: see Idle.
type IdleOption struct{ d time.Duration }

// Idle makes every key of a bucket expire d after it was last read or
// written. A read renews it once a thirtieth of d has passed, written with
// other writes about a second later. Idle beside TTL is ErrInvalid.
func Idle(d time.Duration) IdleOption { return IdleOption{d} }

func (o IdleOption) applyBucket(c *bucketConfig) { c.idle, c.hasIdle = o.d, true }

// ExpireAtOption is an expiry time: see ExpireAt.
type ExpireAtOption struct{ t time.Time }

// ExpireAt makes a write's key expire at t; a t in the past makes the key
// absent at once.
func ExpireAt(t time.Time) ExpireAtOption { return ExpireAtOption{t} }

func (o ExpireAtOption) applyCall(c *callConfig) { c.at, c.hasAt = o.t, true }

// IfVersionOption is a version check: see IfVersion.
type IfVersionOption struct{ v Version }

// IfVersion applies a Set, Take, Delete or Expire only to a live key at
// version v; anything else is ErrConflict naming the key.
func IfVersion(v Version) IfVersionOption { return IfVersionOption{v} }

func (o IfVersionOption) applyCall(c *callConfig) { c.ifVersion, c.hasIfVersion = o.v, true }

// CountersOption configures OpenCounters: TTL or FlushEvery.
type CountersOption interface{ applyCounters(*countersConfig) }

type countersConfig struct {
	ttl, flushEvery       time.Duration
	hasTTL, hasFlushEvery bool
}

func (o TTLOption) applyCounters(c *countersConfig) { c.ttl, c.hasTTL = o.d, true }

// FlushEveryOption is a flush period: see FlushEvery.
type FlushEveryOption struct{ d time.Duration }

// FlushEvery keeps counters in memory and writes them every d (at least a
// second), on Maintain and on Close, instead of on every change: a crash
// loses at most one period. Every handle of a name chooses the same d, or
// none; another is ErrInvalid.
func FlushEvery(d time.Duration) FlushEveryOption { return FlushEveryOption{d} }

func (o FlushEveryOption) applyCounters(c *countersConfig) { c.flushEvery, c.hasFlushEvery = o.d, true }

// RateLimitOption configures OpenRateLimit: Rate and Burst.
type RateLimitOption interface{ applyRateLimit(*rateConfig) }

type rateConfig struct {
	count, burst      int
	per               time.Duration
	hasRate, hasBurst bool
}

// RateOption is a rate: see Rate.
type RateOption struct {
	n   int
	per time.Duration
}

// Rate lets n requests through every per, refilled continuously (GCRA): no
// window edge lets twice the rate through.
func Rate(n int, per time.Duration) RateOption { return RateOption{n, per} }

func (o RateOption) applyRateLimit(c *rateConfig) { c.count, c.per, c.hasRate = o.n, o.per, true }

// BurstOption is a burst: see Burst.
type BurstOption struct{ b int }

// Burst lets b requests through at once; the rate's n when not given.
func Burst(b int) BurstOption { return BurstOption{b} }

func (o BurstOption) applyRateLimit(c *rateConfig) { c.burst, c.hasBurst = o.b, true }

// QuotaOption configures OpenQuota: one to eight Windows.
type QuotaOption interface {
	applyQuota(*[]native.QuotaWindow)
}

// WindowOption is a window of a quota: see Window.
type WindowOption struct {
	name  string
	limit int
	span  time.Duration
}

// Window adds a window to a quota: limit uses per span, starting at a
// key's first use after the last window ended. A name is
// [a-z][a-z0-9_]{0,31}.
func Window(name string, limit int, span time.Duration) WindowOption {
	return WindowOption{name, limit, span}
}

func (o WindowOption) applyQuota(ws *[]native.QuotaWindow) {
	*ws = append(*ws, native.QuotaWindow{Name: o.name, Limit: int64(o.limit), Span: o.span})
}

// OnceOption configures OpenOnce: Keep.
type OnceOption interface{ applyOnce(*onceConfig) }

type onceConfig struct {
	keep    time.Duration
	hasKeep bool
}

// KeepOption is how long once keeps an answer: see Keep.
type KeepOption struct{ d time.Duration }

// Keep keeps each answer of a once for d after its run; a day when not given.
func Keep(d time.Duration) KeepOption { return KeepOption{d} }

func (o KeepOption) applyOnce(c *onceConfig) { c.keep, c.hasKeep = o.d, true }
