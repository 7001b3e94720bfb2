package kv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

type kinds struct {
	codes    *kv.Bucket[string]
	attempts *kv.Counters
	plan     *kv.Quota
	sends    *kv.Once[string]
}

func openKinds(t *testing.T, store *tinystore.Store) kinds {
	t.Helper()
	return kinds{
		codes:    must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "codes")),
		attempts: must[*kv.Counters](t)(kv.OpenCounters(store, "attempts")),
		plan:     must[*kv.Quota](t)(kv.OpenQuota(store, "messages", kv.Window("daily", 2, 24*time.Hour))),
		sends:    must[*kv.Once[string]](t)(kv.OpenOnce[string](store, "sends")),
	}
}

func (k kinds) stillWrite(t *testing.T) {
	t.Helper()
	ok(t, k.codes.Set(ctx, "after", "x"))
	_, err := k.attempts.Add(ctx, "after", 1)
	ok(t, err)
	_, err = k.plan.Allow(ctx, "after")
	ok(t, err)
	_, err = k.sends.Run(ctx, "after", func(context.Context) (string, error) { return "y", nil })
	ok(t, err)
}

func TestKV16TxCommitsATakeACountAUseAndAnAnswerTogether(t *testing.T) {
	store, _ := openManual(t)
	k := openKinds(t, store)
	ok(t, k.codes.Set(ctx, "c-1", "ada"))
	_, err := k.sends.Run(ctx, "old", func(context.Context) (string, error) { return "kept", nil })
	ok(t, err)
	ok(t, store.Tx(ctx, func(tx *kv.Tx) error {
		if user, found, err := k.codes.WithTx(tx).Take(ctx, "c-1"); err != nil || !found || user != "ada" {
			t.Fatalf("take: %q %v %v", user, found, err)
		}
		if n, err := k.attempts.WithTx(tx).Add(ctx, "ada", 1); err != nil || n != 1 {
			t.Fatalf("add: %d %v", n, err)
		}
		if n, err := k.attempts.WithTx(tx).Max(ctx, "ada", 4); err != nil || n != 4 {
			t.Fatalf("max: %d %v", n, err)
		}
		if n, err := k.attempts.WithTx(tx).Get(ctx, "ada"); err != nil || n != 4 {
			t.Fatalf("the transaction does not see its own add: %d %v", n, err)
		}
		if a, err := k.plan.WithTx(tx).Allow(ctx, "ada"); err != nil || !a.OK || a.Left != 1 {
			t.Fatalf("allow: %+v %v", a, err)
		}
		if a, err := k.plan.WithTx(tx).Peek(ctx, "ada"); err != nil || a.Left != 1 {
			t.Fatalf("the transaction does not see its own use: %+v %v", a, err)
		}
		if v, found, err := k.sends.WithTx(tx).Get(ctx, "old"); err != nil || !found || v != "kept" {
			t.Fatalf("once get: %q %v %v", v, found, err)
		}
		if was, err := k.sends.WithTx(tx).Delete(ctx, "old"); err != nil || !was {
			t.Fatalf("once delete: %v %v", was, err)
		}
		if n, _ := k.attempts.Get(ctx, "ada"); n != 0 {
			t.Fatalf("another caller sees the add before the commit: %d", n)
		}
		return nil
	}))
	if n, _ := k.attempts.Get(ctx, "ada"); n != 4 {
		t.Fatalf("the committed count is %d", n)
	}
	if a, _ := k.plan.Peek(ctx, "ada"); a.Left != 1 {
		t.Fatalf("the committed use is missing: %+v", a)
	}
	if _, found, _ := k.sends.Get(ctx, "old"); found {
		t.Fatal("the committed delete of the answer is missing")
	}
	k.stillWrite(t)
}

func TestKV16AnErrorOrAPanicRollsBackEveryKind(t *testing.T) {
	store, _ := openManual(t)
	k := openKinds(t, store)
	_, err := k.attempts.Add(ctx, "ada", 5)
	ok(t, err)
	_, err = k.sends.Run(ctx, "old", func(context.Context) (string, error) { return "kept", nil })
	ok(t, err)
	declined := errors.New("declined")
	write := func(tx *kv.Tx) {
		_, err := k.attempts.WithTx(tx).Add(ctx, "ada", 1)
		ok(t, err)
		_, err = k.attempts.WithTx(tx).Delete(ctx, "ada")
		ok(t, err)
		_, err = k.plan.WithTx(tx).AllowN(ctx, "ada", 2)
		ok(t, err)
		ok(t, k.plan.WithTx(tx).Refund(ctx, "ada"))
		ok(t, k.plan.WithTx(tx).Reset(ctx, "ada"))
		_, err = k.sends.WithTx(tx).Delete(ctx, "old")
		ok(t, err)
	}
	if err := store.Tx(ctx, func(tx *kv.Tx) error { write(tx); return declined }); !errors.Is(err, declined) {
		t.Fatalf("Tx answered %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = store.Tx(ctx, func(tx *kv.Tx) error { write(tx); panic(declined) })
	}()
	if n, _ := k.attempts.Get(ctx, "ada"); n != 5 {
		t.Fatalf("a rolled back add stayed: %d", n)
	}
	if a, _ := k.plan.Peek(ctx, "ada"); a.Left != 2 {
		t.Fatalf("a rolled back use stayed: %+v", a)
	}
	if v, _, _ := k.sends.Get(ctx, "old"); v != "kept" {
		t.Fatalf("a rolled back delete of the answer stayed: %q", v)
	}
	k.stillWrite(t)
}

func TestKV16WhatKeepsItsStateInMemoryIsInvalidInsideTxSayingWhy(t *testing.T) {
	store, _ := openManual(t)
	k := openKinds(t, store)
	hits := must[*kv.Counters](t)(kv.OpenCounters(store, "hits", kv.FlushEvery(time.Second)))
	logins := must[*kv.RateLimit](t)(kv.OpenRateLimit(store, "logins", kv.Rate(5, time.Minute)))
	err := store.Tx(ctx, func(tx *kv.Tx) error {
		ok(t, k.codes.WithTx(tx).Set(ctx, "inside", "x"))
		_, err := hits.WithTx(tx).Add(ctx, "k", 1)
		refused(t, err, "flush_every", "hits")
		isKind(t, err, tinystore.ErrInvalid)
		_, err = logins.WithTx(tx).Allow(ctx, "k")
		refused(t, err, "rate limit keeps its state in memory", "logins")
		isKind(t, err, tinystore.ErrInvalid)
		_, err = k.sends.Run(ctx, "k", func(context.Context) (string, error) { return "x", nil })
		refused(t, err, "once.run cannot run inside a transaction", "sends")
		isKind(t, err, tinystore.ErrInvalid)
		_, err = k.attempts.Add(ctx, "k", 1)
		refused(t, err, "inside a transaction through a handle outside it", "attempts")
		isKind(t, err, tinystore.ErrInvalid)
		return err
	})
	isKind(t, err, tinystore.ErrInvalid)
	if _, found := get(t, k.codes, "inside"); found {
		t.Fatal("the refused transaction's write stayed")
	}
	_, err = hits.Add(ctx, "k", 1)
	ok(t, err)
	_, err = logins.Allow(ctx, "k")
	ok(t, err)
	k.stillWrite(t)
}

// refused fails unless err says why and names name (its kind is the caller's to check).
func refused(t *testing.T, err error, why, name string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one saying %q", why)
	}
	if !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), name) {
		t.Fatalf("the refusal %q does not say %q of %q", err, why, name)
	}
}

func TestKV16AViewHoldsItsSnapshotAtMostFiveSeconds(t *testing.T) {
	store, clock, b := openWithInt(t, "k", 1)
	err := store.View(ctx, func(v *kv.View) error {
		if got, _ := get(t, b.WithView(v), "k"); got != 1 {
			t.Fatalf("the view read %d", got)
		}
		clock.Advance(5*time.Second + time.Millisecond)
		_, _, err := b.WithView(v).Get(ctx, "k")
		return err
	})
	refused(t, err, "open longer than 5s", "b")
	isKind(t, err, tinystore.ErrLimit)
	ok(t, store.View(ctx, func(v *kv.View) error {
		_, _, err := b.WithView(v).Get(ctx, "k")
		return err
	}))
	ok(t, b.Set(ctx, "k", 2))
}
