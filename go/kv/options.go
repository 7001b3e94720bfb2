package kv

import "time"

// BucketOption configures OpenBucket: TTL or Idle.
type BucketOption interface{ applyBucket(*bucketConfig) }

// CallOption configures one write: TTL, ExpireAt or IfVersion.
type CallOption interface{ applyCall(*callConfig) }

type bucketConfig struct {
	ttl, idle       time.Duration
	hasTTL, hasIdle bool
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
