package kv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/native"
	"tinyshed.org/tinystore/kv"
)

func TestKV15ACallerThatGaveUpBeforeItsWriteWritesNothing(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "cancel"))
	done, cancel := context.WithCancel(ctx)
	cancel()
	for name, call := range map[string]func() error{
		"Set":    func() error { return b.Set(done, "k", "v") },
		"Create": func() error { _, err := b.Create(done, "k", "v"); return err },
		"Get":    func() error { _, _, err := b.Get(done, "k"); return err },
		"Clear":  func() error { return b.Clear(done) },
	} {
		err := call()
		if !errors.Is(err, tinystore.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("%s with an ended context: %v, want ErrCancelled and context.Canceled", name, err)
		}
	}
	if _, found := get(t, b, "k"); found {
		t.Fatal("a cancelled write wrote")
	}
}

func TestKV15ConcurrentWritesAllLandWithACancellableContext(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "group"))
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Set(c, i, int64(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, err := range b.All(ctx) {
		ok(t, err)
		n++
	}
	if n != 64 {
		t.Fatalf("%d of 64 concurrent writes landed", n)
	}
}

func TestKV17ManualStoreExpiresWhenTheTestSays(t *testing.T) {
	store, clock := openManual(t)
	codes := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "login-codes", kv.TTL(15*time.Minute)))
	ok(t, codes.Set(ctx, "code", 42))
	clock.Advance(16 * time.Minute)
	if _, found, err := codes.Take(ctx, "code"); err != nil || found {
		t.Fatalf("an expired code was taken: %v %v", found, err)
	}
	m := must[tinystore.Maintenance](t)(store.Maintain(ctx))
	if m.Expired != 1 || m.More {
		t.Fatalf("Maintain: %+v, want one expired row deleted and none left", m)
	}
}

func TestKV17TheClockNeverMovesBack(t *testing.T) {
	store, clock := openManual(t)
	start := store.Now()
	if !start.Equal(clock.Now()) {
		t.Fatalf("the store's clock shows %v, the test's %v", start, clock.Now())
	}
	clock.Advance(-time.Hour)
	if !store.Now().Equal(start) {
		t.Fatalf("the clock moved back to %v", store.Now())
	}
	ok(t, store.Advance(2*time.Hour))
	if want := start.Add(2 * time.Hour); !store.Now().Equal(want) {
		t.Fatalf("after Advance the clock shows %v, want %v", store.Now(), want)
	}
	isKind(t, store.Advance(-time.Second), tinystore.ErrInvalid)
	plain := must[*tinystore.Store](t)(tinystore.Open(ctx, t.TempDir(), tinystore.Options{}))
	defer plain.Close()
	isKind(t, plain.Advance(time.Second), tinystore.ErrInvalid)
	_, err := tinystore.Open(ctx, t.TempDir(), tinystore.Options{Clock: time.Now})
	isKind(t, err, tinystore.ErrInvalid)
}

func TestKV18BadInputIsInvalidAndNamesWhatWasWrong(t *testing.T) {
	store, _ := openManual(t)
	for _, name := range []string{"", "Sessions", "-x", "a b", string(make([]byte, 65))} {
		_, err := kv.OpenBucket[string](store, name)
		isKind(t, err, tinystore.ErrInvalid)
	}
	_, err := kv.OpenBucket[string](store, "spans", kv.TTL(-time.Second))
	isKind(t, err, tinystore.ErrInvalid)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "spans"))
	ok(t, b.Set(ctx, "k", "v"))
	v := must[kv.Entry[string]](t)(entry(b, "k")).Version
	err = b.Under("u1").Set(ctx, "k", "w", kv.IfVersion(v))
	keyError(t, err, tinystore.ErrConflict, "spans", "u1/k")
	want := "tinystore: conflict: the key is absent, not at version " + v.String() + " (bucket spans, key u1/k)"
	if err.Error() != want {
		t.Fatalf("the error reads %q, want %q", err, want)
	}
	var te *tinystore.Error
	if !errors.As(err, &te) || te.Kind != tinystore.ErrConflict {
		t.Fatalf("a KeyError does not wrap a *tinystore.Error of its kind: %#v", err)
	}
	isKind(t, new(kv.Version).UnmarshalText([]byte("x")), tinystore.ErrInvalid)
	for _, text := range []string{"0", "-5"} {
		says(t, new(kv.Version).UnmarshalText([]byte(text)), tinystore.ErrInvalid, strconv.Quote(text)+" is not a version")
	}
}

func TestKV19ACallAfterCloseIsClosed(t *testing.T) {
	store := must[*tinystore.Store](t)(tinystore.Open(ctx, t.TempDir(), tinystore.Options{}))
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "after"))
	ok(t, b.Set(ctx, "k", "v"))
	ok(t, store.Close())
	ok(t, store.Close())
	_, _, err := b.Get(ctx, "k")
	isKind(t, err, tinystore.ErrClosed)
	isKind(t, b.Set(ctx, "k", "w"), tinystore.ErrClosed)
	_, err = kv.OpenBucket[string](store, "other")
	isKind(t, err, tinystore.ErrClosed)
	_, err = store.Maintain(ctx)
	says(t, err, tinystore.ErrClosed, "the store is closed")
}

func TestKV19AFileThatIsNotAStoreIsRefusedAndLeftUntouched(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "kv.db")
	junk := []byte("this is not a SQLite file, and it must stay exactly as it is.....")
	ok(t, os.WriteFile(file, junk, 0o600))
	_, err := tinystore.Open(ctx, dir, tinystore.Options{})
	if err == nil {
		t.Fatal("a file that is not SQLite opened")
	}
	if back := must[[]byte](t)(os.ReadFile(file)); string(back) != string(junk) {
		t.Fatal("opening changed a file that is not a store")
	}
}

func TestKV19TwoStoresOnOneFileSeeEachOthersCommits(t *testing.T) {
	dir := t.TempDir()
	one := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, tinystore.Options{}))
	defer one.Close()
	two := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, tinystore.Options{}))
	defer two.Close()
	a := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](one, "shared"))
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](two, "shared"))
	ok(t, a.Set(ctx, "k", "from one"))
	if v, _ := get(t, b, "k"); v != "from one" {
		t.Fatalf("the second store reads %q", v)
	}
}

func TestKV15ASetQueuedBehindATransactionWritesNothingOnceItsContextEnds(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "queued"))
	release, held := holdWriter(store, nil)
	// The transaction holds the writer: each Set waits in the writer's queue
	// when its context ends, and is answered once the writer comes to it.
	// Several, so that they wait both ways: the first in cgo, the others
	// on the queue of answers (a Set alone and Sets in flight together).
	const n = 4
	set := make(chan error, n)
	cancels := make([]context.CancelFunc, n)
	returned := make([]atomic.Bool, n)
	for i := range n {
		queued, cancel := context.WithCancel(ctx)
		defer cancel()
		cancels[i] = cancel
		go func() {
			err := b.Set(queued, strconv.Itoa(i), "v")
			returned[i].Store(true)
			set <- err
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); native.SetsInFlight() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s, %d of %d Sets had started", native.SetsInFlight(), n)
		}
		runtime.Gosched()
	}
	// A context's end reaches a queued write from a goroutine of its own:
	// one Set at a time, so that a cancel counted is that Set's, the
	// transaction lets go only once each Set was told, or gave up before it
	// reached the queue (and returned).
	for i := range n {
		before := native.CancelsFired()
		cancels[i]()
		for deadline := time.Now().Add(10 * time.Second); native.CancelsFired() == before && !returned[i].Load(); {
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s, Set %d was not told its context ended", i)
			}
			runtime.Gosched()
		}
	}
	close(release)
	ok(t, <-held)
	for range n {
		if err := <-set; !errors.Is(err, tinystore.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("a queued Set whose context ended: %v, want ErrCancelled and context.Canceled", err)
		}
	}
	for i := range n {
		if _, found := get(t, b, strconv.Itoa(i)); found {
			t.Fatal("a Set that gave up wrote")
		}
	}
	ok(t, b.Set(ctx, "k", "v")) // the writer goes on
}

func TestKV15SetsFromManyGoroutinesAnswerEachItsOwnVersion(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "versions"))
	versions := make([]kv.Version, 200)
	var wg sync.WaitGroup
	for i := range versions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := b.SetVersion(ctx, i, int64(i))
			if err != nil {
				t.Error(err)
			}
			versions[i] = v
		}()
	}
	wg.Wait()
	for i, v := range versions {
		e, found, err := b.Entry(ctx, i)
		if err != nil || !found || e.Value != int64(i) || e.Version != v {
			t.Fatalf("key %d: %+v found %v err %v, want value %d at the version its Set answered (%v)", i, e, found, err, i, v)
		}
	}
	ok(t, store.Close())
	isKind(t, b.Set(ctx, "late", 1), tinystore.ErrClosed)
}
