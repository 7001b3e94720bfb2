package kv_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

var ctx = context.Background()

func TestKV01IntegerKeyIsItsDecimalText(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "keys"))
	ok(t, b.Set(ctx, 42, "int"))
	if v, found := get(t, b, "42"); !found || v != "int" {
		t.Fatalf(`"42" reads %q %v, want the value set under 42`, v, found)
	}
	ok(t, b.Under(int64(7)).Set(ctx, uint8(1), "owner"))
	if v, _ := get(t, b.Under("7"), []byte("1")); v != "owner" {
		t.Fatalf("owner 7 and key 1 read %q", v)
	}
}

func TestKV01BadKeysAreInvalidAndNameTheBucket(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "keys"))
	keyError(t, b.Set(ctx, "", "x"), tinystore.ErrInvalid, "keys", "")
	err := b.Set(ctx, 1.5, "x")
	isKind(t, err, tinystore.ErrInvalid)
	if !strings.Contains(err.Error(), "float64") || !strings.Contains(err.Error(), "keys") {
		t.Fatalf("the error %q names neither the type nor the bucket", err)
	}
	isKind(t, b.Under(struct{}{}).Set(ctx, "k", "x"), tinystore.ErrInvalid)
	long := strings.Repeat("k", 1100)
	keyError(t, b.Under("u").Set(ctx, long, "x"), tinystore.ErrInvalid, "keys", "u/"+long)
	page := must[kv.Page[string]](t)(b.List(ctx, kv.ListOptions{}))
	if len(page.Entries) != 0 {
		t.Fatalf("bad keys wrote %d entries", len(page.Entries))
	}
}

func TestKV01SplitsOfOwnersAndKeyNeverCollide(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "paths"))
	ok(t, b.Under("a", "b").Set(ctx, "c", "nested"))
	ok(t, b.Under("a/b").Set(ctx, "c", "slash"))
	ok(t, b.Under("a").Set(ctx, "b\x00c", "nul"))
	for _, c := range []struct {
		b    *kv.Bucket[string]
		key  string
		want string
	}{{b.Under("a", "b"), "c", "nested"}, {b.Under("a/b"), "c", "slash"}, {b.Under("a"), "b\x00c", "nul"}} {
		if v, _ := get(t, c.b, c.key); v != c.want {
			t.Fatalf("key %q reads %q, want %q", c.key, v, c.want)
		}
	}
	page := must[kv.Page[string]](t)(b.Under("a").List(ctx, kv.ListOptions{}))
	if len(page.Entries) != 1 || page.Entries[0].Key != "b\x00c" {
		t.Fatalf("the NUL key lists as %+v", page.Entries)
	}
}

func TestKV04SetGetHasDelete(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "basics"))
	if _, found := get(t, b, "missing"); found {
		t.Fatal("a missing key was found")
	}
	ok(t, b.Set(ctx, "k", 7))
	if v, found := get(t, b, "k"); !found || v != 7 {
		t.Fatalf("got %d %v", v, found)
	}
	if !must[bool](t)(b.Has(ctx, "k")) {
		t.Fatal("Has is false after Set")
	}
	if !must[bool](t)(b.Delete(ctx, "k")) {
		t.Fatal("Delete of a live key said it was absent")
	}
	if must[bool](t)(b.Delete(ctx, "k")) {
		t.Fatal("Delete of a missing key said it was there")
	}
	if must[bool](t)(b.Has(ctx, "k")) {
		t.Fatal("Has is true after Delete")
	}
}

func TestKV05OneOf64RacingTakersGetsTheValue(t *testing.T) {
	store, _ := openManual(t)
	codes := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "sign-in-codes", kv.TTL(15*time.Minute)))
	for round := range 3 {
		ok(t, codes.Set(ctx, "code", int64(round)))
		if n := racingTakes(t, codes, "code", 64, int64(round)); n != 1 {
			t.Fatalf("%d takers got the value, want exactly 1", n)
		}
	}
}

// racingTakes has n goroutines take key of codes at once, and says how
// many took it; each that did must have taken want.
func racingTakes(t *testing.T, codes *kv.Bucket[int64], key string, n int, want int64) int32 {
	t.Helper()
	var winners atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, found, err := codes.Take(ctx, key)
			if err != nil {
				t.Error(err)
			}
			if found {
				winners.Add(1)
				if v != want {
					t.Errorf("took %d, want %d", v, want)
				}
			}
		}()
	}
	wg.Wait()
	return winners.Load()
}

type session struct {
	UserID int64  `json:"userId"`
	Device string `json:"device"`
}

func TestKV05TakeOfAValueThatDoesNotDecodeIsCorruptAndLeavesIt(t *testing.T) {
	store, _ := openManual(t)
	raw := must[*kv.Bucket[kv.Raw]](t)(kv.OpenBucket[kv.Raw](store, "sessions"))
	ok(t, raw.Set(ctx, "bad-json", kv.Raw{Kind: kv.RawBytes, Bytes: []byte("{not json")}))
	ok(t, raw.Set(ctx, "big", kv.Raw{Kind: kv.RawInt, Int: 1000}))

	sessions := must[*kv.Bucket[session]](t)(kv.OpenBucket[session](store, "sessions"))
	_, found, err := sessions.Take(ctx, "bad-json")
	keyError(t, err, tinystore.ErrCorrupt, "sessions", "bad-json")
	if found || !must[bool](t)(raw.Has(ctx, "bad-json")) {
		t.Fatal("a take that did not decode removed the value")
	}
	small := must[*kv.Bucket[int8]](t)(kv.OpenBucket[int8](store, "sessions"))
	_, _, err = small.Take(ctx, "big")
	keyError(t, err, tinystore.ErrCorrupt, "sessions", "big")
	if !must[bool](t)(raw.Has(ctx, "big")) {
		t.Fatal("a take of an integer too large for int8 removed it")
	}
	// A row of another kind altogether is refused by the core.
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "sessions"))
	_, _, err = texts.Take(ctx, "big")
	keyError(t, err, tinystore.ErrCorrupt, "sessions", "big")
	if !must[bool](t)(raw.Has(ctx, "big")) {
		t.Fatal("a take of an integer as a string removed it")
	}
}

func TestKV06TTLIsGivenAtCreationAndKeptBySet(t *testing.T) {
	store, clock := openManual(t)
	codes := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "codes", kv.TTL(15*time.Minute)))
	ok(t, codes.Set(ctx, "a", 1))
	clock.Advance(10 * time.Minute)
	ok(t, codes.Set(ctx, "a", 2)) // keeps the expiry of the live key
	ok(t, codes.Set(ctx, "b", 1, kv.TTL(time.Hour)))
	clock.Advance(6 * time.Minute)
	if _, found := get(t, codes, "a"); found {
		t.Fatal("a later Set gave the key a new ttl")
	}
	for _, call := range []func() (bool, error){
		func() (bool, error) { return codes.Has(ctx, "a") },
		func() (bool, error) { _, f, err := codes.Take(ctx, "a"); return f, err },
		func() (bool, error) { return codes.Expire(ctx, "a", kv.TTL(time.Hour)) },
	} {
		if must[bool](t)(call()) {
			t.Fatal("an expired key is present to a call")
		}
	}
	keyError(t, codes.Set(ctx, "a", 3, kv.IfVersion(kv.Version{})), tinystore.ErrConflict, "codes", "a")
	if !must[bool](t)(codes.Create(ctx, "a", 4)) {
		t.Fatal("Create did not claim an expired key")
	}
	if _, found := get(t, codes, "b"); !found {
		t.Fatal("a call's own TTL did not replace the bucket's")
	}
	ok(t, codes.Set(ctx, "c", 1, kv.ExpireAt(clock.Now().Add(-time.Second))))
	if _, found := get(t, codes, "c"); found {
		t.Fatal("ExpireAt in the past left the key present")
	}
	_, err := kv.OpenBucket[int64](store, "both", kv.TTL(time.Minute), kv.Idle(time.Minute))
	isKind(t, err, tinystore.ErrInvalid)
	isKind(t, codes.Set(ctx, "d", 1, kv.TTL(-time.Minute)), tinystore.ErrInvalid)
	isKind(t, codes.Set(ctx, "d", 1, kv.TTL(time.Minute), kv.ExpireAt(clock.Now())), tinystore.ErrInvalid)
}

func TestKV06ExpireGivesANewExpiryAndKeepsTheVersion(t *testing.T) {
	store, clock := openManual(t)
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "touch", kv.TTL(time.Minute)))
	ok(t, b.Set(ctx, "k", "v"))
	before := must[kv.Entry[string]](t)(entry(b, "k"))
	if !must[bool](t)(b.Expire(ctx, "k", kv.TTL(time.Hour))) {
		t.Fatal("Expire of a live key said it was absent")
	}
	after := must[kv.Entry[string]](t)(entry(b, "k"))
	if after.Version != before.Version || !after.ExpiresAt.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("after Expire: version %v (was %v), expires %v", after.Version, before.Version, after.ExpiresAt)
	}
	_, err := b.Expire(ctx, "k")
	isKind(t, err, tinystore.ErrInvalid)
}

func entry[T any](b *kv.Bucket[T], key any) (kv.Entry[T], error) {
	e, found, err := b.Entry(ctx, key)
	if err == nil && !found {
		err = fmt.Errorf("key %v not found", key)
	}
	return e, err
}

func TestKV07IdleReadsRenewAndListsDoNot(t *testing.T) {
	store, clock := openManual(t)
	day := 24 * time.Hour
	sessions := must[*kv.Bucket[session]](t)(kv.OpenBucket[session](store, "sessions", kv.Idle(30*day)))
	ok(t, sessions.Under(7).Set(ctx, "read", session{UserID: 7, Device: "web"}))
	ok(t, sessions.Under(7).Set(ctx, "listed", session{UserID: 7, Device: "phone"}))
	clock.Advance(2 * day)
	if _, found := get(t, sessions.Under(7), "read"); !found {
		t.Fatal("a live session was not found")
	}
	for _, err := range sessions.Under(7).All(ctx) {
		ok(t, err)
	}
	m := must[tinystore.Maintenance](t)(store.Maintain(ctx))
	if m.Renewed != 1 {
		t.Fatalf("maintenance renewed %d keys, want 1", m.Renewed)
	}
	clock.Advance(29 * day)
	if _, found := get(t, sessions.Under(7), "read"); !found {
		t.Fatal("a session read 29 days ago expired")
	}
	if _, found := get(t, sessions.Under(7), "listed"); found {
		t.Fatal("a session only listed was renewed")
	}
}

func TestKV08ClearRemovesTheBranchAndNothingBeside(t *testing.T) {
	store, _ := openManual(t)
	sessions := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "sessions"))
	ok(t, sessions.Under("u1").Set(ctx, "a", "x"))
	ok(t, sessions.Under("u1", "phone").Set(ctx, "b", "x"))
	ok(t, sessions.Under("u10").Set(ctx, "a", "x"))
	ok(t, sessions.Set(ctx, "u1", "root key"))
	old := must[kv.Entry[string]](t)(entry(sessions.Under("u1"), "a"))
	ok(t, sessions.Under("u1").Clear(ctx))
	if _, found := get(t, sessions.Under("u1"), "a"); found {
		t.Fatal("Clear left the branch's key")
	}
	if _, found := get(t, sessions.Under("u1", "phone"), "b"); found {
		t.Fatal("Clear left a key of a branch under it")
	}
	if _, found := get(t, sessions.Under("u10"), "a"); !found {
		t.Fatal("Clear of u1 removed u10")
	}
	if _, found := get(t, sessions, "u1"); !found {
		t.Fatal("Clear of the branch u1 removed the key u1 beside it")
	}
	ok(t, sessions.Under("u1").Set(ctx, "a", "y"))
	if e := must[kv.Entry[string]](t)(entry(sessions.Under("u1"), "a")); e.Version == old.Version {
		t.Fatal("a key written after Clear has its old version")
	}
}

func TestKV09ListPagesLoseAndDoubleNothing(t *testing.T) {
	store, _ := openManual(t)
	b := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "many"))
	const n = 1234
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 64 {
				if err := b.Under("o").Set(ctx, fmt.Sprintf("k%05d", i), int64(i)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	ok(t, b.Set(ctx, "beside", 1))
	var seen []string
	after := ""
	for {
		page := must[kv.Page[int64]](t)(b.Under("o").List(ctx, kv.ListOptions{After: after, Limit: 500}))
		for _, e := range page.Entries {
			seen = append(seen, e.Key)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	var walked int
	for e, err := range b.Under("o").All(ctx) {
		ok(t, err)
		if e.Key != fmt.Sprintf("k%05d", walked) || e.Value != int64(walked) {
			t.Fatalf("All gave %q=%d at %d", e.Key, e.Value, walked)
		}
		walked++
	}
	if len(seen) != n || walked != n {
		t.Fatalf("pages gave %d keys and All %d, want %d", len(seen), walked, n)
	}
	for i, k := range seen {
		if k != fmt.Sprintf("k%05d", i) {
			t.Fatalf("key %d is %q: out of order, lost or doubled", i, k)
		}
	}
	_, err := b.List(ctx, kv.ListOptions{Limit: 1001})
	isKind(t, err, tinystore.ErrInvalid)
}

func TestKV10VersionsNeverRepeatAndGuardWrites(t *testing.T) {
	dir := t.TempDir()
	store := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, tinystore.Options{}))
	b := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "versions"))
	v1 := must[kv.Version](t)(b.SetVersion(ctx, "k", "one"))
	e := must[kv.Entry[string]](t)(entry(b, "k"))
	if e.Version != v1 || e.Value != "one" || !e.ExpiresAt.IsZero() {
		t.Fatalf("entry %+v, want version %v and no expiry", e, v1)
	}
	// Two writers holding the same version: exactly one wins.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := b.Set(ctx, "k", fmt.Sprint("writer", i), kv.IfVersion(v1))
			if err == nil {
				wins.Add(1)
			} else {
				keyError(t, err, tinystore.ErrConflict, "versions", "k")
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d writers at one version won, want 1", wins.Load())
	}
	_, err := b.Delete(ctx, "k", kv.IfVersion(v1))
	keyError(t, err, tinystore.ErrConflict, "versions", "k")
	_, err = b.Delete(ctx, "k")
	ok(t, err)
	ok(t, store.Close())

	store = must[*tinystore.Store](t)(tinystore.Open(ctx, dir, tinystore.Options{}))
	defer store.Close()
	b = must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "versions"))
	v2 := must[kv.Version](t)(b.SetVersion(ctx, "k", "again"))
	if v2 == v1 {
		t.Fatal("a version repeated after delete and reopen")
	}
	text := must[[]byte](t)(v2.MarshalText())
	var back kv.Version
	ok(t, back.UnmarshalText(text))
	if back != v2 {
		t.Fatalf("version %v came back from text as %v", v2, back)
	}
	if must[bool](t)(b.Create(ctx, "k", "other")) {
		t.Fatal("Create wrote over a live key")
	}
}
