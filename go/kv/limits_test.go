package kv_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

func TestKV02ANameKeepsItsKind(t *testing.T) {
	store, _ := openManual(t)
	_ = must[*kv.Counters](t)(kv.OpenCounters(store, "attempts"))
	_, err := kv.OpenBucket[string](store, "attempts")
	isKind(t, err, tinystore.ErrInvalid)
	_, err = kv.OpenRateLimit(store, "attempts", kv.Rate(1, time.Second))
	isKind(t, err, tinystore.ErrInvalid)
	_, err = kv.OpenQuota(store, "attempts", kv.Window("day", 1, time.Hour))
	isKind(t, err, tinystore.ErrInvalid)
	_, err = kv.OpenOnce[string](store, "attempts")
	isKind(t, err, tinystore.ErrInvalid)
}

func TestKV11OnceRunsTheFunctionOnceForRacingCallers(t *testing.T) {
	store, _ := openManual(t)
	type sent struct {
		ID int64 `json:"id"`
	}
	sends := must[*kv.Once[sent]](t)(kv.OpenOnce[sent](store, "sends", kv.Keep(24*time.Hour)))
	var runs atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	var wg, calling sync.WaitGroup
	answers := make(chan sent, 16)
	for range 16 {
		wg.Add(1)
		calling.Add(1)
		go func() {
			defer wg.Done()
			calling.Done()
			got, err := sends.Run(ctx, "k7q2", func(ctx context.Context) (sent, error) {
				if runs.Add(1) == 1 {
					close(started)
				}
				<-release
				return sent{ID: 41}, nil
			})
			if err != nil {
				t.Error(err)
			}
			answers <- got
		}()
	}
	// The first run holds the key until release, while every caller calls
	// Run: each finds the key running, or once released, its answer kept.
	<-started
	calling.Wait()
	close(release)
	wg.Wait()
	close(answers)
	for got := range answers {
		if got.ID != 41 {
			t.Fatalf("a caller got %+v, want the first run's answer", got)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the function ran %d times, want once", n)
	}
	if got, found, err := sends.Get(ctx, "k7q2"); err != nil || !found || got.ID != 41 {
		t.Fatalf("Get reads %+v %v %v", got, found, err)
	}
	if !must[bool](t)(sends.Delete(ctx, "k7q2")) {
		t.Fatal("Delete found no answer")
	}
	again := must[sent](t)(sends.Run(ctx, "k7q2", func(context.Context) (sent, error) { return sent{ID: 42}, nil }))
	if again.ID != 42 {
		t.Fatalf("after Delete, Run answered %+v without running", again)
	}
}

func TestKV11AnErrorKeepsNothingAndAPanicLetsGo(t *testing.T) {
	store, _ := openManual(t)
	once := must[*kv.Once[string]](t)(kv.OpenOnce[string](store, "charges"))
	boom := errors.New("the database was down")
	_, err := once.Run(ctx, "r1", func(context.Context) (string, error) { return "", boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Run returned %v, want the function's error", err)
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = once.Run(ctx, "r1", func(context.Context) (string, error) { panic("card reader on fire") })
	}()
	got := must[string](t)(once.Run(ctx, "r1", func(context.Context) (string, error) { return "receipt", nil }))
	if got != "receipt" {
		t.Fatalf("after an error and a panic, Run answered %q", got)
	}
}

func TestKV11ARunInsideItsOwnRunIsInvalid(t *testing.T) {
	store, _ := openManual(t)
	once := must[*kv.Once[int]](t)(kv.OpenOnce[int](store, "nested"))
	_, err := once.Run(ctx, "k", func(ctx context.Context) (int, error) {
		return once.Run(ctx, "k", func(context.Context) (int, error) { return 1, nil })
	})
	keyError(t, err, tinystore.ErrInvalid, "nested", "k")
	n := must[int](t)(once.Under("a").Run(ctx, "k", func(ctx context.Context) (int, error) {
		return once.Under("b").Run(ctx, "k", func(context.Context) (int, error) { return 7, nil })
	}))
	if n != 7 {
		t.Fatalf("a run of another branch's key inside a run answered %d", n)
	}
}

func TestKV11AWaiterWhoseContextEndsStopsWaiting(t *testing.T) {
	store, _ := openManual(t)
	once := must[*kv.Once[int]](t)(kv.OpenOnce[int](store, "slow"))
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := once.Run(ctx, "k", func(context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil
		})
		done <- err
	}()
	<-started
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err := once.Run(short, "k", func(context.Context) (int, error) { return 2, nil })
	if !errors.Is(err, tinystore.ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiter whose context ended got %v", err)
	}
	close(release)
	ok(t, <-done)
	if got, _, err := once.Get(ctx, "k"); err != nil || got != 1 {
		t.Fatalf("the first run's answer is %d (%v)", got, err)
	}
}

func TestKV12RateLimitLetsTheBurstThroughThenRefills(t *testing.T) {
	store, clock := openManual(t)
	guesses := must[*kv.RateLimit](t)(kv.OpenRateLimit(store, "sign-in-guesses", kv.Rate(5, time.Minute), kv.Burst(5)))
	for i := range 5 {
		a := must[kv.Allowance](t)(guesses.Allow(ctx, "10.0.0.1"))
		if !a.OK || a.Left != int64(4-i) {
			t.Fatalf("try %d: %+v", i+1, a)
		}
	}
	refused := must[kv.Allowance](t)(guesses.Allow(ctx, "10.0.0.1"))
	if refused.OK || !refused.RetryAt.Equal(clock.Now().Add(12*time.Second)) {
		t.Fatalf("the sixth try: %+v, want a refusal until 12s from now", refused)
	}
	if a := must[kv.Allowance](t)(guesses.Allow(ctx, "10.0.0.2")); !a.OK {
		t.Fatal("another key was refused")
	}
	clock.Advance(12 * time.Second)
	if a := must[kv.Allowance](t)(guesses.Peek(ctx, "10.0.0.1")); !a.OK {
		t.Fatalf("at retryAt a peek says %+v", a)
	}
	_, err := guesses.AllowN(ctx, "10.0.0.1", 6)
	keyError(t, err, tinystore.ErrInvalid, "sign-in-guesses", "10.0.0.1")
	ok(t, guesses.Reset(ctx, "10.0.0.1"))
	if a := must[kv.Allowance](t)(guesses.AllowN(ctx, "10.0.0.1", 5)); !a.OK {
		t.Fatalf("after Reset the full burst was refused: %+v", a)
	}
	_, err = kv.OpenRateLimit(store, "no-rate")
	isKind(t, err, tinystore.ErrInvalid)
}

func TestKV12StateSurvivesAReopen(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)
	opts := tinystore.Options{Manual: true, Clock: func() time.Time { return now }}
	store := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, opts))
	limit := must[*kv.RateLimit](t)(kv.OpenRateLimit(store, "api", kv.Rate(2, time.Hour)))
	for range 2 {
		_ = must[kv.Allowance](t)(limit.Allow(ctx, "tenant"))
	}
	ok(t, store.Close())
	store = must[*tinystore.Store](t)(tinystore.Open(ctx, dir, opts))
	defer store.Close()
	limit = must[*kv.RateLimit](t)(kv.OpenRateLimit(store, "api", kv.Rate(2, time.Hour)))
	if a := must[kv.Allowance](t)(limit.Allow(ctx, "tenant")); a.OK {
		t.Fatal("a reopen forgot the requests counted before Close")
	}
}

func TestKV13QuotaCountsInEveryWindowOrNone(t *testing.T) {
	store, clock := openManual(t)
	messages := must[*kv.Quota](t)(kv.OpenQuota(store, "messages",
		kv.Window("session", 3, 5*time.Hour), kv.Window("weekly", 4, 7*24*time.Hour)))
	for range 3 {
		if a := must[kv.Allowance](t)(messages.Allow(ctx, 7)); !a.OK {
			t.Fatalf("a use under both limits was refused: %+v", a)
		}
	}
	start := clock.Now()
	refused := must[kv.Allowance](t)(messages.Allow(ctx, "7"))
	if refused.OK || !refused.RetryAt.Equal(start.Add(5*time.Hour)) {
		t.Fatalf("the fourth use: %+v, want a refusal until the session window resets", refused)
	}
	weekly := refused.Windows["weekly"]
	if weekly.Used != 3 || weekly.Limit != 4 || weekly.Left != 1 || !weekly.ResetsAt.Equal(start.Add(7*24*time.Hour)) {
		t.Fatalf("weekly window: %+v", weekly)
	}
	if refused.Left != 0 || refused.Windows["session"].Left != 0 {
		t.Fatalf("left: %d, session %+v", refused.Left, refused.Windows["session"])
	}
	ok(t, messages.Refund(ctx, 7))
	if a := must[kv.Allowance](t)(messages.Peek(ctx, 7)); !a.OK || a.Windows["weekly"].Used != 2 {
		t.Fatalf("after a refund: %+v", a)
	}
	clock.Advance(5 * time.Hour) // the session window resets; the weekly one has 2 left
	if a := must[kv.Allowance](t)(messages.AllowN(ctx, 7, 2)); !a.OK || a.Windows["session"].Used != 2 {
		t.Fatalf("2 uses with 2 left in the week: %+v", a)
	}
	if a := must[kv.Allowance](t)(messages.Allow(ctx, 7)); a.OK || a.Windows["session"].Used != 2 {
		t.Fatalf("a use refused by the weekly window: %+v, want the session window left at 2", a)
	}
	_, err := messages.AllowN(ctx, 7, 4)
	keyError(t, err, tinystore.ErrInvalid, "messages", "7")
	ok(t, messages.Reset(ctx, 7))
	if a := must[kv.Allowance](t)(messages.AllowN(ctx, 7, 3)); !a.OK {
		t.Fatalf("after Reset: %+v", a)
	}
	for _, bad := range [][]kv.QuotaOption{nil, {kv.Window("Bad", 1, time.Hour)}, {kv.Window("x", -1, time.Hour)}} {
		_, err := kv.OpenQuota(store, "bad-quota", bad...)
		isKind(t, err, tinystore.ErrInvalid)
	}
}

func TestKV13RacingAllowsPassExactlyTheLimit(t *testing.T) {
	store, _ := openManual(t)
	quota := must[*kv.Quota](t)(kv.OpenQuota(store, "race", kv.Window("day", 10, 24*time.Hour)))
	var passed atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := quota.Allow(ctx, "k")
			if err != nil {
				t.Error(err)
			}
			if a.OK {
				passed.Add(1)
			}
		}()
	}
	wg.Wait()
	if passed.Load() != 10 {
		t.Fatalf("%d of 32 racing uses passed a limit of 10", passed.Load())
	}
}

func TestKV14CountersAddMaxAndExpireWithoutSliding(t *testing.T) {
	store, clock := openManual(t)
	attempts := must[*kv.Counters](t)(kv.OpenCounters(store, "attempts", kv.TTL(15*time.Minute)))
	if n := must[int64](t)(attempts.Get(ctx, "ip")); n != 0 {
		t.Fatalf("a missing counter reads %d", n)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := attempts.Under("ip").Add(ctx, "10.0.0.1", 1); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := must[int64](t)(attempts.Under("ip").Get(ctx, "10.0.0.1")); n != 50 {
		t.Fatalf("50 racing adds counted %d", n)
	}
	if n := must[int64](t)(attempts.Under("ip").Max(ctx, "10.0.0.1", 20)); n != 50 {
		t.Fatalf("Max of 50 and 20 is %d", n)
	}
	clock.Advance(10 * time.Minute)
	_ = must[int64](t)(attempts.Under("ip").Add(ctx, "10.0.0.1", 1))
	clock.Advance(6 * time.Minute)
	if n := must[int64](t)(attempts.Under("ip").Get(ctx, "10.0.0.1")); n != 0 {
		t.Fatalf("the counter slid with its adds: %d", n)
	}
	_ = must[int64](t)(attempts.Add(ctx, "big", math.MaxInt64))
	_, err := attempts.Add(ctx, "big", 1)
	keyError(t, err, tinystore.ErrLimit, "attempts", "big")
	if n := must[int64](t)(attempts.Get(ctx, "big")); n != math.MaxInt64 {
		t.Fatalf("an add past int64 changed the counter to %d", n)
	}
	ok(t, attempts.Under("ip").Clear(ctx))
	if !must[bool](t)(attempts.Delete(ctx, "big")) {
		t.Fatal("Delete of a live counter said it was absent")
	}
}

func TestKV14FlushEveryCountersReachTheFileOnMaintain(t *testing.T) {
	store, _ := openManual(t)
	hits := must[*kv.Counters](t)(kv.OpenCounters(store, "hits", kv.FlushEvery(time.Second)))
	for range 3 {
		_ = must[int64](t)(hits.Add(ctx, "/", 1))
	}
	m := must[tinystore.Maintenance](t)(store.Maintain(ctx))
	if m.Flushed != 1 {
		t.Fatalf("Maintain flushed %d keys, want 1", m.Flushed)
	}
	_, err := kv.OpenCounters(store, "hits")
	isKind(t, err, tinystore.ErrInvalid)
	raw := must[*kv.Counters](t)(kv.OpenCounters(store, "hits", kv.FlushEvery(time.Second)))
	if n := must[int64](t)(raw.Get(ctx, "/")); n != 3 {
		t.Fatalf("the counter reads %d", n)
	}
}
