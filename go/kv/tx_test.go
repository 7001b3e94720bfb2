package kv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/native"
	"tinyshed.org/tinystore/kv"
)

func TestKV16TxCommitsEveryHandleTogether(t *testing.T) {
	store, _ := openManual(t)
	stock := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "stock"))
	orders := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "orders"))
	ok(t, stock.Set(ctx, "apples", 3))
	err := store.Tx(ctx, func(tx *kv.Tx) error {
		left, found, err := stock.WithTx(tx).Take(ctx, "apples")
		if err != nil || !found || left != 3 {
			t.Fatalf("Take in the transaction: %v %v %v, want 3", left, found, err)
		}
		if _, found := get(t, stock.WithTx(tx), "apples"); found {
			t.Fatal("the transaction does not see its own take")
		}
		ok(t, orders.Under("ada").WithTx(tx).Set(ctx, "o-1", "apples"))
		if v, found := get(t, orders.Under("ada").WithTx(tx), "o-1"); !found || v != "apples" {
			t.Fatalf("the transaction does not see its own set: %q %v", v, found)
		}
		if v, _ := get(t, stock, "apples"); v != 3 {
			t.Fatalf("another caller sees the take before the commit: %d", v)
		}
		if _, found := get(t, orders.Under("ada"), "o-1"); found {
			t.Fatal("another caller sees the set before the commit")
		}
		return nil
	})
	ok(t, err)
	if _, found := get(t, stock, "apples"); found {
		t.Fatal("the committed take did not delete")
	}
	if v, _ := get(t, orders.Under("ada"), "o-1"); v != "apples" {
		t.Fatalf("the committed set is missing: %q", v)
	}
}

func TestKV16TxErrorOrPanicRollsEverythingBack(t *testing.T) {
	store, _ := openManual(t)
	stock := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "stock"))
	orders := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "orders"))
	ok(t, stock.Set(ctx, "apples", 1))
	outOfStock := errors.New("out of stock")
	write := func(tx *kv.Tx) {
		_, _, err := stock.WithTx(tx).Take(ctx, "apples")
		ok(t, err)
		ok(t, orders.WithTx(tx).Set(ctx, "o-1", "apples"))
		ok(t, orders.WithTx(tx).Clear(ctx))
		ok(t, orders.WithTx(tx).Set(ctx, "o-2", "apples"))
	}
	err := store.Tx(ctx, func(tx *kv.Tx) error {
		write(tx)
		return outOfStock
	})
	if !errors.Is(err, outOfStock) {
		t.Fatalf("Tx answered %v, want the function's own error", err)
	}
	func() {
		defer func() {
			if p := recover(); p != outOfStock {
				t.Fatalf("the panic reached the caller as %v", p)
			}
		}()
		_ = store.Tx(ctx, func(tx *kv.Tx) error {
			write(tx)
			panic(outOfStock)
		})
	}()
	if v, _ := get(t, stock, "apples"); v != 1 {
		t.Fatalf("a rolled back take deleted: %d", v)
	}
	if page := must[kv.Page[string]](t)(orders.List(ctx, kv.ListOptions{})); len(page.Entries) != 0 {
		t.Fatalf("rolled back sets are there: %+v", page.Entries)
	}
	ok(t, orders.Set(ctx, "after", "x")) // the writer is free again
}

func TestKV16TxConflictInsideIsTheCallersToHandle(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "b"))
	old := must[kv.Version](t)(b.SetVersion(ctx, "k", 1))
	ok(t, b.Set(ctx, "k", 2))
	err := store.Tx(ctx, func(tx *kv.Tx) error {
		_, err := b.WithTx(tx).Delete(ctx, "k", kv.IfVersion(old))
		keyError(t, err, tinystore.ErrConflict, "b", "k")
		created, err := b.WithTx(tx).Create(ctx, "j", 5)
		if err != nil || !created {
			t.Fatalf("Create in the transaction: %v %v", created, err)
		}
		page, err := b.WithTx(tx).List(ctx, kv.ListOptions{})
		if err != nil || len(page.Entries) != 2 {
			t.Fatalf("List in the transaction: %+v %v, want k and j", page.Entries, err)
		}
		return nil
	})
	ok(t, err)
	if v, _ := get(t, b, "j"); v != 5 {
		t.Fatal("a write after a conflict in the same transaction was lost")
	}
}

func TestKV16TxTakeOfAValueThatDoesNotDecodeIsCorruptAndStays(t *testing.T) {
	store, _ := openManual(t)
	wide := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "levels"))
	narrow := must[*kv.Bucket[int8]](t)(kv.OpenBucket[int8](store, "levels"))
	ok(t, wide.Set(ctx, "k", 1000))
	ok(t, store.Tx(ctx, func(tx *kv.Tx) error {
		_, _, err := narrow.WithTx(tx).Take(ctx, "k")
		keyError(t, err, tinystore.ErrCorrupt, "levels", "k")
		return nil // commits what the transaction did: nothing
	}))
	if v, found := get(t, wide, "k"); !found || v != 1000 {
		t.Fatalf("the value that did not decode moved: %d %v", v, found)
	}
}

func TestKV16HandleUsedAfterItsTransactionIsClosed(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "b"))
	var inTx, inView *kv.Bucket[string]
	ok(t, store.Tx(ctx, func(tx *kv.Tx) error {
		inTx = b.WithTx(tx)
		return inTx.Set(ctx, "k", "v")
	}))
	ok(t, store.View(ctx, func(v *kv.View) error {
		inView = b.WithView(v)
		_, _, err := inView.Get(ctx, "k")
		return err
	}))
	for name, h := range map[string]*kv.Bucket[string]{"transaction": inTx, "view": inView} {
		ended := func(err error) {
			t.Helper()
			says(t, err, tinystore.ErrClosed, "the "+name+" has ended: use its handles inside its function")
		}
		_, _, err := h.Get(ctx, "k")
		ended(err)
		_, err = h.List(ctx, kv.ListOptions{})
		ended(err)
		if name == "transaction" {
			ended(h.Set(ctx, "k", "late"))
		}
	}
	if v, _ := get(t, b, "k"); v != "v" {
		t.Fatalf("a late call wrote: %q", v)
	}
}

func TestKV16ViewReadsOneSnapshotAndRefusesWrites(t *testing.T) {
	store, _, b := openWithInt(t, "a", 1)
	err := store.View(ctx, func(v *kv.View) error {
		if x, _ := get(t, b.WithView(v), "a"); x != 1 {
			t.Fatalf("the view reads %d", x)
		}
		ok(t, b.Set(ctx, "a", 2))
		ok(t, b.Set(ctx, "c", 3))
		if x, _ := get(t, b.WithView(v), "a"); x != 1 {
			t.Fatalf("the view sees a later commit: %d", x)
		}
		n := 0
		for _, err := range b.WithView(v).All(ctx) {
			ok(t, err)
			n++
		}
		if n != 1 {
			t.Fatalf("the view lists %d keys, want the 1 of its snapshot", n)
		}
		keyError(t, b.WithView(v).Set(ctx, "a", 9), tinystore.ErrInvalid, "b", "a")
		_, _, err := b.Under("u").WithView(v).Take(ctx, "a")
		keyError(t, err, tinystore.ErrInvalid, "b", "u/a")
		isKind(t, b.WithView(v).Clear(ctx), tinystore.ErrInvalid)
		return nil
	})
	ok(t, err)
	if x, _ := get(t, b, "a"); x != 2 {
		t.Fatalf("after the view: %d, want 2", x)
	}
}

func TestKV16TxWithAnEndedContextWritesNothing(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "b"))
	done, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	err := store.Tx(done, func(tx *kv.Tx) error { ran = true; return nil })
	if !errors.Is(err, tinystore.ErrCancelled) || !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("Tx with an ended context: %v (ran %v), want ErrCancelled before fn", err, ran)
	}
	says(t, err, tinystore.ErrCancelled, "the caller gave up before the call started; nothing was written")
	live, stop := context.WithCancel(ctx)
	err = store.Tx(live, func(tx *kv.Tx) error {
		ok(t, b.WithTx(tx).Set(ctx, "k", "v"))
		stop() // the caller gives up before the commit
		return nil
	})
	if !errors.Is(err, tinystore.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Tx whose context ended before the commit: %v, want ErrCancelled and context.Canceled", err)
	}
	says(t, err, tinystore.ErrCancelled, "the caller gave up before the transaction committed; nothing was written")
	if _, found := get(t, b, "k"); found {
		t.Fatal("a transaction whose caller gave up wrote")
	}
}

func TestKV15AFailedGroupCommitIsOutcomeUnknown(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "b"))
	ok(t, (*native.Store)(store).FailNextCommitForTests())
	isKind(t, b.Set(ctx, "k", "v"), tinystore.ErrOutcomeUnknown)
	ok(t, (*native.Store)(store).FailNextCommitForTests())
	err := store.Tx(ctx, func(tx *kv.Tx) error { return b.WithTx(tx).Set(ctx, "t", "v") })
	isKind(t, err, tinystore.ErrOutcomeUnknown)
	ok(t, b.Set(ctx, "k", "again")) // the next group commits
	if v, _ := get(t, b, "k"); v != "again" {
		t.Fatalf("after a failed commit: %q", v)
	}
}

func TestKV16TxWaitingForTheWriterGivesUpWhenItsContextEnds(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "b"))
	release, first := holdWriter(store, func(tx *kv.Tx) error { return b.WithTx(tx).Set(ctx, "first", "v") })
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	ran := false
	err := store.Tx(short, func(tx *kv.Tx) error { ran = true; return nil })
	if !errors.Is(err, tinystore.ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Fatalf("a Tx that gave up waiting: %v (ran %v), want ErrCancelled without running", err, ran)
	}
	says(t, err, tinystore.ErrCancelled, "the caller gave up before the call started; nothing was written")
	close(release)
	ok(t, <-first)
	if v, _ := get(t, b, "first"); v != "v" {
		t.Fatal("the transaction that held the writer did not commit")
	}
}
