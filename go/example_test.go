package tinystore_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// Open a store, a bucket on it, and close it when done.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "tinystore-example")
	defer os.RemoveAll(dir)

	store, err := tinystore.Open(ctx, dir, tinystore.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	codes, err := kv.OpenBucket[int64](store, "sign-in-codes", kv.TTL(15*time.Minute))
	if err != nil {
		panic(err)
	}
	_ = codes.Set(ctx, "5f2b", 42)
	userID, found, err := codes.Take(ctx, "5f2b")
	fmt.Println(userID, found, err)
	_, found, _ = codes.Take(ctx, "5f2b")
	fmt.Println(found)
	// Output:
	// 42 true <nil>
	// false
}

// Testing without waiting: a Manual store reads the test's clock, runs
// nothing in the background, and deletes expired rows when Maintain says.
func ExampleOptions_manual() {
	ctx := context.Background()
	now := time.Now()
	store, done := openExample(tinystore.Options{Manual: true, Clock: func() time.Time { return now }})
	defer done()
	codes, err := kv.OpenBucket[int64](store, "login-codes", kv.TTL(15*time.Minute))

	err = codes.Set(ctx, "code", 42)
	now = now.Add(16 * time.Minute)
	_, found, err := codes.Take(ctx, "code") // false: expired
	fmt.Println(found, err)
	m, err := store.Maintain(ctx) // writes counters and renewals, deletes what expired or was cleared
	fmt.Println(m.Expired, err)
	// Output:
	// false <nil>
	// 1 <nil>
}

// A transaction: a sign-in code is burnt and the session it opens is
// written together, or neither is.
func ExampleStore_Tx() {
	ctx := context.Background()
	store, done := openExample(tinystore.Options{})
	defer done()
	codes, _ := kv.OpenBucket[int64](store, "sign-in-codes", kv.TTL(15*time.Minute))
	sessions, _ := kv.OpenBucket[string](store, "sessions", kv.Idle(30*24*time.Hour))
	_ = codes.Set(ctx, "5f2b", 42)

	err := store.Tx(ctx, func(tx *kv.Tx) error {
		userID, found, err := codes.WithTx(tx).Take(ctx, "5f2b")
		if err != nil || !found {
			return err
		}
		return sessions.Under(userID).WithTx(tx).Set(ctx, "9c1e", "web")
	})
	fmt.Println(err)
	_ = store.View(ctx, func(v *kv.View) error {
		_, codeLeft, _ := codes.WithView(v).Get(ctx, "5f2b")
		device, _, _ := sessions.Under(42).WithView(v).Get(ctx, "9c1e")
		fmt.Println(codeLeft, device)
		return nil
	})
	// Output:
	// <nil>
	// false web
}

// openExample opens a store with opts in a new directory, for an example;
// done closes the store and removes the directory.
func openExample(opts tinystore.Options) (store *tinystore.Store, done func()) {
	dir, err := os.MkdirTemp("", "tinystore-example")
	if err != nil {
		panic(err)
	}
	if store, err = tinystore.Open(context.Background(), dir, opts); err != nil {
		panic(err)
	}
	return store, func() {
		_ = store.Close()
		_ = os.RemoveAll(dir)
	}
}
