package kv_test

// The memory budget (tinystore.Options.Memory): calls hold the
// memory of their values, wait their turn while it is spent, and inside a
// transaction take what is free or are ErrLimit at once.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

const mib = 1 << 20

// openBudgeted opens a Manual store with a memory budget of memory bytes.
func openBudgeted(t *testing.T, memory int64) *tinystore.Store {
	t.Helper()
	clock := &testClock{now: time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)}
	store, err := tinystore.Open(ctx, t.TempDir(), tinystore.Options{Manual: true, Clock: clock.Now, Memory: memory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

func TestMemoryBadBudgetIsInvalidAndOpensNothing(t *testing.T) {
	dir := t.TempDir()
	store := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, tinystore.Options{}))
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "texts"))
	ok(t, texts.Set(ctx, "k", "v"))
	ok(t, store.Close())
	before := must[[]byte](t)(os.ReadFile(filepath.Join(dir, "kv.db")))
	never := filepath.Join(t.TempDir(), "never")
	for _, memory := range []int64{-1, -mib, 1, mib - 1} {
		for _, at := range []string{dir, never} {
			s, err := tinystore.Open(ctx, at, tinystore.Options{Memory: memory})
			if err == nil {
				_ = s.Close()
				t.Fatalf("Memory %d opened %s", memory, at)
			}
			if !errors.Is(err, tinystore.ErrInvalid) || !strings.Contains(strings.ToLower(err.Error()), "memory") {
				t.Fatalf("Memory %d: %v, want ErrInvalid naming the memory budget", memory, err)
			}
		}
	}
	if after := must[[]byte](t)(os.ReadFile(filepath.Join(dir, "kv.db"))); !bytes.Equal(before, after) {
		t.Fatal("a refused open changed kv.db")
	}
	if _, err := os.Stat(never); !os.IsNotExist(err) {
		t.Fatalf("a refused open created its directory: %v", err)
	}
	store = must[*tinystore.Store](t)(tinystore.Open(ctx, dir, tinystore.Options{Memory: mib}))
	defer store.Close()
	texts = must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "texts"))
	if v, found := get(t, texts, "k"); !found || v != "v" {
		t.Fatalf("under a budget of 1 MiB: %q %v, want v", v, found)
	}
}

func TestMemoryInsideTxACallTheBudgetCannotCoverIsLimitAtOnce(t *testing.T) {
	store := openBudgeted(t, mib)
	blobs := must[*kv.Bucket[[]byte]](t)(kv.OpenBucket[[]byte](store, "blobs"))
	ok(t, blobs.Set(ctx, "k", []byte{1}))
	outside := make(chan error, 1)
	err := store.Tx(ctx, func(tx *kv.Tx) error {
		// A write from outside holds its 600 KB until it commits, which is
		// after this transaction: a call in here that waited for that memory
		// would wait for itself.
		go func() { outside <- blobs.Set(ctx, "big", bytes.Repeat([]byte{2}, 600_000)) }()
		// The outside write takes its memory when its goroutine runs:
		// until then the read has what it needs.
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, _, err := blobs.WithTx(tx).Get(ctx, "k")
			if errors.Is(err, tinystore.ErrLimit) {
				if !strings.Contains(err.Error(), "run the transaction again") {
					t.Errorf("the Limit does not say what to do: %v", err)
				}
				break
			}
			if err != nil {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the read inside the transaction never met the outside write's memory")
			}
		}
		if err := blobs.WithTx(tx).Set(ctx, "small", make([]byte, 700_000)); !errors.Is(err, tinystore.ErrLimit) {
			t.Errorf("a write the budget cannot hold now: %v, want ErrLimit", err)
		}
		return nil
	})
	ok(t, err)
	ok(t, <-outside)
	if v, _ := get(t, blobs, "big"); len(v) != 600_000 {
		t.Fatalf("the outside write: %d bytes, want 600000", len(v))
	}
	if _, found := get(t, blobs, "small"); found {
		t.Fatal("the refused write wrote its value")
	}
	// With the outside write committed, the same read has its memory.
	ok(t, store.Tx(ctx, func(tx *kv.Tx) error {
		_, _, err := blobs.WithTx(tx).Get(ctx, "k")
		return err
	}))
}

func TestMemoryManyWritersOfLargeValuesAllFinishUnderASmallBudget(t *testing.T) {
	store := openBudgeted(t, 2*mib)
	blobs := must[*kv.Bucket[[]byte]](t)(kv.OpenBucket[[]byte](store, "blobs"))
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 600_000) }
	// 32 writes of 600 KB are 19 MB against a budget of 2 MiB: they wait
	// their turn rather than fail, and the readers beside them too.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- blobs.Set(ctx, fmt.Sprintf("k%d", i), value(i))
		}()
		go func() {
			defer wg.Done()
			_, _, err := blobs.Get(ctx, fmt.Sprintf("k%d", (i+1)%32))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		ok(t, err)
	}
	for i := range 32 {
		if v, found := get(t, blobs, fmt.Sprintf("k%d", i)); !found || !bytes.Equal(v, value(i)) {
			t.Fatalf("k%d: %d bytes, found %v", i, len(v), found)
		}
	}
}
