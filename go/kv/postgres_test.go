package kv_test

// A store in PostgreSQL, opened by its location: the same calls and
// answers as a store in a directory. Needs the server CI starts (make
// pg-start; make exports TINYSTORE_TEST_PG).

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

func postgresLocation(t *testing.T) string {
	t.Helper()
	server := os.Getenv("TINYSTORE_TEST_PG")
	if server == "" {
		t.Fatal("the PostgreSQL tests need a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then " +
			"`export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run them through make")
	}
	if strings.Contains(server, "?") {
		return server + "&schema=go_tests"
	}
	return server + "?schema=go_tests"
}

func TestKV5PostgresTakeRacedByGoroutinesHasOneWinner(t *testing.T) {
	ctx := context.Background()
	store, err := tinystore.Open(ctx, postgresLocation(t), tinystore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	codes := must[*kv.Bucket[int64]](t)(kv.OpenBucket[int64](store, "codes", kv.TTL(15*time.Minute)))
	ok(t, codes.Clear(ctx))
	ok(t, codes.Set(ctx, "c", 7))
	if won := racingTakes(t, codes, "c", 16, 7); won != 1 {
		t.Fatalf("%d goroutines took the key, not one", won)
	}
	hits, err := kv.OpenCounters(store, "hits")
	if err != nil {
		t.Fatalf("counters on PostgreSQL: %v", err)
	}
	if _, err := hits.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if n, err := hits.Add(ctx, "k", 1); err != nil || n != 1 {
		t.Fatalf("counters on PostgreSQL added to %d (%v), not 1", n, err)
	}
}
