package kv_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// roundTrip writes v to a bucket of T and reads it back, then reads the row
// as kv.Raw: what every other language reads.
func roundTrip[T any](t *testing.T, store *tinystore.Store, name string, v T) (T, kv.Raw) {
	t.Helper()
	b := must[*kv.Bucket[T]](t)(kv.OpenBucket[T](store, name))
	ok(t, b.Set(ctx, "k", v))
	back, found := get(t, b, "k")
	if !found {
		t.Fatalf("%s: the value was not found", name)
	}
	raw := must[*kv.Bucket[kv.Raw]](t)(kv.OpenBucket[kv.Raw](store, name))
	r, _ := get(t, raw, "k")
	return back, r
}

func be64(u uint64) []byte { return binary.BigEndian.AppendUint64(nil, u) }

type celsius float64

type profile struct {
	Name  string   `json:"name"`
	Roles []string `json:"roles"`
}

func TestKV03ValuesAreKeptByTheirType(t *testing.T) {
	store, _ := openManual(t)
	wantRaw := func(name string, got, want kv.Raw) {
		t.Helper()
		if got.Kind != want.Kind || got.Int != want.Int || !bytes.Equal(got.Bytes, want.Bytes) {
			t.Fatalf("%s is kept as %+v, want %+v", name, got, want)
		}
	}
	if v, r := roundTrip(t, store, "bytes", []byte{0, 1, 255}); !bytes.Equal(v, []byte{0, 1, 255}) {
		t.Fatalf("bytes came back as %v", v)
	} else {
		wantRaw("[]byte", r, kv.Raw{Kind: kv.RawBytes, Bytes: []byte{0, 1, 255}})
	}
	if v, r := roundTrip(t, store, "empty-string", ""); v != "" {
		t.Fatalf("the empty string came back as %q", v)
	} else {
		wantRaw("an empty string", r, kv.Raw{Kind: kv.RawBytes, Bytes: []byte{}})
	}
	if v, r := roundTrip(t, store, "int64", int64(math.MinInt64)); v != math.MinInt64 {
		t.Fatalf("int64 came back as %d", v)
	} else {
		wantRaw("int64", r, kv.Raw{Kind: kv.RawInt, Int: math.MinInt64})
	}
	if v, r := roundTrip(t, store, "uint32", uint32(math.MaxUint32)); v != math.MaxUint32 {
		t.Fatalf("uint32 came back as %d", v)
	} else {
		wantRaw("uint32", r, kv.Raw{Kind: kv.RawInt, Int: math.MaxUint32})
	}
	if v, r := roundTrip(t, store, "uint64", uint64(math.MaxUint64)); v != math.MaxUint64 {
		t.Fatalf("uint64 came back as %d", v)
	} else {
		wantRaw("uint64", r, kv.Raw{Kind: kv.RawBytes, Bytes: be64(math.MaxUint64)})
	}
	if v, r := roundTrip(t, store, "bool", true); !v {
		t.Fatal("true came back false")
	} else {
		wantRaw("bool", r, kv.Raw{Kind: kv.RawInt, Int: 1})
	}
	if _, r := roundTrip(t, store, "set", struct{}{}); r.Kind != kv.RawNull {
		t.Fatalf("struct{} is kept as %+v, want nothing", r)
	}
	if v, r := roundTrip(t, store, "profile", profile{Name: "ada", Roles: []string{"admin"}}); v.Name != "ada" || len(v.Roles) != 1 {
		t.Fatalf("a struct came back as %+v", v)
	} else {
		wantRaw("a struct", r, kv.Raw{Kind: kv.RawBytes, Bytes: []byte(`{"name":"ada","roles":["admin"]}`)})
	}
	if v, _ := roundTrip(t, store, "map", map[string]int{"a": 1}); v["a"] != 1 {
		t.Fatalf("a map came back as %v", v)
	}
}

func TestKV03FloatsComeBackBitForBit(t *testing.T) {
	store, _ := openManual(t)
	payloadNaN := math.Float64frombits(0x7ff8_0000_dead_beef)
	for i, f := range []float64{math.Copysign(0, -1), math.Inf(1), math.Inf(-1), payloadNaN, 0.1} {
		v, r := roundTrip(t, store, "floats"+string(rune('a'+i)), f)
		if math.Float64bits(v) != math.Float64bits(f) {
			t.Fatalf("%v came back with bits %x, want %x", f, math.Float64bits(v), math.Float64bits(f))
		}
		if r.Kind != kv.RawBytes || !bytes.Equal(r.Bytes, be64(math.Float64bits(f))) {
			t.Fatalf("%v is kept as %+v, want its 8 big-endian bits", f, r)
		}
	}
	v, _ := roundTrip(t, store, "named-float", celsius(-40))
	if v != -40 {
		t.Fatalf("a named float came back as %v", v)
	}
	signalling := math.Float32frombits(0x7fa0_0001)
	f32, r := roundTrip(t, store, "float32", signalling)
	if math.Float32bits(f32) != 0x7fa0_0001 {
		t.Fatalf("a signalling float32 NaN came back with bits %x", math.Float32bits(f32))
	}
	if r.Kind != kv.RawBytes || len(r.Bytes) != 4 {
		t.Fatalf("a float32 is kept as %+v, want its 4 bits as Rust keeps an f32", r)
	}
}

func TestKV03BadValuesWriteNothing(t *testing.T) {
	store, _ := openManual(t)
	anything := must[*kv.Bucket[any]](t)(kv.OpenBucket[any](store, "anything"))
	err := anything.Set(ctx, "k", math.NaN())
	keyError(t, err, tinystore.ErrInvalid, "anything", "k")
	if !strings.Contains(err.Error(), "JSON") {
		t.Fatalf("the error %q does not say JSON could not write the value", err)
	}
	keyError(t, anything.Set(ctx, "k", make(chan int)), tinystore.ErrInvalid, "anything", "k")
	blobs := must[*kv.Bucket[[]byte]](t)(kv.OpenBucket[[]byte](store, "blobs"))
	keyError(t, blobs.Set(ctx, "big", make([]byte, 1<<20+1)), tinystore.ErrLimit, "blobs", "big")
	ok(t, blobs.Set(ctx, "max", make([]byte, 1<<20)))
	for _, name := range []string{"anything", "blobs"} {
		raw := must[*kv.Bucket[kv.Raw]](t)(kv.OpenBucket[kv.Raw](store, name))
		for _, k := range []string{"k", "big"} {
			if _, found := get(t, raw, k); found {
				t.Fatalf("a refused value was written to %s/%s", name, k)
			}
		}
	}
}

func TestKV03ARowReadAsAnotherTypeIsCorrupt(t *testing.T) {
	store, _ := openManual(t)
	ints := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "mixed"))
	ok(t, ints.Under("u").Set(ctx, "n", 1000))
	for _, read := range []func() error{
		func() error {
			_, _, err := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "mixed")).Under("u").Get(ctx, "n")
			return err
		},
		func() error {
			_, _, err := must[*kv.Bucket[int8]](t)(kv.OpenBucket[int8](store, "mixed")).Under("u").Get(ctx, "n")
			return err
		},
		func() error {
			_, _, err := must[*kv.Bucket[profile]](t)(kv.OpenBucket[profile](store, "mixed")).Under("u").Get(ctx, "n")
			return err
		},
		func() error {
			_, err := must[*kv.Bucket[float64]](t)(kv.OpenBucket[float64](store, "mixed")).Under("u").List(ctx, kv.ListOptions{})
			return err
		},
	} {
		keyError(t, read(), tinystore.ErrCorrupt, "mixed", "u/n")
	}
}

func TestKV03ARowNotOfTheTypeSaysWhyInTheCoresText(t *testing.T) {
	store, _ := openManual(t)
	ok(t, must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "mixed")).Set(ctx, "n", 1000))
	_, _, err := must[*kv.Bucket[int8]](t)(kv.OpenBucket[int8](store, "mixed")).Get(ctx, "n")
	says(t, err, tinystore.ErrCorrupt, "corrupt: the row does not read as int8: 1000 is out of its range (bucket mixed, key n)")
	ok(t, must[*kv.Bucket[any]](t)(kv.OpenBucket[any](store, "mixed")).Set(ctx, "p", map[string]any{"name": 5}))
	_, _, err = must[*kv.Bucket[profile]](t)(kv.OpenBucket[profile](store, "mixed")).Get(ctx, "p")
	says(t, err, tinystore.ErrCorrupt, "corrupt: the row does not read as kv_test.profile: json: cannot unmarshal number ")
	keyError(t, err, tinystore.ErrCorrupt, "mixed", "p")
}

func TestKV03ARawMessageIsKeptAsTheJSONItHolds(t *testing.T) {
	store, _ := openManual(t)
	docs := must[*kv.Bucket[json.RawMessage]](t)(kv.OpenBucket[json.RawMessage](store, "profiles"))
	typed := must[*kv.Bucket[profile]](t)(kv.OpenBucket[profile](store, "profiles"))
	ok(t, docs.Set(ctx, "ada", json.RawMessage(`{ "name": "ada", "roles": ["admin"] }`)))
	if p, _ := get(t, typed, "ada"); p.Name != "ada" || len(p.Roles) != 1 {
		t.Fatalf("a RawMessage reads back as the struct %+v", p)
	}
	ok(t, typed.Set(ctx, "bob", profile{Name: "bob"}))
	if m, _ := get(t, docs, "bob"); string(m) != `{"name":"bob","roles":null}` {
		t.Fatalf("a struct reads back as the RawMessage %s", m)
	}
	keyError(t, docs.Set(ctx, "bad", json.RawMessage(`{"name":`)), tinystore.ErrInvalid, "profiles", "bad")
	if _, found := get(t, docs, "bad"); found {
		t.Fatal("JSON that does not parse was written")
	}
	text := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "profiles"))
	ok(t, text.Set(ctx, "text", "not json"))
	_, _, err := docs.Take(ctx, "text")
	keyError(t, err, tinystore.ErrCorrupt, "profiles", "text")
	if _, found := get(t, text, "text"); !found {
		t.Fatal("a row that is not JSON was taken as a RawMessage")
	}
}

func TestKV03WhatJSONCannotKeepIsTheCoresText(t *testing.T) {
	store, _ := openManual(t)
	docs := must[*kv.Bucket[any]](t)(kv.OpenBucket[any](store, "docs"))
	err := docs.Set(ctx, "k", make(chan int))
	keyError(t, err, tinystore.ErrInvalid, "docs", "k")
	says(t, err, tinystore.ErrInvalid,
		"the value cannot be written as JSON: it holds a value of type chan int, which JSON has no way to write (bucket docs, key k)")
	says(t, docs.Set(ctx, "k", math.NaN()), tinystore.ErrInvalid, "the value cannot be written as JSON: json: ")
	raw := must[*kv.Bucket[[]byte]](t)(kv.OpenBucket[[]byte](store, "docs"))
	ok(t, raw.Set(ctx, "k", []byte("{no")))
	_, _, err = docs.Entry(ctx, "k")
	says(t, err, tinystore.ErrCorrupt, "the row is not JSON: ")
	keyError(t, err, tinystore.ErrCorrupt, "docs", "k")
}
