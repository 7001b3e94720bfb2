package kv_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// testClock is a test's clock, safe to read from many goroutines.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// openManual opens a Manual store in a new directory, closed at the end of the test.
func openManual(t *testing.T) (*tinystore.Store, *testClock) {
	t.Helper()
	clock := &testClock{now: time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)}
	store, err := tinystore.Open(context.Background(), t.TempDir(), tinystore.Options{Manual: true, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store, clock
}

// openWithInt opens a Manual store (see openManual) and its bucket "b" of
// int64, in which key holds v.
func openWithInt(t *testing.T, key string, v int64) (*tinystore.Store, *testClock, *kv.Bucket[int64]) {
	t.Helper()
	store, clock := openManual(t)
	b := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "b"))
	ok(t, b.Set(ctx, key, v))
	return store, clock, b
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// isKind fails unless err is of kind want.
func isKind(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want an error of kind %v", err, want)
	}
}

// says fails unless err is of kind want and its text holds text, the
// core's words for it.
func says(t *testing.T, err, want error, text string) {
	t.Helper()
	isKind(t, err, want)
	if !strings.Contains(err.Error(), text) {
		t.Fatalf("got %v, want %q", err, text)
	}
}

// keyError fails unless err is a *kv.KeyError of kind want naming bucket and path.
func keyError(t *testing.T, err, want error, bucket, path string) {
	t.Helper()
	isKind(t, err, want)
	var ke *kv.KeyError
	if !errors.As(err, &ke) {
		t.Fatalf("got %T %v, want a *kv.KeyError", err, err)
	}
	if ke.Bucket != bucket || ke.Path != path {
		t.Fatalf("the error names bucket %q key %q, want %q %q (%v)", ke.Bucket, ke.Path, bucket, path, err)
	}
}

func get[T any](t *testing.T, b *kv.Bucket[T], key any) (T, bool) {
	t.Helper()
	v, found, err := b.Get(context.Background(), key)
	ok(t, err)
	return v, found
}

// holdWriter begins a transaction of store that holds its writer until
// release is closed, then runs then (when not nil) and commits. It returns
// once the transaction holds the writer; done answers its result.
func holdWriter(store *tinystore.Store, then func(tx *kv.Tx) error) (release chan struct{}, done chan error) {
	holding := make(chan struct{})
	release, done = make(chan struct{}), make(chan error, 1)
	go func() {
		done <- store.Tx(ctx, func(tx *kv.Tx) error {
			close(holding)
			<-release
			if then == nil {
				return nil
			}
			return then(tx)
		})
	}()
	<-holding
	return release, done
}
