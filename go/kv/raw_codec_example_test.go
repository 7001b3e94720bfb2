package kv_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// A bucket of kv.Raw reads any bucket as its rows keep it, whatever type
// (or language) wrote it, and writes rows the typed bucket reads back.
func ExampleRaw() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "raw")
	defer os.RemoveAll(dir)
	store, _ := tinystore.Open(ctx, dir, tinystore.Options{})
	defer store.Close()

	codes, _ := kv.OpenBucket[int64](store, "sign-in-codes")
	_ = codes.Set(ctx, "digest", 7)
	names, _ := kv.OpenBucket[string](store, "names")
	_ = names.Set(ctx, "nobody", "")

	rawCodes, _ := kv.OpenBucket[kv.Raw](store, "sign-in-codes")
	r, _, _ := rawCodes.Get(ctx, "digest")
	fmt.Println(r.Kind == kv.RawInt, r.Int)
	rawNames, _ := kv.OpenBucket[kv.Raw](store, "names")
	r, _, _ = rawNames.Get(ctx, "nobody")
	fmt.Println(r.Kind == kv.RawBytes, len(r.Bytes)) // an empty string is empty bytes

	_ = rawCodes.Set(ctx, "other", kv.Raw{Kind: kv.RawInt, Int: 8})
	id, _, _ := codes.Get(ctx, "other")
	fmt.Println(id)
	// Output:
	// true 7
	// true 0
	// 8
}

// upperText keeps a string upper-cased: a codec of two methods.
type upperText struct{}

func (upperText) Encode(v any) ([]byte, error) { return []byte(strings.ToUpper(v.(string))), nil }

func (upperText) Decode(data []byte, into any) error {
	*into.(*string) = strings.ToLower(string(data))
	return nil
}

// WithCodec gives a bucket its own encoding in place of the choice by type.
func ExampleWithCodec() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "codec")
	defer os.RemoveAll(dir)
	store, _ := tinystore.Open(ctx, dir, tinystore.Options{})
	defer store.Close()

	shouts, _ := kv.OpenBucket[string](store, "shouts", kv.WithCodec(upperText{}))
	_ = shouts.Set(ctx, "a", "hello")
	v, _, _ := shouts.Get(ctx, "a")
	raw, _ := kv.OpenBucket[kv.Raw](store, "shouts")
	r, _, _ := raw.Get(ctx, "a")
	fmt.Println(v, string(r.Bytes))
	// Output: hello HELLO
}
