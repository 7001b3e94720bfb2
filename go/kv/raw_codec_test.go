package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// rawSet writes a row as it is under name/key.
func rawSet(t *testing.T, store *tinystore.Store, name, key string, r kv.Raw) {
	t.Helper()
	raw := must[*kv.Bucket[kv.Raw]](t)(kv.OpenBucket[kv.Raw](store, name))
	ok(t, raw.Set(ctx, key, r))
}

func rawGet(t *testing.T, store *tinystore.Store, name, key string) (kv.Raw, bool) {
	t.Helper()
	return get(t, must[*kv.Bucket[kv.Raw]](t)(kv.OpenBucket[kv.Raw](store, name)), key)
}

func TestKV03RawRowsReadBackByTheTypedBucket(t *testing.T) {
	store, _ := openManual(t)
	rawSet(t, store, "ints", "a", kv.Raw{Kind: kv.RawInt, Int: 42})
	rawSet(t, store, "text", "a", kv.Raw{Kind: kv.RawBytes, Bytes: []byte("hi")})
	rawSet(t, store, "text", "empty", kv.Raw{Kind: kv.RawBytes, Bytes: []byte{}})
	rawSet(t, store, "flags", "a", kv.Raw{Kind: kv.RawInt, Int: 1})
	rawSet(t, store, "floats", "a", kv.Raw{Kind: kv.RawBytes, Bytes: be64(math.Float64bits(math.Inf(-1)))})
	rawSet(t, store, "big", "a", kv.Raw{Kind: kv.RawBytes, Bytes: be64(math.MaxUint64)})
	rawSet(t, store, "set", "a", kv.Raw{Kind: kv.RawNull})
	rawSet(t, store, "profiles", "a", kv.Raw{Kind: kv.RawBytes, Bytes: []byte(`{"name":"ada","roles":["admin"]}`)})

	if v, _ := get(t, must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "ints")), "a"); v != 42 {
		t.Fatalf("an int64 bucket reads the raw integer row as %d", v)
	}
	text := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "text"))
	if v, _ := get(t, text, "a"); v != "hi" {
		t.Fatalf("a string bucket reads the raw bytes as %q", v)
	}
	if v, found := get(t, text, "empty"); !found || v != "" {
		t.Fatalf("empty raw bytes read as %q, found %v; want the empty string", v, found)
	}
	if v, _ := get(t, must[*kv.Bucket[bool]](t)(kv.OpenBucket[bool](store, "flags")), "a"); !v {
		t.Fatal("a bool bucket reads the raw 1 as false")
	}
	if v, _ := get(t, must[*kv.Bucket[float64]](t)(kv.OpenBucket[float64](store, "floats")), "a"); !math.IsInf(v, -1) {
		t.Fatalf("a float64 bucket reads the raw bits as %v", v)
	}
	if v, _ := get(t, must[*kv.Bucket[uint64]](t)(kv.OpenBucket[uint64](store, "big")), "a"); v != math.MaxUint64 {
		t.Fatalf("a uint64 bucket reads the raw eight bytes as %d", v)
	}
	if _, found := get(t, must[*kv.Bucket[struct{}]](t)(kv.OpenBucket[struct{}](store, "set")), "a"); !found {
		t.Fatal("a set does not hold the raw member")
	}
	if v, _ := get(t, must[*kv.Bucket[profile]](t)(kv.OpenBucket[profile](store, "profiles")), "a"); v.Name != "ada" || len(v.Roles) != 1 {
		t.Fatalf("a struct bucket reads the raw JSON as %+v", v)
	}
}

func TestKV03RawReadsAnEmptyStringAsEmptyBytes(t *testing.T) {
	store, _ := openManual(t)
	text := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "text"))
	ok(t, text.Set(ctx, "empty", ""))
	r, found := rawGet(t, store, "text", "empty")
	if !found || r.Kind != kv.RawBytes || r.Bytes == nil || len(r.Bytes) != 0 {
		t.Fatalf("an empty string reads raw as %+v (found %v), want empty bytes", r, found)
	}
}

// pointText keeps a point as the text "x,y".
type pointText struct{}

type point struct{ X, Y int }

func (pointText) Encode(v any) ([]byte, error) {
	p := v.(point)
	if p.X == math.MinInt {
		return nil, errors.New("x is out of range")
	}
	return fmt.Appendf(nil, "%d,%d", p.X, p.Y), nil
}

func (pointText) Decode(data []byte, into any) error {
	if bytes.Equal(data, []byte("boom")) {
		panic("the codec broke")
	}
	p := into.(*point)
	if _, err := fmt.Sscanf(string(data), "%d,%d", &p.X, &p.Y); err != nil {
		return fmt.Errorf("not a point: %w", err)
	}
	return nil
}

func TestCodecReplacesTheChoiceByType(t *testing.T) {
	store, _ := openManual(t)
	points := must[*kv.Bucket[point]](t)(kv.OpenBucket[point](store, "points", kv.WithCodec(pointText{})))
	ok(t, points.Under("map").Set(ctx, "home", point{3, -4}))
	if p, found := get(t, points.Under("map"), "home"); !found || p != (point{3, -4}) {
		t.Fatalf("the codec read back %+v", p)
	}
	raw := must[*kv.Bucket[kv.Raw]](t)(kv.OpenBucket[kv.Raw](store, "points"))
	if r, _ := get(t, raw.Under("map"), "home"); r.Kind != kv.RawBytes || string(r.Bytes) != "3,-4" {
		t.Fatalf("the codec's row is %+v, want the bytes 3,-4", r)
	}
	err := points.Set(ctx, "far", point{math.MinInt, 0})
	keyError(t, err, tinystore.ErrInvalid, "points", "far")
	if !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("the error %q does not carry the codec's", err)
	}
	if _, found := rawGet(t, store, "points", "far"); found {
		t.Fatal("a value the codec refused was written")
	}
	ok(t, store.Tx(ctx, func(tx *kv.Tx) error {
		p, found, err := points.Under("map").WithTx(tx).Take(ctx, "home")
		if err != nil || !found || p != (point{3, -4}) {
			t.Fatalf("inside a transaction the codec took %+v, %v, %v", p, found, err)
		}
		return points.WithTx(tx).Set(ctx, "work", point{1, 2})
	}))
	if r, _ := rawGet(t, store, "points", "work"); string(r.Bytes) != "1,2" {
		t.Fatalf("inside a transaction the codec wrote %+v", r)
	}
}

func TestKV05ACodecThatCannotDecodeIsCorruptAndTakeKeepsTheValue(t *testing.T) {
	store, _ := openManual(t)
	points := must[*kv.Bucket[point]](t)(kv.OpenBucket[point](store, "points", kv.WithCodec(pointText{})))
	raw := must[*kv.Bucket[kv.Raw]](t)(kv.OpenBucket[kv.Raw](store, "points"))
	bad := kv.Raw{Kind: kv.RawBytes, Bytes: []byte("not a point")}
	ok(t, raw.Under("u").Set(ctx, "bad", bad))
	ok(t, raw.Set(ctx, "int", kv.Raw{Kind: kv.RawInt, Int: 5}))
	ok(t, raw.Set(ctx, "boom", kv.Raw{Kind: kv.RawBytes, Bytes: []byte("boom")}))

	_, _, err := points.Under("u").Get(ctx, "bad")
	keyError(t, err, tinystore.ErrCorrupt, "points", "u/bad")
	_, _, err = points.Under("u").Take(ctx, "bad")
	keyError(t, err, tinystore.ErrCorrupt, "points", "u/bad")
	if r, found := get(t, raw.Under("u"), "bad"); !found || !bytes.Equal(r.Bytes, bad.Bytes) {
		t.Fatalf("the take of a value the codec refused removed it: %+v, %v", r, found)
	}
	_, _, err = points.Take(ctx, "int")
	keyError(t, err, tinystore.ErrCorrupt, "points", "int")
	if _, found := get(t, raw, "int"); !found {
		t.Fatal("the take of an integer row through a codec removed it")
	}
	_, _, err = points.Take(ctx, "boom")
	keyError(t, err, tinystore.ErrCorrupt, "points", "boom")
	if _, found := get(t, raw, "boom"); !found {
		t.Fatal("the take of a value whose decode panicked removed it")
	}
	// Inside a transaction as well, and the transaction still commits.
	ok(t, store.Tx(ctx, func(tx *kv.Tx) error {
		_, _, err := points.Under("u").WithTx(tx).Take(ctx, "bad")
		keyError(t, err, tinystore.ErrCorrupt, "points", "u/bad")
		return points.WithTx(tx).Set(ctx, "ok", point{})
	}))
	if _, found := get(t, raw.Under("u"), "bad"); !found {
		t.Fatal("the take inside a transaction removed a value the codec refused")
	}
	if _, found := get(t, points, "ok"); !found {
		t.Fatal("the transaction did not commit")
	}
}
