package main

import (
	"fmt"
	"slices"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// ixRawCopy copies owner's interchange rows from src to the store in dstDir
// through buckets of kv.Raw, as they are, so that another language's
// ix-read of dstDir checks bit for bit that a raw read and a raw write keep
// every kind of value (KV-3). Its summary line is the Rust agent's
// (tests/agents/rust/src/raw_copy.rs), which every language prints alike.
func ixRawCopy(src *tinystore.Store, dstDir, owner string) (bool, error) {
	items, err := fixture()
	if err != nil {
		return false, err
	}
	dst, err := tinystore.Open(ctx, dstDir, tinystore.Options{})
	if err != nil {
		return false, err
	}
	line, err := copyRaw(src, dst, items, owner)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	say("%s", line)
	return true, nil
}

// copyRaw copies the rows and answers the summary line.
func copyRaw(src, dst *tinystore.Store, items []item, owner string) (string, error) {
	var types []string
	for _, it := range items {
		types = append(types, it.Type)
	}
	slices.Sort(types)
	types = slices.Compact(types)
	var n, nulls, ints, blobs, empty, size int
	for _, ty := range types {
		from, err := kv.OpenBucket[kv.Raw](src, "ix-"+ty)
		if err != nil {
			return "", err
		}
		to, err := kv.OpenBucket[kv.Raw](dst, "ix-"+ty)
		if err != nil {
			return "", err
		}
		for e, err := range from.Under(owner).All(ctx) {
			if err != nil {
				return "", err
			}
			switch e.Value.Kind {
			case kv.RawNull:
				nulls++
			case kv.RawInt:
				ints++
			default:
				blobs++
				if len(e.Value.Bytes) == 0 {
					empty++
				}
				size += len(e.Value.Bytes)
			}
			if err := to.Under(owner).Set(ctx, e.Key, e.Value); err != nil {
				return "", err
			}
			n++
		}
	}
	return fmt.Sprintf("copied %d null=%d int=%d bytes=%d empty=%d size=%d", n, nulls, ints, blobs, empty, size), nil
}
