package kv_test

// The bad-input catalogue (KV-18) for Go: every bad input a Go
// caller can give (a key of another type, a value JSON cannot write, a
// negative or zero duration, a bad rate, window or count, a bad option or
// call, a closed store) is refused with the right kind and a message naming
// what was wrong, and kv.db and kv.db-wal hash the same before and after.
// The Rust catalogue (core/tests/bad_input.rs) covers the core's rules case
// by case; this one covers what package kv adds or converts.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// catalogue checks refusals on one store, whose files must not change.
type catalogue struct {
	t      *testing.T
	dir    string
	before [2]string
	count  int
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (c *catalogue) state() [2]string {
	return [2]string{fileDigest(c.t, filepath.Join(c.dir, "kv.db")), fileDigest(c.t, filepath.Join(c.dir, "kv.db-wal"))}
}

// newCatalogue settles the store (a blocking write queues behind every
// write in flight) and records its files.
func newCatalogue(t *testing.T, s *tinystore.Store) *catalogue {
	t.Helper()
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](s, "texts"))
	ok(t, texts.Set(context.Background(), "settled", "v"))
	c := &catalogue{t: t, dir: s.Dir()}
	c.before = c.state()
	return c
}

// refused checks that err is of kind and its message names each of names.
func (c *catalogue) refused(what string, err error, kind error, names ...string) {
	c.t.Helper()
	if err == nil {
		c.t.Errorf("%s: accepted", what)
		return
	}
	if !errors.Is(err, kind) {
		c.t.Errorf("%s: want %v, got %v", what, kind, err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			c.t.Errorf("%s: the error should name %q: %v", what, n, err)
		}
	}
	c.count++
}

// done checks that nothing refused changed the file.
func (c *catalogue) done() {
	c.t.Helper()
	if got := c.state(); got != c.before {
		c.t.Errorf("a refused input changed the file: %v, was %v", got, c.before)
	}
	if c.count == 0 {
		c.t.Error("no case ran")
	}
}

// errOf keeps the error of a call with a result.
func errOf[T any](_ T, err error) error { return err }

// errOf2 keeps the error of a call with two results.
func errOf2[T, U any](_ T, _ U, err error) error { return err }

// badFixture opens a store with a handle of every kind, so the cases register nothing.
func badFixture(t *testing.T) *tinystore.Store {
	t.Helper()
	s, _ := openManual(t)
	ctx := context.Background()
	ok(t, must[*kv.Bucket[string]](t)(kv.OpenBucket[string](s, "texts")).Set(ctx, "kept", "v"))
	ok(t, must[*kv.Bucket[[]float64]](t)(kv.OpenBucket[[]float64](s, "numbers")).Set(ctx, "kept", []float64{1}))
	_ = must[int64](t)(must[*kv.Counters](t)(kv.OpenCounters(s, "attempts")).Add(ctx, "kept", 1))
	_ = must[kv.Allowance](t)(must[*kv.RateLimit](t)(kv.OpenRateLimit(s, "guesses", kv.Rate(5, time.Minute))).Allow(ctx, "kept"))
	_ = must[kv.Allowance](t)(must[*kv.Quota](t)(kv.OpenQuota(s, "messages", kv.Window("daily", 100, 24*time.Hour))).Allow(ctx, "kept"))
	return s
}

var badNames = []string{"", "Sessions", "a b", "ünï", "a\x00b", "-lead", "_lead", "a/b", "a.b", strings.Repeat("a", 65)}

// quoted is the core's quoting of an input in a message (Rust's debug form).
func quoted(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "\x00", `\0`) + `"`
}

func TestKV18BadNamesAreInvalidNamingThem(t *testing.T) {
	s := badFixture(t)
	c := newCatalogue(t, s)
	for _, name := range badNames {
		c.refused("bucket "+quoted(name), errOf(kv.OpenBucket[int](s, name)), tinystore.ErrInvalid, quoted(name))
		c.refused("counters "+quoted(name), errOf(kv.OpenCounters(s, name)), tinystore.ErrInvalid, quoted(name))
		c.refused("once "+quoted(name), errOf(kv.OpenOnce[int](s, name)), tinystore.ErrInvalid, quoted(name))
	}
	// A name keeps its kind (KV-2).
	c.refused("texts as counters", errOf(kv.OpenCounters(s, "texts")), tinystore.ErrInvalid, "texts")
	c.refused("attempts as a bucket", errOf(kv.OpenBucket[int](s, "attempts")), tinystore.ErrInvalid, "attempts")
	c.refused("texts as a rate limit", errOf(kv.OpenRateLimit(s, "texts", kv.Rate(1, time.Second))), tinystore.ErrInvalid, "texts")
	c.done()
}

func TestKV18BadKeysAreInvalidNamingBucketAndPath(t *testing.T) {
	s := badFixture(t)
	ctx := context.Background()
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](s, "texts"))
	c := newCatalogue(t, s)
	c.refused("empty []byte key", b.Set(ctx, []byte{}, "v"), tinystore.ErrInvalid, "empty", "texts")
	c.refused("600 NULs", b.Set(ctx, make([]byte, 600), "v"), tinystore.ErrInvalid, "1024")
	// Go values that are not keys: a key is a string, a []byte or an integer.
	type point struct{ X, Y int }
	for _, bad := range []any{nil, 1.5, math.NaN(), true, point{1, 2}, []string{"k"}, map[string]int{}, &point{}, struct{}{}} {
		what := fmt.Sprintf("%T", bad)
		c.refused("a key of "+what, b.Set(ctx, bad, "v"), tinystore.ErrInvalid, "texts")
		c.refused("a key of "+what+", get", errOf2(b.Get(ctx, bad)), tinystore.ErrInvalid, "texts")
		c.refused("an owner of "+what, errOf2(b.Under(bad).Get(ctx, "k")), tinystore.ErrInvalid, "texts")
	}
	c.done()
}

func TestKV18BadValuesAreRefusedNamingThem(t *testing.T) {
	s := badFixture(t)
	ctx := context.Background()
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](s, "texts"))
	raw := must[*kv.Bucket[[]byte]](t)(kv.OpenBucket[[]byte](s, "texts"))
	numbers := must[*kv.Bucket[[]float64]](t)(kv.OpenBucket[[]float64](s, "numbers"))
	anything := must[*kv.Bucket[any]](t)(kv.OpenBucket[any](s, "numbers"))
	funcs := must[*kv.Bucket[func()]](t)(kv.OpenBucket[func()](s, "numbers"))
	chans := must[*kv.Bucket[chan int]](t)(kv.OpenBucket[chan int](s, "numbers"))
	c := newCatalogue(t, s)
	big := strings.Repeat("x", 1<<20+1)
	c.refused("a value over 1 MiB", texts.Set(ctx, "k", big), tinystore.ErrLimit, "1 MiB", "texts")
	c.refused("a value over 1 MiB, create", errOf(texts.Create(ctx, "k", big)), tinystore.ErrLimit, "1 MiB")
	c.refused("a value over 1 MiB, kept", texts.Set(ctx, "kept", big), tinystore.ErrLimit, "1 MiB", "kept")
	c.refused("bytes over 1 MiB", raw.Set(ctx, "k", make([]byte, 1<<20+1)), tinystore.ErrLimit, "1 MiB")
	c.refused("JSON over 1 MiB", anything.Set(ctx, "k", []string{big}), tinystore.ErrLimit, "1 MiB")
	c.refused("NaN inside JSON", numbers.Set(ctx, "k", []float64{1, math.NaN()}), tinystore.ErrInvalid, "NaN", "numbers")
	c.refused("+Inf inside JSON", numbers.Set(ctx, "k", []float64{math.Inf(1)}), tinystore.ErrInvalid, "numbers")
	c.refused("-Inf in an any bucket", anything.Set(ctx, "k", math.Inf(-1)), tinystore.ErrInvalid, "numbers")
	c.refused("a func in an any bucket", anything.Set(ctx, "k", func() {}), tinystore.ErrInvalid, "numbers")
	c.refused("a map keyed by a struct", anything.Set(ctx, "k", map[[2]int]int{{1, 2}: 3}), tinystore.ErrInvalid, "numbers")
	c.refused("a func bucket", funcs.Set(ctx, "k", func() {}), tinystore.ErrInvalid, "numbers")
	c.refused("a chan bucket", chans.Set(ctx, "k", make(chan int)), tinystore.ErrInvalid, "numbers")
	c.done()
}

var badDurations = []string{"", "10", "-1s", "1.5h", "1 h", " 1h", "1hr", "90mins", "30m1h", "1h1h", "NaN", "1e3s", "١٠s", "99999999999999999999w"}
var badRates = []string{"", "10", "/s", "0/s", "-1/s", "+10/s", "1.5/s", "NaN/s", "10/fortnight", "10 / s", "10/s;x", "5/0s", "99999999999999999999/s"}

func TestKV18BadDurationsAndRatesAreInvalidQuotingThem(t *testing.T) {
	s := badFixture(t)
	ctx := context.Background()
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](s, "texts"))
	c := newCatalogue(t, s)
	for _, d := range badDurations {
		c.refused("duration "+quoted(d), errOf(tinystore.ParseDuration(d)), tinystore.ErrInvalid, quoted(d))
	}
	for _, r := range badRates {
		_, _, err := tinystore.ParseRate(r)
		c.refused("rate "+quoted(r), err, tinystore.ErrInvalid, quoted(r))
	}
	c.refused("a negative ttl", errOf(kv.OpenBucket[int](s, "t0", kv.TTL(-time.Minute))), tinystore.ErrInvalid, "ttl", "negative", "t0")
	notSpan := ": a span of time is from 0 to 2^53 - 1 ms, never negative"
	c.refused("a negative ttl in the core's text", errOf(kv.OpenBucket[int](s, "t0", kv.TTL(-time.Minute))), tinystore.ErrInvalid, "ttl is -60000000000 ns"+notSpan, "(bucket t0)")
	c.refused("a negative idle", errOf(kv.OpenBucket[int](s, "t0", kv.Idle(-time.Second))), tinystore.ErrInvalid, "idle", "negative", "t0")
	c.refused("a negative keep", errOf(kv.OpenOnce[int](s, "o0", kv.Keep(-time.Hour))), tinystore.ErrInvalid, "keep", "negative", "o0")
	c.refused("a negative counters ttl", errOf(kv.OpenCounters(s, "c0", kv.TTL(-time.Hour))), tinystore.ErrInvalid, "ttl", "negative", "c0")
	c.refused("a negative flush", errOf(kv.OpenCounters(s, "c0", kv.FlushEvery(-time.Hour))), tinystore.ErrInvalid, "flush", "negative", "c0")
	c.refused("a call's negative ttl", texts.Set(ctx, "kept", "w", kv.TTL(-time.Second)), tinystore.ErrInvalid, "texts")
	c.refused("expire with a negative ttl", errOf(texts.Expire(ctx, "kept", kv.TTL(-time.Second))), tinystore.ErrInvalid, "texts")
	c.refused("advance by a negative", s.Advance(-time.Second), tinystore.ErrInvalid, "the clock's step is -1000000000 ns"+notSpan)
	c.done()
}

func TestKV18BadLimitsWindowsAndCountsAreInvalidNamingThem(t *testing.T) {
	s := badFixture(t)
	ctx := context.Background()
	guesses := must[*kv.RateLimit](t)(kv.OpenRateLimit(s, "guesses", kv.Rate(5, time.Minute)))
	messages := must[*kv.Quota](t)(kv.OpenQuota(s, "messages", kv.Window("daily", 100, 24*time.Hour)))
	attempts := must[*kv.Counters](t)(kv.OpenCounters(s, "attempts"))
	_ = must[int64](t)(attempts.Add(ctx, "top", math.MaxInt64-1))
	_ = must[int64](t)(attempts.Add(ctx, "low", math.MinInt64))
	minute := time.Minute
	c := newCatalogue(t, s)
	c.refused("no rate", errOf(kv.OpenRateLimit(s, "r0")), tinystore.ErrInvalid, "needs a rate", "r0")
	c.refused("rate 0", errOf(kv.OpenRateLimit(s, "r0", kv.Rate(0, minute))), tinystore.ErrInvalid, "r0")
	c.refused("a negative rate", errOf(kv.OpenRateLimit(s, "r0", kv.Rate(-5, minute))), tinystore.ErrInvalid, "count is -5", "negative", "r0")
	c.refused("a zero span", errOf(kv.OpenRateLimit(s, "r0", kv.Rate(5, 0))), tinystore.ErrInvalid, "r0")
	c.refused("a negative span", errOf(kv.OpenRateLimit(s, "r0", kv.Rate(5, -minute))), tinystore.ErrInvalid, "span", "negative", "r0")
	c.refused("burst 0", errOf(kv.OpenRateLimit(s, "r0", kv.Rate(5, minute), kv.Burst(0))), tinystore.ErrInvalid, "r0")
	c.refused("a negative burst", errOf(kv.OpenRateLimit(s, "r0", kv.Rate(5, minute), kv.Burst(-1))), tinystore.ErrInvalid, "burst is -1", "negative", "r0")
	c.refused("AllowN -1", errOf(guesses.AllowN(ctx, "k", -1)), tinystore.ErrInvalid, "uses is -1", "negative", "guesses", "key k")
	c.refused("a quota without windows", errOf(kv.OpenQuota(s, "q0")), tinystore.ErrInvalid, "q0")
	c.refused("window empty", errOf(kv.OpenQuota(s, "q0", kv.Window("", 1, minute))), tinystore.ErrInvalid, `""`)
	c.refused("a window twice", errOf(kv.OpenQuota(s, "q0", kv.Window("day", 1, minute), kv.Window("day", 2, minute))), tinystore.ErrInvalid, `"day"`)
	c.refused("a window limit of 0", errOf(kv.OpenQuota(s, "q0", kv.Window("day", 0, minute))), tinystore.ErrInvalid, `"day"`)
	c.refused("a negative window limit", errOf(kv.OpenQuota(s, "q0", kv.Window("day", -1, minute))), tinystore.ErrInvalid, `"day" is -1`, "negative", "q0")
	c.refused("a negative window span", errOf(kv.OpenQuota(s, "q0", kv.Window("day", 1, -minute))), tinystore.ErrInvalid, "span", "negative", "q0")
	c.refused("a window under 1ms", errOf(kv.OpenQuota(s, "q0", kv.Window("day", 1, 10*time.Microsecond))), tinystore.ErrInvalid, `"day"`)
	c.refused("quota AllowN -1", errOf(messages.AllowN(ctx, "k", -1)), tinystore.ErrInvalid, "uses is -1", "messages", "key k")
	c.refused("quota RefundN -1", messages.RefundN(ctx, "k", -1), tinystore.ErrInvalid, "uses is -1", "messages", "key k")
	c.refused("a counter past int64", errOf(attempts.Add(ctx, "top", 2)), tinystore.ErrLimit, "attempts", "top")
	c.refused("a counter below int64", errOf(attempts.Add(ctx, "low", -1)), tinystore.ErrLimit, "attempts", "low")
	c.done()
	if v := must[int64](t)(attempts.Get(ctx, "top")); v != math.MaxInt64-1 {
		t.Errorf("a refused add changed the counter to %d", v)
	}
}

func TestKV18BadCallsAreInvalidAndWriteNothing(t *testing.T) {
	s := badFixture(t)
	ctx := context.Background()
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](s, "texts"))
	sends := must[*kv.Once[string]](t)(kv.OpenOnce[string](s, "sends"))
	c := newCatalogue(t, s)
	c.refused("a page of 1001", errOf(texts.List(ctx, kv.ListOptions{Limit: 1001})), tinystore.ErrInvalid, "1001", "texts")
	c.refused("a page of -1", errOf(texts.List(ctx, kv.ListOptions{Limit: -1})), tinystore.ErrInvalid, "texts")
	c.done()
	// The outer run claims the key (a write of its own); the inner run is the bad call.
	_, err := sends.Run(ctx, "k", func(ctx context.Context) (string, error) {
		inner := newCatalogue(t, s)
		inner.refused("a once run inside its own run", errOf(sends.Run(ctx, "k", func(context.Context) (string, error) {
			return "inner", nil
		})), tinystore.ErrInvalid, "sends")
		inner.done()
		return "outer", nil
	})
	ok(t, err)
}

func TestKV18AClosedStoreRefusesEveryCallAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, tinystore.Options{}))
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](s, "texts"))
	ok(t, texts.Set(ctx, "kept", "v"))
	counters := must[*kv.Counters](t)(kv.OpenCounters(s, "attempts"))
	limit := must[*kv.RateLimit](t)(kv.OpenRateLimit(s, "guesses", kv.Rate(5, time.Minute)))
	ok(t, s.Close())
	c := &catalogue{t: t, dir: dir}
	c.before = c.state()
	c.refused("get", errOf2(texts.Get(ctx, "kept")), tinystore.ErrClosed, "closed")
	c.refused("set", texts.Set(ctx, "k", "v"), tinystore.ErrClosed, "closed")
	c.refused("take", errOf2(texts.Take(ctx, "kept")), tinystore.ErrClosed, "closed")
	c.refused("list", errOf(texts.List(ctx, kv.ListOptions{})), tinystore.ErrClosed, "closed")
	c.refused("add", errOf(counters.Add(ctx, "k", 1)), tinystore.ErrClosed, "closed")
	c.refused("allow", errOf(limit.Allow(ctx, "k")), tinystore.ErrClosed, "closed")
	c.refused("a new bucket", errOf(kv.OpenBucket[int](s, "fresh")), tinystore.ErrClosed, "closed")
	c.refused("maintain", errOf(s.Maintain(ctx)), tinystore.ErrClosed, "closed")
	c.refused("a transaction", s.Tx(ctx, func(*tinystore.Tx) error { return nil }), tinystore.ErrClosed, "closed")
	c.done()
}

func TestKV18BadStorePathsAndOptionsAreRefusedNamingThem(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	ok(t, os.WriteFile(notes, []byte("mine"), 0o600))
	for _, tc := range []struct {
		what, path string
		opts       tinystore.Options
		name       string
	}{
		{"an empty path", "", tinystore.Options{}, "empty"},
		{"a path with a NUL", "a\x00b", tinystore.Options{}, "NUL"},
		{"a path that is a file", notes, tinystore.Options{}, "notes.txt"},
		{"a path inside a file", filepath.Join(notes, "store"), tinystore.Options{}, "notes.txt"},
		{"a clock without Manual", filepath.Join(dir, "s1"), tinystore.Options{Clock: time.Now}, "Manual"},
		{"negative readers", filepath.Join(dir, "s2"), tinystore.Options{Readers: -1}, "readers is -1"},
	} {
		s, err := tinystore.Open(ctx, tc.path, tc.opts)
		if err == nil {
			_ = s.Close()
			t.Errorf("%s: opened", tc.what)
			continue
		}
		if !errors.Is(err, tinystore.ErrInvalid) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: want ErrInvalid naming %q, got %v", tc.what, tc.name, err)
		}
	}
	if b, _ := os.ReadFile(notes); string(b) != "mine" {
		t.Errorf("notes.txt changed: %q", b)
	}
	for _, d := range []string{"s1", "s2"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused Open left %s behind", d)
		}
	}
	if _, err := os.Stat("kv.db"); !errors.Is(err, os.ErrNotExist) {
		t.Error("an empty path opened kv.db in the working directory")
	}
}

func TestKV18AWriteOutsideATxFromInsideItIsInvalidAtOnce(t *testing.T) {
	s := badFixture(t)
	ctx := context.Background()
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](s, "texts"))
	attempts := must[*kv.Counters](t)(kv.OpenCounters(s, "attempts"))
	messages := must[*kv.Quota](t)(kv.OpenQuota(s, "messages", kv.Window("daily", 100, 24*time.Hour)))
	sends := must[*kv.Once[string]](t)(kv.OpenOnce[string](s, "sends"))
	other, _ := openManual(t) // another store: its writer is free
	elsewhere := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](other, "texts"))
	c := newCatalogue(t, s)
	err := s.Tx(ctx, func(tx *kv.Tx) error {
		ok(t, texts.WithTx(tx).Set(ctx, "in-tx", "v"))
		// Each of these would wait for the writer this transaction holds,
		// until its ten-second limit: the transaction's own goroutine is
		// refused at once, and nothing of it is written.
		c.refused("a bucket's Set", texts.Set(ctx, "outside", "v"), tinystore.ErrInvalid, "inside a transaction", "texts")
		c.refused("a bucket's Delete", errOf(texts.Delete(ctx, "kept")), tinystore.ErrInvalid, "inside a transaction", "texts")
		c.refused("a bucket's Take", errOf2(texts.Take(ctx, "kept")), tinystore.ErrInvalid, "inside a transaction", "texts")
		c.refused("a counter's Add", errOf(attempts.Add(ctx, "kept", 1)), tinystore.ErrInvalid, "inside a transaction", "attempts")
		c.refused("a quota's Allow", errOf(messages.Allow(ctx, "kept")), tinystore.ErrInvalid, "inside a transaction", "messages")
		c.refused("a run of once", errOf(sends.Run(ctx, "k", func(context.Context) (string, error) { return "sent", nil })),
			tinystore.ErrInvalid, "inside a transaction", "sends")
		c.refused("a Tx inside a Tx", s.Tx(ctx, func(*kv.Tx) error { return nil }), tinystore.ErrInvalid, "transaction")
		// Reads outside the transaction and writes to another store go on.
		if v, found := get(t, texts, "kept"); !found || v != "v" {
			t.Errorf("a read outside the transaction: %q %v", v, found)
		}
		ok(t, elsewhere.Set(ctx, "k", "v"))
		ok(t, other.Tx(ctx, func(tx2 *kv.Tx) error { return elsewhere.WithTx(tx2).Set(ctx, "k2", "v") }))
		return nil
	})
	ok(t, err)
	// The transaction committed; the refused writes never landed.
	if v, found := get(t, texts, "in-tx"); !found || v != "v" {
		t.Fatalf("the transaction's write: %q %v", v, found)
	}
	if _, found := get(t, texts, "outside"); found {
		t.Error("a refused write landed after the transaction")
	}
	if v, found := get(t, texts, "kept"); !found || v != "v" {
		t.Errorf("a refused delete or take landed: %q %v", v, found)
	}
	if n := must[int64](t)(attempts.Get(ctx, "kept")); n != 1 {
		t.Errorf("a refused add landed: %d", n)
	}
	// After the transaction, the same goroutine writes as usual.
	ok(t, texts.Set(ctx, "after", "v"))
	ok(t, s.Tx(ctx, func(tx *kv.Tx) error { return texts.WithTx(tx).Set(ctx, "after-tx", "v") }))
	if c.count == 0 {
		t.Error("no case ran")
	}
}
