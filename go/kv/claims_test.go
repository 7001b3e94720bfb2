package kv_test

// KV-10 claims: CreateEntry answers the entry it wrote or found, and
// SetVersion the version it wrote, on the store and in a transaction; the
// version answered is the one IfVersion takes.

import (
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

type claim struct {
	Worker string `json:"worker"`
}

func TestKV10CreateEntryAnswersTheEntryWrittenThenTheOneFound(t *testing.T) {
	store, clock := openManual(t)
	seen := must[*kv.Bucket[claim]](t)(kv.OpenBucket[claim](store, "events"))
	first, written, err := seen.CreateEntry(ctx, "evt", claim{"a"}, kv.TTL(10*time.Minute))
	ok(t, err)
	want := kv.Entry[claim]{Key: "evt", Value: claim{"a"}, Version: first.Version, ExpiresAt: clock.Now().Add(10 * time.Minute)}
	if !written || !first.ExpiresAt.Equal(want.ExpiresAt) || first.Key != want.Key || first.Value != want.Value || first.Version.IsZero() {
		t.Fatalf("first CreateEntry: %+v written %v, want %+v written", first, written, want)
	}
	read := must[kv.Entry[claim]](t)(entry(seen, "evt"))
	if read.Version != first.Version || !read.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("entry %+v, want the one CreateEntry answered %+v", read, first)
	}

	again, written, err := seen.CreateEntry(ctx, "evt", claim{"b"}, kv.TTL(time.Hour))
	ok(t, err)
	if written || again.Value != (claim{"a"}) || again.Version != first.Version || !again.ExpiresAt.Equal(first.ExpiresAt) || again.Key != "evt" {
		t.Fatalf("second CreateEntry: %+v written %v, want the live entry %+v", again, written, first)
	}

	kept := must[kv.Version](t)(seen.SetVersion(ctx, "evt", claim{"a"}, kv.IfVersion(first.Version), kv.TTL(7*24*time.Hour)))
	keyError(t, seen.Set(ctx, "evt", claim{"b"}, kv.IfVersion(first.Version)), tinystore.ErrConflict, "events", "evt")
	if e := must[kv.Entry[claim]](t)(entry(seen, "evt")); e.Version != kept || e.Value != (claim{"a"}) {
		t.Fatalf("entry %+v, want version %v of the set bound to the claim", e, kept)
	}
}

func TestKV10CreateEntryClaimsAnExpiredKey(t *testing.T) {
	store, clock := openManual(t)
	seen := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "events"))
	old, _, err := seen.CreateEntry(ctx, "evt", 1, kv.TTL(time.Minute))
	ok(t, err)
	clock.Advance(2 * time.Minute)
	fresh, written, err := seen.CreateEntry(ctx, "evt", 2)
	ok(t, err)
	if !written || fresh.Value != 2 || !fresh.ExpiresAt.IsZero() || fresh.Version == old.Version {
		t.Fatalf("CreateEntry of an expired key: %+v written %v (the old claim %+v)", fresh, written, old)
	}
}

func TestKV10CreateEntryInsideATransaction(t *testing.T) {
	store, clock := openManual(t)
	seen := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "events"))
	ok(t, seen.Set(ctx, "evt", "a"))
	var version kv.Version
	err := store.Tx(ctx, func(tx *kv.Tx) error {
		in := seen.WithTx(tx)
		found, written, err := in.CreateEntry(ctx, "evt", "b")
		if err != nil || written || found.Value != "a" {
			t.Errorf("CreateEntry of a live key in a Tx: %+v written %v err %v", found, written, err)
		}
		made, written, err := in.CreateEntry(ctx, "new", "c", kv.TTL(time.Hour))
		if err != nil || !written || made.Value != "c" || !made.ExpiresAt.Equal(clock.Now().Add(time.Hour)) {
			t.Errorf("CreateEntry of a new key in a Tx: %+v written %v err %v", made, written, err)
		}
		version, err = in.SetVersion(ctx, "new", "d", kv.IfVersion(made.Version))
		return err
	})
	ok(t, err)
	if e := must[kv.Entry[string]](t)(entry(seen, "new")); e.Value != "d" || e.Version != version {
		t.Fatalf("after the Tx: %+v, want d at %v", e, version)
	}
}

func TestKV10CreateEntryOfARawBucketAnswersTheRowFound(t *testing.T) {
	store, _ := openManual(t)
	ints := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "codes"))
	ok(t, ints.Set(ctx, "k", 7))
	raw := must[*kv.Bucket[kv.Raw]](t)(kv.OpenBucket[kv.Raw](store, "codes"))
	found, written, err := raw.CreateEntry(ctx, "k", kv.Raw{Kind: kv.RawInt, Int: 8})
	ok(t, err)
	if written || found.Value.Kind != kv.RawInt || found.Value.Int != 7 {
		t.Fatalf("CreateEntry on a Raw bucket: %+v written %v, want the row holding 7", found, written)
	}
}
