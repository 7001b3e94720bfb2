package kv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// writerChildEnv makes the test binary a second process that opens the
// store in the directory it names, writes one key and exits.
const writerChildEnv = "TINYSTORE_KV_WRITER_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(writerChildEnv); dir != "" {
		os.Exit(writerChild(dir))
	}
	os.Exit(m.Run())
}

func writerChild(dir string) int {
	ctx := context.Background()
	store, err := tinystore.Open(ctx, dir, tinystore.Options{})
	if err == nil {
		var b *kv.Bucket[int64]
		if b, err = kv.OpenBucket[int64](store, "from-child"); err == nil {
			err = b.Set(ctx, "k", 7)
		}
		err = errors.Join(err, store.Close())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

// anotherProcessWrites runs a second process that writes the store in dir:
// it would fail with "database is locked" if this one still held the lock.
func anotherProcessWrites(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), writerChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("the other process could not write: %v\n%s", err, out)
	}
}

// stillWrites checks that the store writes, plainly and in a transaction,
// and that another process writes it too.
func stillWrites(t *testing.T, store *tinystore.Store, dir string) {
	t.Helper()
	after := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "after"))
	ok(t, after.Set(ctx, "plain", 3))
	ok(t, store.Tx(ctx, func(tx *kv.Tx) error { return after.WithTx(tx).Set(ctx, "in-tx", 4) }))
	if v, _ := get(t, after, "in-tx"); v != 4 {
		t.Fatalf("the transaction after wrote %d", v)
	}
	anotherProcessWrites(t, dir)
	child := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "from-child"))
	if v, _ := get(t, child, "k"); v != 7 {
		t.Fatalf("the other process's write reads %d", v)
	}
}

// openInDir opens a store in a new directory and gives the directory too.
func openInDir(t *testing.T) (*tinystore.Store, string) {
	t.Helper()
	dir := t.TempDir()
	store, err := tinystore.Open(context.Background(), dir, tinystore.Options{})
	ok(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store, dir
}

type boom struct{}

func TestKV16APanicInTxRollsBackGoesOnAndTheStoreKeepsWriting(t *testing.T) {
	store, dir := openInDir(t)
	b := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "b"))
	ok(t, b.Set(ctx, "kept", 1))
	func() {
		defer func() {
			if p := recover(); p != (boom{}) {
				t.Fatalf("the panic reached the caller as %v", p)
			}
		}()
		_ = store.Tx(ctx, func(tx *kv.Tx) error {
			ok(t, b.WithTx(tx).Set(ctx, "inside", 2))
			_, err := b.WithTx(tx).Delete(ctx, "kept")
			ok(t, err)
			panic(boom{})
		})
	}()
	if _, found := get(t, b, "inside"); found {
		t.Fatal("the panicked transaction's write stayed")
	}
	if v, _ := get(t, b, "kept"); v != 1 {
		t.Fatal("the panicked transaction's delete stayed")
	}
	stillWrites(t, store, dir)
}

func TestKV16APanicInOnceRunKeepsNothingAndTheStoreKeepsWriting(t *testing.T) {
	store, dir := openInDir(t)
	sends := must[*kv.Once[string]](t)(kv.OpenOnce[string](store, "sends"))
	func() {
		defer func() {
			if p := recover(); p != (boom{}) {
				t.Fatalf("the panic reached the caller as %v", p)
			}
		}()
		_, _ = sends.Run(ctx, "m-1", func(context.Context) (string, error) { panic(boom{}) })
	}()
	if _, found, err := sends.Get(ctx, "m-1"); err != nil || found {
		t.Fatalf("a panicked run kept an answer: %v %v", found, err)
	}
	v, err := sends.Run(ctx, "m-1", func(context.Context) (string, error) { return "sent", nil })
	if err != nil || v != "sent" {
		t.Fatalf("the key did not run again: %q %v", v, err)
	}
	stillWrites(t, store, dir)
}

// panicCodec panics encoding and decoding.
type panicCodec struct{}

func (panicCodec) Encode(any) ([]byte, error) { panic(boom{}) }
func (panicCodec) Decode([]byte, any) error   { panic(boom{}) }

func TestKV16APanickingCodecInsideTxRollsBackAndTheStoreKeepsWriting(t *testing.T) {
	store, dir := openInDir(t)
	plain := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "plain"))
	coded := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "coded", kv.WithCodec(panicCodec{})))
	err := store.Tx(ctx, func(tx *kv.Tx) error {
		ok(t, plain.WithTx(tx).Set(ctx, "inside", 1))
		return coded.WithTx(tx).Set(ctx, "k", "v")
	})
	isKind(t, err, tinystore.ErrInvalid)
	if _, found := get(t, plain, "inside"); found {
		t.Fatal("the transaction's write stayed after the codec's panic")
	}
	stillWrites(t, store, dir)
}
